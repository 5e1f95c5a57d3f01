"""τ²-bench retail tools, written for benchpack to behave as τ²'s do; copied into every pack
`bench import tau2` writes for the retail domain. Tables: products, users, orders (τ²'s rows).

What "behave as τ²'s do" means here (the conventions of tau2_tools, checked call by call
against τ²'s own code by `bench parity tau2`): each function returns the exact text τ²'s tool
message holds (`Tau2.text`: a row as τ² dumps a model); it raises an exception whose text is
τ²'s message, after the same checks in the same order, and Python's own errors for wrong
argument types arise from the same operations on the same values; rows are written (`db.put`)
where τ² changes its objects, so that with `atomic: false` a call that fails halfway keeps
what τ² keeps; the arithmetic is τ²'s, including two results we think wrong, kept because
τ²'s scores depend on them (both switchable with `bench import tau2 --fix`, which labels the
pack not comparable):
- `payment-rounding`: `modify_pending_order_items` pays the unrounded price difference (a
  float sum such as 94.54999999999995) and only then rounds the gift card balance;
- `item-prices`: it gives every changed item the price and options of the last new item.
Lookups only lower-case (τ² does not strip spaces or accents). Function names are qualified as
τ²'s methods (`RetailTools.<tool>`), so Python's errors for missing or unexpected arguments read
the same.
"""

import json

from benchpack_tools import State

# ---- prelude (tau2_tools/prelude.py; `bench import tau2` inlines it here) ----
from benchpack.compiler.importers.tau2_tools.prelude import Model, Tau2

# ---- end of prelude ----

FIXES = frozenset()
"""Differences from τ² switched on by `bench import tau2 --fix` (see the module docstring)."""
_CALC_CHARS = "0123456789+-*/(). "
_REASONS = {"no longer needed", "ordered by mistake"}


# ---- lookups, as τ²'s private helpers word them ----

def _order(db: State, order_id):
    return Tau2.row(db, "orders", order_id, "Order not found")


def _user(db: State, user_id):
    return Tau2.row(db, "users", user_id, "User not found")


def _product(db: State, product_id):
    return Tau2.row(db, "products", product_id, "Product not found")


def _variant(db: State, product_id, variant_id):
    product = _product(db, product_id)
    if variant_id not in product["variants"]:
        raise ValueError("Variant not found")
    return product["variants"][variant_id]


def _payment_method(db: State, user_id, payment_method_id):
    """(the user's row, its payment method): change the method, then put the user."""
    user = _user(db, user_id)
    if payment_method_id not in user["payment_methods"]:
        raise ValueError("Payment method not found")
    return user, user["payment_methods"][payment_method_id]


def _address(address1, address2, city, state, country, zip):
    """A UserAddress as τ²'s model builds it (fields in the model's order, checked)."""
    fields = [("address1", address1), ("address2", address2), ("city", city),
              ("country", country), ("state", state), ("zip", zip)]
    Tau2.strings("UserAddress", fields)
    return dict(fields)


def _payment(kind, amount, payment_method_id):
    """An OrderPayment: its amount field makes a float of an int."""
    return {"transaction_type": kind, "amount": float(amount),
            "payment_method_id": payment_method_id}


def _check_counts(order, item_ids, message):
    all_item_ids = [item["item_id"] for item in order["items"]]
    for item_id in item_ids:
        if item_ids.count(item_id) > all_item_ids.count(item_id):
            raise ValueError(message.format(item_id=item_id))


# ---- tools, in τ²'s order ----

def calculate(expression: str) -> str:
    """Evaluate an arithmetic expression and round the result to two decimals.

    Args:
        expression: Numbers, + - * /, parentheses and spaces only, such as '(12.5 + 3) * 2'.
    """
    if not all(char in _CALC_CHARS for char in expression):
        raise ValueError("Invalid characters in expression")
    return str(round(float(eval(expression, {"__builtins__": None}, {})), 2))


