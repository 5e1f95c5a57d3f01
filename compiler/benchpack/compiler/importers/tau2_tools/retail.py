"""τ²-bench retail tools, written for benchpack from τ²'s documented behaviour (names, arguments,
business rules and error conditions of `src/tau2/domains/retail/tools.py`); copied into every
pack `bench import tau2` writes. The tables are τ²'s `db.json`: products, users, orders."""

import json
import unicodedata
from typing import Literal

from benchpack_tools import State, ToolError

_CALC_CHARS = set("0123456789+-*/(). ")


def _fold(text: str) -> str:
    # τ² matches names and emails case- and accent-insensitively (a spoken name has no accents)
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold().strip()


def _payment_method(db: State, user_id: str, payment_method_id: str) -> dict:
    user = db.get("users", user_id)
    method = user["payment_methods"].get(payment_method_id)
    if method is None:
        raise ToolError("Payment method not found")
    return method


def _adjust_gift_card(db: State, user_id: str, payment_method_id: str, delta: float) -> None:
    user = db.get("users", user_id)
    method = user["payment_methods"][payment_method_id]
    if method.get("source") == "gift_card":
        method["balance"] = round(method["balance"] + delta, 2)
        db.put("users", user)


def _check_counts(order: dict, item_ids: list[str], message: str) -> None:
    # the same item may appear several times in an order (and in the request)
    have = [it["item_id"] for it in order["items"]]
    for item_id in item_ids:
        if item_ids.count(item_id) > have.count(item_id):
            raise ToolError(message.format(item_id=item_id))


def _price_difference(db: State, order: dict, item_ids: list[str], new_item_ids: list[str],
                      same_id_allowed: bool) -> tuple[float, list[dict]]:
    if len(item_ids) != len(new_item_ids):
        raise ToolError("The number of items to be exchanged should match")
    diff = 0.0
    variants = []
    for item_id, new_item_id in zip(item_ids, new_item_ids, strict=True):
        if not same_id_allowed and item_id == new_item_id:
            raise ToolError("The new item id should be different from the old item id")
        item = next((it for it in order["items"] if it["item_id"] == item_id), None)
        if item is None:
            raise ToolError(f"Item {item_id} not found")
        product = db.get("products", item["product_id"])
        variant = product["variants"].get(new_item_id)
        if variant is None:
            raise ToolError("Variant not found")
        if not variant.get("available"):
            raise ToolError(f"New item {new_item_id} not found or available")
        diff += variant["price"] - item["price"]
        variants.append(variant)
    return round(diff, 2), variants


def calculate(expression: str) -> str:
    """Calculate the result of an arithmetic expression, rounded to 2 decimals.

    Args:
        expression: Numbers, + - * /, parentheses and spaces, such as '2 + 2'.
    """
    if not expression.strip() or not set(expression) <= _CALC_CHARS:
        raise ToolError("Invalid characters in expression")
    try:
        value = eval(expression, {"__builtins__": {}}, {})  # digits and operators only (checked above)
    except (SyntaxError, ZeroDivisionError, TypeError) as exc:
        raise ToolError(f"Invalid expression: {exc}") from None
    return str(round(float(value), 2))


def cancel_pending_order(db: State, order_id: str,
                         reason: Literal["no longer needed", "ordered by mistake"]) -> dict:
    """Cancel a pending order and refund its payments (a gift card is refunded at once). Explain
    the details and get the user's explicit confirmation (yes) first.

    Args:
        order_id: The order id, such as '#W0000000' (with the '#').
        reason: Either 'no longer needed' or 'ordered by mistake'.
    """
    order = db.get("orders", order_id)
    if order["status"] != "pending":
        raise ToolError("Non-pending order cannot be cancelled")
    if reason not in ("no longer needed", "ordered by mistake"):
        raise ToolError("Invalid reason")
    refunds = []
    for payment in order["payment_history"]:
        _payment_method(db, order["user_id"], payment["payment_method_id"])
        refunds.append({"transaction_type": "refund", "amount": payment["amount"],
                        "payment_method_id": payment["payment_method_id"]})
        _adjust_gift_card(db, order["user_id"], payment["payment_method_id"], payment["amount"])
    order["status"] = "cancelled"
    order["cancel_reason"] = reason
    order["payment_history"].extend(refunds)
    return db.put("orders", order)


