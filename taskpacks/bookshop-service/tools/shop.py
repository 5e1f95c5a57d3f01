"""Tools of the Inkwell & Ivy bookshop's customer-service desk.

Every public function is a tool the agent can call (design12 §1): the compiler reads the type
hints and the docstrings with `ast`, and the runtime calls the functions in a sandboxed worker
with `db` bound to the `shop` service's tables (users, products, orders). Business rules live
here, not in the policy text alone, so an agent that ignores the policy still gets a refusal
from the tool and the state check sees no forbidden write.

Money is kept in dollars rounded to cents; a refund or charge is one `payment_history` entry.
"""

from __future__ import annotations

import ast
import copy
import operator
from typing import Literal

from benchpack_tools import State, ToolError

PENDING = ("pending", "pending (items modified)")
CANCEL_REASONS = ("no longer needed", "ordered by mistake")


def _money(value: float) -> float:
    return round(value + 0.0, 2)


def _one(db: State, table: str, what: str, **equals: str) -> dict:
    # `find` rather than `get`: the message then names the thing the agent asked for.
    rows = db.find(table, **equals)
    if not rows:
        raise ToolError(f"{what} not found")
    return copy.deepcopy(rows[0])


def _order(db: State, order_id: str) -> dict:
    return _one(db, "orders", f"Order {order_id}", order_id=order_id)


def _user(db: State, user_id: str) -> dict:
    return _one(db, "users", f"User {user_id}", user_id=user_id)


def _variant(db: State, product_id: str, item_id: str) -> dict:
    product = _one(db, "products", f"Product {product_id}", product_id=product_id)
    variant = product["variants"].get(item_id)
    if variant is None:
        raise ToolError(f"Item {item_id} is not a variant of product {product_id}")
    return variant


def _payment_method(user: dict, payment_method_id: str) -> dict:
    method = user["payment_methods"].get(payment_method_id)
    if method is None:
        raise ToolError(f"Payment method {payment_method_id} does not belong to user {user['user_id']}")
    return method


def _settle(db: State, user: dict, order: dict, payment_method_id: str, difference: float) -> None:
    """Charge (difference > 0) or refund (< 0) the price difference to one payment method."""
    difference = _money(difference)
    if difference == 0:
        return
    method = _payment_method(user, payment_method_id)
    if method["source"] == "gift_card":
        balance = _money(method.get("balance", 0.0) - difference)
        if balance < 0:
            raise ToolError(f"Insufficient gift card balance: {method.get('balance', 0.0):.2f} "
                            f"available, {difference:.2f} needed")
        method["balance"] = balance
        db.put("users", user)
    kind = "payment" if difference > 0 else "refund"
    order["payment_history"].append(
        {"transaction_type": kind, "amount": abs(difference), "payment_method_id": payment_method_id})


def _swap_items(db: State, order: dict, item_ids: list[str], new_item_ids: list[str]) -> float:
    """Replace items in `order` by variants of the same products; returns new - old total."""
    if not item_ids:
        raise ToolError("No items given")
    if len(item_ids) != len(new_item_ids):
        raise ToolError("item_ids and new_item_ids must have the same length")
    taken: set[int] = set()
    difference = 0.0
    for old_id, new_id in zip(item_ids, new_item_ids):
        slot = next((i for i, it in enumerate(order["items"])
                     if it["item_id"] == old_id and i not in taken), None)
        if slot is None:
            raise ToolError(f"Item {old_id} is not in order {order['order_id']} (or listed too often)")
        taken.add(slot)
        old = order["items"][slot]
        if new_id == old_id:
            raise ToolError(f"New item {new_id} is the same as the old one")
        variant = _variant(db, old["product_id"], new_id)
        if variant["stock"] <= 0:
            raise ToolError(f"New item {new_id} is out of stock")
        difference += variant["price"] - old["price"]
        order["items"][slot] = {**old, "item_id": new_id, "price": variant["price"],
                                "options": dict(variant["options"])}
    return _money(difference)


def _address(address1: str, address2: str, city: str, state: str, country: str, zip: str) -> dict:
    address = {"address1": address1.strip(), "address2": address2.strip(), "city": city.strip(),
               "state": state.strip(), "country": country.strip(), "zip": zip.strip()}
    missing = [k for k, v in address.items() if not v and k != "address2"]
    if missing:
        raise ToolError(f"Address is missing: {', '.join(missing)}")
    return address


def find_user_id_by_email(db: State, email: str) -> str:
    """Find a customer's user id from their e-mail address.

    Args:
        email: The e-mail address, such as 'ana.lopez12@mailbox.example'.
    """
    wanted = email.strip().lower()
    for user in db.rows("users"):
        if user["email"].lower() == wanted:
            return user["user_id"]
    raise ToolError("User not found")


def find_user_id_by_name_zip(db: State, first_name: str, last_name: str, zip: str) -> str:
    """Find a customer's user id from their first name, last name and zip code.

    Args:
        first_name: The first name, such as 'Ana'.
        last_name: The last name, such as 'Lopez'.
        zip: The zip code of the customer's default address, such as '94110'.
    """
    first, last, code = first_name.strip().lower(), last_name.strip().lower(), zip.strip()
    for user in db.rows("users"):
        name = user["name"]
        if (name["first_name"].lower(), name["last_name"].lower(), user["address"]["zip"]) == (first, last, code):
            return user["user_id"]
    raise ToolError("User not found")