def cancel_pending_order(db: State, order_id: str, reason: str) -> str:
    """Cancel a pending order and refund every payment (a gift card at once, other methods in
    5 to 7 business days). Give the details and get the user's explicit yes first.

    Args:
        order_id: The order id with its '#', such as '#W0000000'.
        reason: 'no longer needed' or 'ordered by mistake'.
    """
    order = _order(db, order_id)
    if order["status"] != "pending":
        raise ValueError("Non-pending order cannot be cancelled")
    if reason not in _REASONS:
        raise ValueError("Invalid reason")
    refunds = []
    for payment in order["payment_history"]:
        payment_id = payment["payment_method_id"]
        refunds.append(_payment("refund", payment["amount"], payment_id))
        user = _user(db, order["user_id"])
        user, method = _payment_method(db, user["user_id"], payment_id)
        if method["source"] == "gift_card":  # refunded at once
            method["balance"] += payment["amount"]
            method["balance"] = round(method["balance"], 2)
            db.put("users", user)
    order["status"] = "cancelled"
    order["cancel_reason"] = reason
    order["payment_history"].extend(refunds)
    db.put("orders", order)
    return Tau2.text(Model(order))


def exchange_delivered_order_items(db: State, order_id: str, item_ids: list[str],
                                   new_item_ids: list[str], payment_method_id: str) -> str:
    """Ask to exchange items of a delivered order for other variants of the same products (one
    exchange or return per order). Give the details and get the user's explicit yes first.

    Args:
        order_id: The order id with its '#', such as '#W0000000'.
        item_ids: The item ids to exchange (an item may appear more than once).
        new_item_ids: The new item ids, position by position, each of the same product.
        payment_method_id: Pays or receives the price difference, such as 'gift_card_0000000'.
    """
    order = _order(db, order_id)
    if order["status"] != "delivered":
        raise ValueError("Non-delivered order cannot be exchanged")
    _check_counts(order, item_ids, "Number of {item_id} not found.")
    if len(item_ids) != len(new_item_ids):
        raise ValueError("The number of items to be exchanged should match.")
    diff_price = 0
    for item_id, new_item_id in zip(item_ids, new_item_ids):  # noqa: B905 (τ² does not check)
        item = next((item for item in order["items"] if item["item_id"] == item_id), None)
        if item is None:
            raise ValueError(f"Item {item_id} not found")
        variant = _variant(db, item["product_id"], new_item_id)
        if not variant["available"]:
            raise ValueError(f"New item {new_item_id} not found or available")
        diff_price += variant["price"] - item["price"]
    diff_price = round(diff_price, 2)
    _, method = _payment_method(db, order["user_id"], payment_method_id)
    if method["source"] == "gift_card" and method["balance"] < diff_price:
        raise ValueError("Insufficient gift card balance to pay for the price difference")
    order["status"] = "exchange requested"
    order["exchange_items"] = sorted(item_ids)
    order["exchange_new_items"] = sorted(new_item_ids)
    order["exchange_payment_method_id"] = payment_method_id
    order["exchange_price_difference"] = diff_price
    db.put("orders", order)
    return Tau2.text(Model(order))


def find_user_id_by_name_zip(db: State, first_name: str, last_name: str, zip: str) -> str:
    """The user id of the user with this first name, last name and zip code (names in any
    letter case). Look the user up by email first; use this when that fails.

    Args:
        first_name: The first name, such as 'John'.
        last_name: The last name, such as 'Doe'.
        zip: The zip code, such as '12345'.
    """
    for user in db.rows("users"):
        if (user["name"]["first_name"].lower() == first_name.lower()
                and user["name"]["last_name"].lower() == last_name.lower()
                and user["address"]["zip"] == zip):
            return Tau2.text(user["user_id"])
    raise ValueError("User not found")


def find_user_id_by_email(db: State, email: str) -> str:
    """The user id of the user with this email (in any letter case).

    Args:
        email: The email, such as 'someone@example.com'.
    """
    for user in db.rows("users"):
        if user["email"].lower() == email.lower():
            return Tau2.text(user["user_id"])
    raise ValueError("User not found")


def get_order_details(db: State, order_id: str) -> str:
    """An order's status, items, address, fulfillments and payments.

    Args:
        order_id: The order id with its '#', such as '#W0000000'.
    """
    return Tau2.text(Model(_order(db, order_id)))


