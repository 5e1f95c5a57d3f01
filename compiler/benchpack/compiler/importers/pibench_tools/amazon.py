"""Amazon for imported π-Bench app tasks: benchpack's own stateful shop (not AppWorld's code),
with the operations the tasks name (search, cart). Tables `products` and `cart`. The release
holds no catalogue: the importer seeds the products a task names, with what the task says
about them (other fields null)."""

from benchpack_tools import State, ToolError


def search_products(db: State, query: str = "") -> list:
    """Search the catalogue by words in a product's name.

    Args:
        query: Text to look for (empty: every product).
    """
    words = query.lower().split()
    return [p for p in db.rows("products") if all(w in p["name"].lower() for w in words)]


def add_product_to_cart(db: State, product_id: str, quantity: int = 1) -> dict:
    """Add a product to the cart.

    Args:
        product_id: The product's id.
        quantity: How many.
    """
    if quantity < 1:
        raise ToolError("quantity must be at least 1.")
    if not db.find("products", product_id=product_id):
        raise ToolError(f"Product with id {product_id} does not exist.")
    item = (db.find("cart", product_id=product_id) or [{"product_id": product_id,
                                                       "quantity": 0}])[0]
    item["quantity"] += quantity
    db.put("cart", item)
    return {"message": "Product added to cart."}


def show_cart(db: State) -> dict:
    """The cart's items."""
    return {"cart_items": db.rows("cart")}


def login(db: State, username: str, password: str) -> dict:
    """Log in to the app (tasks give the credentials). There are no accounts to check them
    against: the release holds none, so any credentials are accepted.

    Args:
        username: The account's email or phone number.
        password: Its password.
    """
    return {"message": "Logged in.", "username": username}