def get_user_details(db: State, user_id: str) -> dict:
    """Get a customer's profile: name, e-mail, default address, payment methods, order ids.

    Args:
        user_id: The user id, such as 'ana_lopez_1234'.
    """
    return _user(db, user_id)


def list_user_orders(db: State, user_id: str) -> list[dict]:
    """List a customer's orders with their status and total.

    Args:
        user_id: The user id, such as 'ana_lopez_1234'.
    """
    _user(db, user_id)
    orders = sorted(db.find("orders", user_id=user_id), key=lambda o: o["order_id"])
    return [{"order_id": o["order_id"], "status": o["status"],
             "total": _money(sum(i["price"] for i in o["items"])),
             "items": [i["name"] for i in o["items"]]} for o in orders]


def get_order_details(db: State, order_id: str) -> dict:
    """Get an order: items, status, shipping address, fulfilments and payment history.

    Args:
        order_id: The order id, such as '#B20417' (with the '#').
    """
    return _order(db, order_id)


def get_product_details(db: State, product_id: str) -> dict:
    """Get a product and all its variants (item ids, options, price, units in stock).

    Args:
        product_id: The product id, such as 'P1003'. It is not an item id.
    """
    return _one(db, "products", f"Product {product_id}", product_id=product_id)


def list_products(db: State) -> dict:
    """List every product the shop sells, as a map from product name to product id."""
    return {p["name"]: p["product_id"] for p in sorted(db.rows("products"), key=lambda p: p["product_id"])}


def cancel_pending_order(db: State, order_id: str,
                         reason: Literal["no longer needed", "ordered by mistake"]) -> dict:
    """Cancel a pending order. Every payment is refunded to the payment method it came from;
    gift cards get their balance back at once.

    Args:
        order_id: The order id, such as '#B20417'.
        reason: Why the customer cancels: 'no longer needed' or 'ordered by mistake'.
    """
    order = _order(db, order_id)
    if order["status"] not in PENDING:
        raise ToolError(f"Order {order_id} is {order['status']}: only pending orders can be cancelled")
    if reason not in CANCEL_REASONS:
        raise ToolError("Invalid reason: use 'no longer needed' or 'ordered by mistake'")
    user = _user(db, order["user_id"])
    net: dict[str, float] = {}
    for entry in order["payment_history"]:
        sign = 1 if entry["transaction_type"] == "payment" else -1
        net[entry["payment_method_id"]] = net.get(entry["payment_method_id"], 0.0) + sign * entry["amount"]
    for method_id, amount in net.items():
        amount = _money(amount)
        if amount <= 0:
            continue
        order["payment_history"].append(
            {"transaction_type": "refund", "amount": amount, "payment_method_id": method_id})
        method = user["payment_methods"].get(method_id)
        if method is not None and method["source"] == "gift_card":
            method["balance"] = _money(method.get("balance", 0.0) + amount)
    order["status"] = "cancelled"
    order["cancel_reason"] = reason
    db.put("users", user)
    db.put("orders", order)
    return order


def modify_pending_order_address(db: State, order_id: str, address1: str, address2: str,
                                 city: str, state: str, country: str, zip: str) -> dict:
    """Change the shipping address of a pending order.

    Args:
        order_id: The order id, such as '#B20451'.
        address1: Street and number, such as '12 Alder Street'.
        address2: Apartment or suite; an empty string when there is none.
        city: The city.
        state: The state code, such as 'OR'.
        country: The country, such as 'USA'.
        zip: The zip code.
    """
    order = _order(db, order_id)
    if order["status"] not in PENDING:
        raise ToolError(f"Order {order_id} is {order['status']}: only a pending order's address can be changed")
    order["address"] = _address(address1, address2, city, state, country, zip)
    db.put("orders", order)
    return order


def modify_pending_order_items(db: State, order_id: str, item_ids: list[str],
                               new_item_ids: list[str], payment_method_id: str) -> dict:
    """Swap items of a pending order for other variants of the same products (for example the
    paperback instead of the hardcover). The price difference is charged to, or refunded to,
    the given payment method. An order's items can be modified only once.

    Args:
        order_id: The order id, such as '#B20466'.
        item_ids: The item ids to replace, as they appear in the order.
        new_item_ids: The new item ids, position by position; each a variant of the same product.
        payment_method_id: The customer's payment method that pays or receives the difference,
            such as 'gift_card_2286014'.
    """
    order = _order(db, order_id)
    if order["status"] == "pending (items modified)":
        raise ToolError(f"The items of order {order_id} have already been modified once")
    if order["status"] != "pending":
        raise ToolError(f"Order {order_id} is {order['status']}: only pending orders can be modified")
    user = _user(db, order["user_id"])
    _payment_method(user, payment_method_id)
    difference = _swap_items(db, order, item_ids, new_item_ids)
    _settle(db, user, order, payment_method_id, difference)
    order["status"] = "pending (items modified)"
    db.put("orders", order)
    return order