def get_product_details(db: State, product_id: str) -> str:
    """A product and all its variants (the items, with options, price and availability).

    Args:
        product_id: The product id, such as '6086499569' (not an item id).
    """
    return Tau2.text(Model(_product(db, product_id)))


def get_item_details(db: State, item_id: str) -> str:
    """One item (a variant of a product): options, price and availability.

    Args:
        item_id: The item id, such as '1008292230' (not a product id).
    """
    for product in db.rows("products"):
        if item_id in product["variants"]:
            return Tau2.text(Model(product["variants"][item_id]))
    raise ValueError("Item not found")


def get_user_details(db: State, user_id: str) -> str:
    """A user's name, address, email, payment methods and order ids.

    Args:
        user_id: The user id, such as 'sara_doe_496'.
    """
    return Tau2.text(Model(_user(db, user_id)))


def list_all_product_types(db: State) -> str:
    """Every product type's name and product id, as a JSON object sorted by name."""
    products = {p["name"]: p["product_id"] for p in db.rows("products")}
    return Tau2.text(json.dumps(products, sort_keys=True))


def modify_pending_order_address(db: State, order_id: str, address1: str, address2: str,
                                 city: str, state: str, country: str, zip: str) -> str:
    """Change the shipping address of a pending order. Give the details and get the user's
    explicit yes first.

    Args:
        order_id: The order id with its '#', such as '#W0000000'.
        address1: The first address line, such as '123 Main St'.
        address2: The second address line, such as 'Apt 1' or ''.
        city: The city, such as 'San Francisco'.
        state: The state, such as 'CA'.
        country: The country, such as 'USA'.
        zip: The zip code, such as '12345'.
    """
    order = _order(db, order_id)
    if "pending" not in order["status"]:
        raise ValueError("Non-pending order cannot be modified")
    order["address"] = _address(address1, address2, city, state, country, zip)
    db.put("orders", order)
    return Tau2.text(Model(order))


def modify_pending_order_items(db: State, order_id: str, item_ids: list[str],
                               new_item_ids: list[str], payment_method_id: str) -> str:
    """Change items of a pending order to other variants of the same products (once per
    order). Give the details and get the user's explicit yes first.

    Args:
        order_id: The order id with its '#', such as '#W0000000'.
        item_ids: The item ids to change (an item may appear more than once).
        new_item_ids: The new item ids, position by position, each of the same product.
        payment_method_id: Pays or receives the price difference, such as 'gift_card_0000000'.
    """
    order = _order(db, order_id)
    if order["status"] != "pending":
        raise ValueError("Non-pending order cannot be modified")
    _check_counts(order, item_ids, "{item_id} not found")
    if len(item_ids) != len(new_item_ids):
        raise ValueError("The number of items to be exchanged should match")
    diff_price = 0
    variants = []
    for item_id, new_item_id in zip(item_ids, new_item_ids):  # noqa: B905 (τ² does not check)
        if item_id == new_item_id:
            raise ValueError("The new item id should be different from the old item id")
        item = next((item for item in order["items"] if item["item_id"] == item_id), None)
        if item is None:
            raise ValueError(f"Item {item_id} not found")
        variant = _variant(db, item["product_id"], new_item_id)
        if not variant["available"]:
            raise ValueError(f"New item {new_item_id} not found or available")
        diff_price += variant["price"] - item["price"]
        variants.append(variant)
    if "payment-rounding" in FIXES:
        diff_price = round(diff_price, 2)
    user, method = _payment_method(db, order["user_id"], payment_method_id)
    if method["source"] == "gift_card" and method["balance"] < diff_price:
        raise ValueError("Insufficient gift card balance to pay for the new item")
    order["payment_history"].append(_payment("payment" if diff_price > 0 else "refund",
                                             abs(diff_price), payment_method_id))
    db.put("orders", order)
    if method["source"] == "gift_card":
        method["balance"] -= diff_price
        method["balance"] = round(method["balance"], 2)
        db.put("users", user)
    for i, (item_id, new_item_id) in enumerate(zip(item_ids, new_item_ids)):  # noqa: B905
        item = next((item for item in order["items"] if item["item_id"] == item_id), None)
        if item is None:
            raise ValueError(f"Item {item_id} not found")
        # τ²: the variant of the loop above, i.e. the last new item's (see `item-prices`)
        own = variants[i] if "item-prices" in FIXES else variant
        item["item_id"] = new_item_id
        item["price"] = own["price"]
        item["options"] = own["options"]
        db.put("orders", order)
    order["status"] = "pending (item modified)"
    db.put("orders", order)
    return Tau2.text(Model(order))