def exchange_delivered_order_items(db: State, order_id: str, item_ids: list[str],
                                   new_item_ids: list[str], payment_method_id: str) -> dict:
    """Exchange items of a delivered order for other items of the same product (once per order).
    Explain the details and get the user's explicit confirmation (yes) first.

    Args:
        order_id: The order id, such as '#W0000000' (with the '#').
        item_ids: The item ids to exchange (duplicates allowed).
        new_item_ids: The new item ids, position by position, each of the same product.
        payment_method_id: Pays or receives the price difference, such as 'gift_card_0000000'.
    """
    order = db.get("orders", order_id)
    if order["status"] != "delivered":
        raise ToolError("Non-delivered order cannot be exchanged")
    _check_counts(order, item_ids, "Number of {item_id} not found.")
    diff, _ = _price_difference(db, order, item_ids, new_item_ids, same_id_allowed=True)
    method = _payment_method(db, order["user_id"], payment_method_id)
    if method.get("source") == "gift_card" and method["balance"] < diff:
        raise ToolError("Insufficient gift card balance to pay for the price difference")
    order["status"] = "exchange requested"
    order["exchange_items"] = sorted(item_ids)
    order["exchange_new_items"] = sorted(new_item_ids)
    order["exchange_payment_method_id"] = payment_method_id
    order["exchange_price_difference"] = diff
    return db.put("orders", order)


def find_user_id_by_name_zip(db: State, first_name: str, last_name: str, zip: str) -> str:
    """Find a user id by first name, last name and zip code (use the email first when known).

    Args:
        first_name: The first name, such as 'John'.
        last_name: The last name, such as 'Doe'.
        zip: The zip code, such as '12345'.
    """
    first, last = _fold(first_name), _fold(last_name)
    for user in db.rows("users"):
        if (_fold(user["name"]["first_name"]) == first and _fold(user["name"]["last_name"]) == last
                and user["address"]["zip"] == zip):
            return str(user["user_id"])
    raise ToolError("User not found")


def find_user_id_by_email(db: State, email: str) -> str:
    """Find a user id by email.

    Args:
        email: The email, such as 'something@example.com'.
    """
    wanted = _fold(email)
    for user in db.rows("users"):
        if _fold(user["email"]) == wanted:
            return str(user["user_id"])
    raise ToolError("User not found")


def get_order_details(db: State, order_id: str) -> dict:
    """The status and details of an order.

    Args:
        order_id: The order id, such as '#W0000000' (with the '#').
    """
    return db.get("orders", order_id)


def get_product_details(db: State, product_id: str) -> dict:
    """The inventory details of a product (its variants are the items).

    Args:
        product_id: The product id, such as '6086499569' (not an item id).
    """
    return db.get("products", product_id)


def get_item_details(db: State, item_id: str) -> dict:
    """The inventory details of one item.

    Args:
        item_id: The item id, such as '6086499569' (not a product id).
    """
    for product in db.rows("products"):
        if item_id in product["variants"]:
            return dict(product["variants"][item_id])
    raise ToolError("Item not found")


def get_user_details(db: State, user_id: str) -> dict:
    """The details of a user, including their orders and payment methods.

    Args:
        user_id: The user id, such as 'sara_doe_496'.
    """
    return db.get("users", user_id)


def list_all_product_types(db: State) -> str:
    """The name and product id of every product type, as JSON sorted by name."""
    return json.dumps({p["name"]: p["product_id"] for p in db.rows("products")}, sort_keys=True)


def modify_pending_order_address(db: State, order_id: str, address1: str, address2: str,
                                 city: str, state: str, country: str, zip: str) -> dict:
    """Change the shipping address of a pending order. Explain the details and get the user's
    explicit confirmation (yes) first.

    Args:
        order_id: The order id, such as '#W0000000' (with the '#').
        address1: The first line, such as '123 Main St'.
        address2: The second line, such as 'Apt 1' or ''.
        city: The city, such as 'San Francisco'.
        state: The state, such as 'CA'.
        country: The country, such as 'USA'.
        zip: The zip code, such as '12345'.
    """
    order = db.get("orders", order_id)
    if "pending" not in order["status"]:
        raise ToolError("Non-pending order cannot be modified")
    order["address"] = {"address1": address1, "address2": address2, "city": city,
                        "country": country, "state": state, "zip": zip}
    return db.put("orders", order)