def return_delivered_order_items(db: State, order_id: str, item_ids: list[str],
                                 payment_method_id: str) -> dict:
    """Return items of a delivered order. The refund goes to the original payment method or to
    one of the customer's gift cards (credited at once). One return or exchange per order.

    Args:
        order_id: The order id, such as '#B20388'.
        item_ids: The item ids to return, as they appear in the order.
        payment_method_id: Where the refund goes: the order's original payment method or a
            gift card of the customer.
    """
    order = _order(db, order_id)
    if order["status"] != "delivered":
        raise ToolError(f"Order {order_id} is {order['status']}: only delivered orders can be returned")
    if not item_ids:
        raise ToolError("No items given")
    user = _user(db, order["user_id"])
    method = _payment_method(user, payment_method_id)
    original = order["payment_history"][0]["payment_method_id"]
    if payment_method_id != original and method["source"] != "gift_card":
        raise ToolError("Refunds go to the original payment method or to a gift card")
    taken: set[int] = set()
    amount = 0.0
    for item_id in item_ids:
        slot = next((i for i, it in enumerate(order["items"])
                     if it["item_id"] == item_id and i not in taken), None)
        if slot is None:
            raise ToolError(f"Item {item_id} is not in order {order_id} (or listed too often)")
        taken.add(slot)
        amount += order["items"][slot]["price"]
    amount = _money(amount)
    order["status"] = "return requested"
    order["return_items"] = sorted(item_ids)
    order["payment_history"].append(
        {"transaction_type": "refund", "amount": amount, "payment_method_id": payment_method_id})
    if method["source"] == "gift_card":
        method["balance"] = _money(method.get("balance", 0.0) + amount)
        db.put("users", user)
    db.put("orders", order)
    return order


def exchange_delivered_order_items(db: State, order_id: str, item_ids: list[str],
                                   new_item_ids: list[str], payment_method_id: str) -> dict:
    """Exchange items of a delivered order for other variants of the same products. The price
    difference is charged to, or refunded to, the given payment method. One return or exchange
    per order.

    Args:
        order_id: The order id, such as '#B20395'.
        item_ids: The item ids to exchange, as they appear in the order.
        new_item_ids: The new item ids, position by position; each a variant of the same product.
        payment_method_id: The customer's payment method that pays or receives the difference.
    """
    order = _order(db, order_id)
    if order["status"] != "delivered":
        raise ToolError(f"Order {order_id} is {order['status']}: only delivered orders can be exchanged")
    user = _user(db, order["user_id"])
    _payment_method(user, payment_method_id)
    before = [dict(i) for i in order["items"]]
    difference = _swap_items(db, order, item_ids, new_item_ids)
    # The customer keeps the old items until the new ones ship: the order lists what was
    # delivered, the exchange what will replace it.
    order["exchange"] = {"item_ids": list(item_ids), "new_item_ids": list(new_item_ids),
                         "price_difference": difference}
    order["items"] = before
    _settle(db, user, order, payment_method_id, difference)
    order["status"] = "exchange requested"
    db.put("orders", order)
    return order


def modify_user_address(db: State, user_id: str, address1: str, address2: str, city: str,
                        state: str, country: str, zip: str) -> dict:
    """Change a customer's default address (orders already placed keep theirs).

    Args:
        user_id: The user id, such as 'jun_watanabe_5658'.
        address1: Street and number.
        address2: Apartment or suite; an empty string when there is none.
        city: The city.
        state: The state code.
        country: The country.
        zip: The zip code.
    """
    user = _user(db, user_id)
    user["address"] = _address(address1, address2, city, state, country, zip)
    db.put("users", user)
    return user


def transfer_to_human_agents(db: State, summary: str) -> str:
    """Hand the conversation to a human colleague, with a short summary of the customer's
    issue. Only for requests that none of the other tools can handle.

    Args:
        summary: What the customer needs and what has been done so far.
    """
    if not summary.strip():
        raise ToolError("Give a summary for the human agent")
    return "Transfer successful"


_OPERATORS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
              ast.Div: operator.truediv, ast.USub: operator.neg, ast.UAdd: operator.pos}


def _evaluate(node: ast.AST) -> float:
    if isinstance(node, ast.Expression):
        return _evaluate(node.body)
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        return _OPERATORS[type(node.op)](_evaluate(node.left), _evaluate(node.right))
    if isinstance(node, ast.UnaryOp) and type(node.op) in _OPERATORS:
        return _OPERATORS[type(node.op)](_evaluate(node.operand))
    raise ToolError("Only numbers, + - * / and parentheses are allowed")


def calculate(db: State, expression: str) -> float:
    """Evaluate an arithmetic expression, rounded to two decimals.

    Args:
        expression: Numbers, + - * / and parentheses, such as '85.00 - 48.00'.
    """
    if len(expression) > 200:
        raise ToolError("Expression too long")
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError:
        raise ToolError(f"Not an arithmetic expression: {expression}") from None
    try:
        return round(_evaluate(tree), 2)
    except ZeroDivisionError:
        raise ToolError("Division by zero") from None