def modify_pending_order_payment(db: State, order_id: str, payment_method_id: str) -> str:
    """Pay a pending order with another payment method: the new one is charged and the old one
    refunded. Give the details and get the user's explicit yes first.

    Args:
        order_id: The order id with its '#', such as '#W0000000'.
        payment_method_id: The new payment method, such as 'credit_card_0000000'.
    """
    order = _order(db, order_id)
    if "pending" not in order["status"]:
        raise ValueError("Non-pending order cannot be modified")
    user, method = _payment_method(db, order["user_id"], payment_method_id)
    history = order["payment_history"]
    if len(history) != 1 or history[0]["transaction_type"] != "payment":
        raise ValueError("There should be exactly one payment for a pending order")
    if history[0]["payment_method_id"] == payment_method_id:
        raise ValueError("The new payment method should be different from the current one")
    amount = history[0]["amount"]
    if method["source"] == "gift_card" and method["balance"] < amount:
        raise ValueError("Insufficient gift card balance to pay for the order")
    history.extend([_payment("payment", amount, payment_method_id),
                    _payment("refund", amount, history[0]["payment_method_id"])])
    db.put("orders", order)
    if method["source"] == "gift_card":
        method["balance"] -= amount
        method["balance"] = round(method["balance"], 2)
        db.put("users", user)
    user, old = _payment_method(db, order["user_id"], history[0]["payment_method_id"])
    if old["source"] == "gift_card":
        old["balance"] += amount
        old["balance"] = round(old["balance"], 2)
        db.put("users", user)
    return Tau2.text(Model(order))


def modify_user_address(db: State, user_id: str, address1: str, address2: str, city: str,
                        state: str, country: str, zip: str) -> str:
    """Change a user's default address. Give the details and get the user's explicit yes
    first.

    Args:
        user_id: The user id, such as 'sara_doe_496'.
        address1: The first address line, such as '123 Main St'.
        address2: The second address line, such as 'Apt 1' or ''.
        city: The city, such as 'San Francisco'.
        state: The state, such as 'CA'.
        country: The country, such as 'USA'.
        zip: The zip code, such as '12345'.
    """
    user = _user(db, user_id)
    user["address"] = _address(address1, address2, city, state, country, zip)
    db.put("users", user)
    return Tau2.text(Model(user))


def return_delivered_order_items(db: State, order_id: str, item_ids: list[str],
                                 payment_method_id: str) -> str:
    """Ask to return items of a delivered order (the user then gets an email on how to send
    them); the refund goes to the original payment method or a gift card. Give the details and
    get the user's explicit yes first.

    Args:
        order_id: The order id with its '#', such as '#W0000000'.
        item_ids: The item ids to return (an item may appear more than once).
        payment_method_id: Receives the refund: the original payment method or a gift card.
    """
    order = _order(db, order_id)
    if order["status"] != "delivered":
        raise ValueError("Non-delivered order cannot be returned")
    user = _user(db, order["user_id"])
    _, method = _payment_method(db, user["user_id"], payment_method_id)
    if (method["source"] != "gift_card"
            and payment_method_id != order["payment_history"][0]["payment_method_id"]):
        raise ValueError("Payment method should be the original payment method")
    _check_counts(order, item_ids, "Some item not found")
    order["status"] = "return requested"
    order["return_items"] = sorted(item_ids)
    order["return_payment_method_id"] = payment_method_id
    db.put("orders", order)
    return Tau2.text(Model(order))


def transfer_to_human_agents(summary: str) -> str:
    """Hand the user over to a human agent with a summary of the issue: only when the user asks
    for one, or when the policy and these tools cannot solve the issue.

    Args:
        summary: A summary of the user's issue.
    """
    return "Transfer successful"


Tau2.toolkit("RetailTools", globals())