def modify_pending_order_items(db: State, order_id: str, item_ids: list[str],
                               new_item_ids: list[str], payment_method_id: str) -> dict:
    """Change items of a pending order to other items of the same product (once per order).
    Explain the details and get the user's explicit confirmation (yes) first.

    Args:
        order_id: The order id, such as '#W0000000' (with the '#').
        item_ids: The item ids to change (duplicates allowed).
        new_item_ids: The new item ids, position by position, each of the same product.
        payment_method_id: Pays or receives the price difference, such as 'gift_card_0000000'.
    """
    order = db.get("orders", order_id)
    if order["status"] != "pending":
        raise ToolError("Non-pending order cannot be modified")
    _check_counts(order, item_ids, "{item_id} not found")
    diff, variants = _price_difference(db, order, item_ids, new_item_ids, same_id_allowed=False)
    method = _payment_method(db, order["user_id"], payment_method_id)
    if method.get("source") == "gift_card" and method["balance"] < diff:
        raise ToolError("Insufficient gift card balance to pay for the new item")
    order["payment_history"].append({"transaction_type": "payment" if diff > 0 else "refund",
                                     "amount": abs(diff), "payment_method_id": payment_method_id})
    _adjust_gift_card(db, order["user_id"], payment_method_id, -diff)
    # each changed item takes its own new variant's price and options (τ²'s code gives every
    # changed item the last variant's; see IMPORT_REPORT.md)
    taken: set[int] = set()
    for item_id, variant in zip(item_ids, variants, strict=True):
        i = next(i for i, it in enumerate(order["items"])
                 if it["item_id"] == item_id and i not in taken)
        taken.add(i)
        order["items"][i].update(item_id=variant["item_id"], price=variant["price"],
                                 options=variant["options"])
    order["status"] = "pending (item modified)"
    return db.put("orders", order)


def modify_pending_order_payment(db: State, order_id: str, payment_method_id: str) -> dict:
    """Pay a pending order with another payment method (the old one is refunded). Explain the
    details and get the user's explicit confirmation (yes) first.

    Args:
        order_id: The order id, such as '#W0000000' (with the '#').
        payment_method_id: The new payment method, such as 'credit_card_0000000'.
    """
    order = db.get("orders", order_id)
    if "pending" not in order["status"]:
        raise ToolError("Non-pending order cannot be modified")
    method = _payment_method(db, order["user_id"], payment_method_id)
    history = order["payment_history"]
    if len(history) != 1 or history[0]["transaction_type"] != "payment":
        raise ToolError("There should be exactly one payment for a pending order")
    old_id = history[0]["payment_method_id"]
    if old_id == payment_method_id:
        raise ToolError("The new payment method should be different from the current one")
    amount = history[0]["amount"]
    if method.get("source") == "gift_card" and method["balance"] < amount:
        raise ToolError("Insufficient gift card balance to pay for the order")
    history.extend([{"transaction_type": "payment", "amount": amount,
                     "payment_method_id": payment_method_id},
                    {"transaction_type": "refund", "amount": amount,
                     "payment_method_id": old_id}])
    _adjust_gift_card(db, order["user_id"], payment_method_id, -amount)
    _payment_method(db, order["user_id"], old_id)
    _adjust_gift_card(db, order["user_id"], old_id, amount)
    return db.put("orders", order)


def modify_user_address(db: State, user_id: str, address1: str, address2: str, city: str,
                        state: str, country: str, zip: str) -> dict:
    """Change a user's default address. Explain the details and get the user's explicit
    confirmation (yes) first.

    Args:
        user_id: The user id, such as 'sara_doe_496'.
        address1: The first line, such as '123 Main St'.
        address2: The second line, such as 'Apt 1' or ''.
        city: The city, such as 'San Francisco'.
        state: The state, such as 'CA'.
        country: The country, such as 'USA'.
        zip: The zip code, such as '12345'.
    """
    user = db.get("users", user_id)
    user["address"] = {"address1": address1, "address2": address2, "city": city,
                       "country": country, "state": state, "zip": zip}
    return db.put("users", user)


def return_delivered_order_items(db: State, order_id: str, item_ids: list[str],
                                 payment_method_id: str) -> dict:
    """Request the return of items of a delivered order; the refund goes to the original payment
    method or a gift card. Explain the details and get the user's explicit confirmation (yes)
    first.

    Args:
        order_id: The order id, such as '#W0000000' (with the '#').
        item_ids: The item ids to return (duplicates allowed).
        payment_method_id: Receives the refund: the original payment method or a gift card.
    """
    order = db.get("orders", order_id)
    if order["status"] != "delivered":
        raise ToolError("Non-delivered order cannot be returned")
    method = _payment_method(db, order["user_id"], payment_method_id)
    if (method.get("source") != "gift_card"
            and payment_method_id != order["payment_history"][0]["payment_method_id"]):
        raise ToolError("Payment method should be the original payment method")
    _check_counts(order, item_ids, "Some item not found")
    order["status"] = "return requested"
    order["return_items"] = sorted(item_ids)
    order["return_payment_method_id"] = payment_method_id
    return db.put("orders", order)


def transfer_to_human_agents(summary: str) -> str:
    """Transfer the user to a human agent with a summary of the issue: only when the user asks
    for one, or the policy and tools cannot solve the issue.

    Args:
        summary: A summary of the user's issue.
    """
    return "Transfer successful"
