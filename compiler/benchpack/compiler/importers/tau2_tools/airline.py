"""τ²-bench's airline tools, reimplemented for benchpack; `bench import tau2` copies this file
into every airline pack (`tools/airline.py`). The tables are τ²'s database as its models dump
it: flights (key `flight_number`), users (`user_id`), reservations (`reservation_id`).

The contract (issue 23, "Toolset module conventions"): each public function is one τ² tool
with τ²'s parameters in τ²'s order; it returns the exact text τ² puts in the tool message and
raises an exception whose `str()` is the text τ² shows after "Error: ", after the same checks
in the same order (`bench parity tau2 --domain airline` checks it call by call against τ²'s own
code). The shared τ² rules (result texts, row lookups, pydantic's cut of a long input, the
toolkit-qualified names of Python's argument errors) come from tau2_tools/prelude.py, which the
importer inlines. What follows from τ²'s code, and shapes ours:

- τ² hands the agent's JSON arguments to its methods unchecked. Only the objects it turns into
  pydantic models are validated (flight and passenger lists, payments, the new reservation and
  certificate, an update's payment), so everything else fails, if at all, with the Python error
  of the operation τ² applies to it: we apply the same operation to the same value. An
  attribute τ² assigns is not validated either, so a raw value (a string baggage count, any
  cabin) is stored as it came.
- τ² is not transactional: a call that raises keeps the changes made before. Rows are put at
  the points τ² changes them (run the toolset with `atomic: false`).
- Kept on purpose, because τ²'s gold final states depend on them: "now" is
  2024-05-15T15:00:00; new reservations are HATHAT, HATHAU, HATHAV and new certificates
  certificate_3221322 … 3221324 (then an error); a cancellation refunds every payment of the
  history (again if cancelled twice) but credits no gift card and frees no seat; a flight
  change charges or refunds the price difference but moves no seat; a booking checks each
  segment's seats before taking any (the same flight twice can go below zero); a one-stop
  search looks for the next-day leg on `2024-05-<day + 1>` (not zero-padded, never June).
"""

from typing import Literal

from benchpack_tools import State

# ---- prelude (tau2_tools/prelude.py; `bench import tau2` inlines it here) ----
from benchpack.compiler.importers.tau2_tools.prelude import PYDANTIC_DOCS, Model, Tau2

# ---- end of prelude ----

_NOW = "2024-05-15T15:00:00"
_NEW_RESERVATION_IDS = ("HATHAT", "HATHAU", "HATHAV")
_NEW_CERTIFICATES = ("certificate_3221322", "certificate_3221323", "certificate_3221324")
_CALC_CHARS = "0123456789+-*/(). "
_AIRPORTS = (("SFO", "San Francisco"), ("JFK", "New York"), ("LAX", "Los Angeles"),
             ("ORD", "Chicago"), ("DFW", "Dallas"), ("DEN", "Denver"), ("SEA", "Seattle"),
             ("ATL", "Atlanta"), ("MIA", "Miami"), ("BOS", "Boston"), ("PHX", "Phoenix"),
             ("IAH", "Houston"), ("LAS", "Las Vegas"), ("MCO", "Orlando"), ("EWR", "Newark"),
             ("CLT", "Charlotte"), ("MSP", "Minneapolis"), ("DTW", "Detroit"),
             ("PHL", "Philadelphia"), ("LGA", "LaGuardia"))
_CABINS = ("business", "economy", "basic_economy")
# The objects τ² validates (its pydantic models), as name → [(field, type)] in τ²'s field
# order. A type is "str", "int", "float", "list" (any list), "list:<Model>", or a tuple of the
# allowed literal values.
_SHAPES: dict[str, list[tuple[str, object]]] = {
    "FlightInfo": [("flight_number", "str"), ("date", "str")],
    "Passenger": [("first_name", "str"), ("last_name", "str"), ("dob", "str")],
    "Payment": [("payment_id", "str"), ("amount", "int")],
    "Certificate": [("source", ("certificate",)), ("id", "str"), ("amount", "float")],
    "Reservation": [
        ("reservation_id", "str"), ("user_id", "str"), ("origin", "str"), ("destination", "str"),
        ("flight_type", ("round_trip", "one_way")), ("cabin", _CABINS), ("flights", "list"),
        ("passengers", "list:Passenger"), ("payment_history", "list:Payment"),
        ("created_at", "str"), ("total_baggages", "int"), ("nonfree_baggages", "int"),
        ("insurance", ("yes", "no"))],
}


# ---- lookups, as τ²'s private helpers word them ----

def _user(db: State, user_id: object) -> dict:
    return Tau2.row(db, "users", user_id, f"User {user_id} not found")


def _reservation(db: State, reservation_id: object) -> dict:
    return Tau2.row(db, "reservations", reservation_id, f"Reservation {reservation_id} not found")


def _flight(db: State, flight_number: object) -> dict:
    return Tau2.row(db, "flights", flight_number, f"Flight {flight_number} not found")


def _flight_date(db: State, flight_number: object, date: object) -> dict:
    flight = _flight(db, flight_number)
    if date not in flight["dates"]:
        raise ValueError(f"Flight {flight_number} not found on date {date}")
    return flight["dates"][date]


# ---- validation of the objects τ² turns into models: pydantic's lax validation of python
# input for the types above, and its error texts (our own code, so the pack does not depend on
# the sandbox's Python having pydantic, or the same version as τ²'s; the links name
# PYDANTIC_DOCS, τ²'s version once imported with --tau2)

_SAYS = {"string_type": "Input should be a valid string",
         "int_type": "Input should be a valid integer",
         "int_parsing": "Input should be a valid integer, unable to parse string as an integer",
         "int_from_float": "Input should be a valid integer, got a number with a fractional "
                           "part",
         "int_parsing_size": "Unable to parse input string as an integer, exceeded maximum size",
         "finite_number": "Input should be a finite number",
         "float_type": "Input should be a valid number",
         "float_parsing": "Input should be a valid number, unable to parse string as a number",
         "list_type": "Input should be a valid list", "missing": "Field required"}


class _Obj:
    """A validated object: its fields as attributes, `model_dump` as a pydantic model's."""

    def __init__(self, name: str, values: dict) -> None:
        self.__dict__.update(values)
        self._model_name = name
        self._model_fields = list(values)

    def model_dump(self) -> dict:
        return {f: _plain(getattr(self, f)) for f in self._model_fields}


def _plain(value: object) -> object:
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value.model_dump() if hasattr(value, "model_dump") else value


def _int_text(text: str) -> int | str:
    """pydantic reading a string as an integer: the number, or why not."""
    body = text.strip()
    sign = body[:1] if body[:1] in "+-" else ""
    digits, dot, fraction = body[len(sign):].partition(".")
    if dot and (not fraction or fraction.strip("0") or not digits):  # "3.0" is fine
        return "int_parsing"
    parts = digits.split("_")
    if not all(p and p.isascii() and p.isdigit() for p in parts):
        return "int_parsing"
    digits = "".join(parts)
    return "int_parsing_size" if len(digits) > 4300 else int(sign + digits)


def _scalar(kind: object, value: object) -> tuple[object, str | None]:
    """(the coerced value, None) or (the value, pydantic's error type)."""
    if isinstance(kind, tuple):
        return value, None if isinstance(value, str) and value in kind else "literal_error"
    if kind == "str":
        return value, None if isinstance(value, str) else "string_type"
    if kind == "int":
        if isinstance(value, int):
            return int(value), None
        if isinstance(value, float):
            if value != value or abs(value) == float("inf"):
                return value, "finite_number"
            if value != int(value):
                return value, "int_from_float"
            return (value, "int_parsing_size") if abs(value) >= 2.0 ** 63 else (int(value), None)
        if isinstance(value, str):
            number = _int_text(value)
            return (value, number) if isinstance(number, str) else (number, None)
        return value, "int_type"
    if isinstance(value, (int, float)):  # kind == "float"
        return float(value), None
    if not isinstance(value, str):
        return value, "float_type"
    text = value.strip()
    try:
        if text.isascii():
            return float(text), None
    except ValueError:
        pass
    return value, "float_parsing"


def _lax(kind: object, value: object, loc: tuple, errors: list) -> object:
    """pydantic's lax validation of one value: the coerced value; each failure is appended to
    `errors` as (loc, error type, input, message)."""
    if not (isinstance(kind, str) and kind.startswith("list")):
        out, error = _scalar(kind, value)
        if error == "literal_error":
            names = [repr(k) for k in kind]
            said = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]
            errors.append((loc, error, value, f"Input should be {said}"))
        elif error:
            errors.append((loc, error, value, _SAYS[error]))
        return out
    if not isinstance(value, list):
        errors.append((loc, "list_type", value, _SAYS["list_type"]))
        return value
    model = kind[5:]
    out_items = []
    for i, item in enumerate(value):
        if not model or (isinstance(item, _Obj) and item._model_name == model):
            out_items.append(item)
        elif isinstance(item, dict):
            out_items.append(_lax_model(model, item, (*loc, i), errors))
        else:
            errors.append(((*loc, i), "model_type", item,
                           f"Input should be a valid dictionary or instance of {model}"))
    return out_items


def _lax_model(name: str, data: dict, loc: tuple, errors: list) -> _Obj:
    values = {}
    for field, kind in _SHAPES[name]:
        if field in data:
            values[field] = _lax(kind, data[field], (*loc, field), errors)
        else:
            errors.append(((*loc, field), "missing", data, _SAYS["missing"]))
    return _Obj(name, values)


def _make(name: str, data: dict) -> object:
    """τ²'s `Model(**data)`: the validated object, or ValueError with pydantic's text."""
    errors: list = []
    made = _lax_model(name, data, (), errors)
    if not errors:
        return made
    lines = [f"{len(errors)} validation error{'s' if len(errors) > 1 else ''} for {name}"]
    for loc, error, value, message in errors:
        lines += [".".join(map(str, loc)),
                  f"  {message} [type={error}, input_value={Tau2.short_repr(value)}, "
                  f"input_type={type(value).__name__}]",
                  f"    For further information visit https://errors.pydantic.dev/"
                  f"{PYDANTIC_DOCS}/v/{error}"]
    raise ValueError("\n".join(lines))


def _convert(items: object, name: str) -> object:
    """τ² turns a list argument into models only when every item is a dict (iterating it as
    Python does: a string by characters, an object by keys); otherwise it keeps the raw value."""
    if all(isinstance(item, dict) for item in items):
        return [_make(name, item) for item in items]
    return items


# ---- shared steps of the tools ----

def _direct_flights(flights: list[dict], date: object, origin: object, destination: object,
                    leave_after: object = None) -> list[dict]:
    """τ²'s direct-flight search over `flights` (the table's rows), as DirectFlight dumps. The
    tests run in τ²'s order and stop at the first that fails, so a date that cannot be a key
    only fails when some flight has the origin and destination asked for."""
    found = []
    for flight in flights:
        if origin is not None and flight["origin"] != origin:
            continue
        if destination is not None and flight["destination"] != destination:
            continue
        if date not in flight["dates"] or flight["dates"][date]["status"] != "available":
            continue
        if leave_after is not None and not flight["scheduled_departure_time_est"] >= leave_after:
            continue
        day = flight["dates"][date]
        found.append(Model(
            flight_number=flight["flight_number"], origin=flight["origin"],
            destination=flight["destination"], status="available",
            scheduled_departure_time_est=flight["scheduled_departure_time_est"],
            scheduled_arrival_time_est=flight["scheduled_arrival_time_est"], date=None,
            available_seats=dict(day["available_seats"]), prices=dict(day["prices"])))
    return found


def _pay_for_update(db: State, user: dict, payment_id: object, total: object) -> dict | None:
    """τ²'s payment for a change: no certificates; a gift card must cover the total (and takes
    a negative one back); a payment is recorded only when the total is not 0. The gift card is
    debited before the payment is validated, so a fractional total keeps the debit."""
    if payment_id not in user["payment_methods"]:
        raise ValueError("Payment method not found")
    method = user["payment_methods"][payment_id]
    if method["source"] == "certificate":
        raise ValueError("Certificate cannot be used to update reservation")
    if method["source"] == "gift_card" and method["amount"] < total:
        raise ValueError("Gift card balance is not enough")
    if method["source"] == "gift_card":
        method["amount"] -= total
        db.put("users", user)
    if total != 0:
        return _plain(_make("Payment", {"payment_id": payment_id, "amount": total}))
    return None


# ---- the tools ----

def book_reservation(db: State, user_id: str, origin: str, destination: str,
                     flight_type: Literal["round_trip", "one_way"],
                     cabin: Literal["business", "economy", "basic_economy"], flights: list[dict],
                     passengers: list[dict], payment_methods: list[dict], total_baggages: int,
                     nonfree_baggages: int, insurance: Literal["yes", "no"]) -> str:
    """Book a new reservation for a user and charge it to the user's payment methods.

    Args:
        user_id: The user's ID, e.g. 'sara_doe_496'.
        origin: IATA code of the trip's origin, e.g. 'SFO'.
        destination: IATA code of the trip's destination, e.g. 'JFK'.
        flight_type: 'one_way' or 'round_trip'.
        cabin: 'basic_economy', 'economy' or 'business'.
        flights: Every flight segment, each {"flight_number": "HAT001", "date": "2024-05-01"}.
        passengers: Every passenger, each {"first_name", "last_name", "dob": "YYYY-MM-DD"}.
        payment_methods: Every payment, each {"payment_id": "credit_card_7815826", "amount": 100}.
        total_baggages: How many bags in total.
        nonfree_baggages: How many of the bags are paid for.
        insurance: 'yes' or 'no'.
    """
    flights = _convert(flights, "FlightInfo")
    passengers = _convert(passengers, "Passenger")
    payment_methods = _convert(payment_methods, "Payment")
    user = _user(db, user_id)
    reservation_id = next((r for r in _NEW_RESERVATION_IDS
                           if not db.find("reservations", reservation_id=r)), None)
    if reservation_id is None:
        raise ValueError("Too many reservations")
    reservation = _plain(_make("Reservation", {
        "reservation_id": reservation_id, "user_id": user_id, "origin": origin,
        "destination": destination, "flight_type": flight_type, "cabin": cabin, "flights": [],
        "passengers": passengers, "payment_history": payment_methods, "created_at": _NOW,
        "total_baggages": total_baggages, "nonfree_baggages": nonfree_baggages,
        "insurance": insurance}))
    reservation["status"] = None

    total = 0
    taken = []  # (flight number, date) of each segment, repeats included
    for info in flights:
        number = info.flight_number  # a raw item fails here, as in τ²
        flight = _flight(db, number)
        day = _flight_date(db, number, info.date)
        if day["status"] != "available":
            raise ValueError(f"Flight {number} not available on date {info.date}")
        if day["available_seats"][cabin] < len(passengers):
            raise ValueError(f"Not enough seats on flight {number}")
        price = day["prices"][cabin]
        reservation["flights"].append({
            "flight_number": number, "origin": flight["origin"],
            "destination": flight["destination"], "date": info.date, "price": price})
        taken.append((number, info.date))
        total += price * len(passengers)
    if insurance == "yes":
        total += 30 * len(passengers)
    total += 50 * nonfree_baggages

    for payment in payment_methods:
        if payment.payment_id not in user["payment_methods"]:
            raise ValueError(f"Payment method {payment.payment_id} not found")
        method = user["payment_methods"][payment.payment_id]
        if method["source"] in ("gift_card", "certificate") and method["amount"] < payment.amount:
            raise ValueError(f"Not enough balance in payment method {payment.payment_id}")
    paid = sum(payment.amount for payment in payment_methods)
    if paid != total:
        raise ValueError(f"Payment amount does not add up, total price is {total}, but paid {paid}")

    try:
        for payment in payment_methods:
            # a certificate listed twice is gone at its second turn: KeyError, as in τ²
            method = user["payment_methods"][payment.payment_id]
            if method["source"] == "gift_card":
                method["amount"] -= payment.amount
            elif method["source"] == "certificate":
                del user["payment_methods"][payment.payment_id]
    finally:
        db.put("users", user)
    for number, date in taken:
        flight = _flight(db, number)  # again: a flight booked twice loses seats twice
        flight["dates"][date]["available_seats"][cabin] -= len(passengers)
        db.put("flights", flight)
    db.put("reservations", reservation)
    user["reservations"].append(reservation_id)
    db.put("users", user)
    return Tau2.text(Model(reservation))


def calculate(db: State, expression: str) -> str:
    """Evaluate an arithmetic expression and give the result rounded to 2 decimals.

    Args:
        expression: Digits, + - * /, parentheses, dots and spaces only, e.g. '2 + 2'.
    """
    for char in expression:
        if char not in _CALC_CHARS:
            raise ValueError("Invalid characters in expression")
    # only digits and operators get here: no names to look up, nothing else to run
    return str(round(float(eval(expression, {"__builtins__": None}, {})), 2))


def cancel_reservation(db: State, reservation_id: str) -> str:
    """Cancel a whole reservation; every payment in its history is refunded.

    Args:
        reservation_id: The reservation's ID, e.g. 'ZFA04Y'.
    """
    reservation = _reservation(db, reservation_id)
    refunds = [{"payment_id": p["payment_id"], "amount": -p["amount"]}
               for p in reservation["payment_history"]]
    reservation["payment_history"].extend(refunds)
    reservation["status"] = "cancelled"
    db.put("reservations", reservation)
    return Tau2.text(Model(reservation))


def get_reservation_details(db: State, reservation_id: str) -> str:
    """Look up a reservation.

    Args:
        reservation_id: The reservation's ID, e.g. '8JX2WO'.
    """
    return Tau2.text(Model(_reservation(db, reservation_id)))


def get_user_details(db: State, user_id: str) -> str:
    """Look up a user's profile, payment methods and reservation IDs.

    Args:
        user_id: The user's ID, e.g. 'sara_doe_496'.
    """
    return Tau2.text(Model(_user(db, user_id)))


def list_all_airports(db: State) -> str:
    """List every airport served, as IATA code and city."""
    return Tau2.text([Model(iata=code, city=city) for code, city in _AIRPORTS])


def search_direct_flight(db: State, origin: str, destination: str, date: str) -> str:
    """Find the bookable direct flights from one airport to another on a date.

    Args:
        origin: IATA code of the departure airport, e.g. 'JFK'.
        destination: IATA code of the arrival airport, e.g. 'LAX'.
        date: The date as 'YYYY-MM-DD', e.g. '2024-01-01'.
    """
    return Tau2.text(_direct_flights(db.rows("flights"), date, origin, destination))


def search_onestop_flight(db: State, origin: str, destination: str, date: str) -> str:
    """Find the bookable connections with one stop from one airport to another on a date.

    Args:
        origin: IATA code of the departure airport, e.g. 'JFK'.
        destination: IATA code of the arrival airport, e.g. 'LAX'.
        date: The date as 'YYYY-MM-DD', e.g. '2024-05-01'.
    """
    rows = db.rows("flights")
    pairs = []
    for first in _direct_flights(rows, date, origin, None):
        first["date"] = date
        # τ²'s next day: the day of the month plus one, not zero-padded, always in May
        second_date = (f"2024-05-{int(date[-2:]) + 1}"
                       if "+1" in first["scheduled_arrival_time_est"] else date)
        for second in _direct_flights(rows, second_date, first["destination"], destination,
                                      first["scheduled_arrival_time_est"]):
            second["date"] = second_date
            pairs.append([first, second])
    return Tau2.text(pairs)


def send_certificate(db: State, user_id: str, amount: int) -> str:
    """Give a user a travel certificate of some amount. Use with care.

    Args:
        user_id: The user's ID, e.g. 'sara_doe_496'.
        amount: The certificate's value in dollars.
    """
    user = _user(db, user_id)
    for payment_id in _NEW_CERTIFICATES:
        if payment_id not in user["payment_methods"]:
            certificate = _make("Certificate", {"id": payment_id, "amount": amount,
                                                "source": "certificate"})
            user["payment_methods"][payment_id] = _plain(certificate)
            db.put("users", user)
            return f"Certificate {payment_id} added to user {user_id} with amount {amount}."
    raise ValueError("Too many certificates")


def transfer_to_human_agents(db: State, summary: str) -> str:
    """Hand the conversation to a human agent, with a summary of the user's issue. Only when
    the user asks for a human, or when the policy and tools cannot resolve the issue.

    Args:
        summary: What the user's issue is.
    """
    return "Transfer successful"


def update_reservation_baggages(db: State, reservation_id: str, total_baggages: int,
                                nonfree_baggages: int, payment_id: str) -> str:
    """Change a reservation's bags, charging the added paid bags.

    Args:
        reservation_id: The reservation's ID, e.g. 'ZFA04Y'.
        total_baggages: The new total number of bags.
        nonfree_baggages: The new number of paid bags.
        payment_id: A payment method of the user's profile, e.g. 'credit_card_7815826'.
    """
    reservation = _reservation(db, reservation_id)
    user = _user(db, reservation["user_id"])
    total = 50 * max(0, nonfree_baggages - reservation["nonfree_baggages"])
    payment = _pay_for_update(db, user, payment_id, total)
    if payment is not None:
        reservation["payment_history"].append(payment)
    reservation["total_baggages"] = total_baggages
    reservation["nonfree_baggages"] = nonfree_baggages
    db.put("reservations", reservation)
    return Tau2.text(Model(reservation))


def update_reservation_flights(db: State, reservation_id: str,
                               cabin: Literal["business", "economy", "basic_economy"],
                               flights: list[dict], payment_id: str) -> str:
    """Replace a reservation's flights (and cabin), charging or refunding the difference.

    Args:
        reservation_id: The reservation's ID, e.g. 'ZFA04Y'.
        cabin: The cabin of the whole reservation.
        flights: Every flight of the new itinerary, each {"flight_number", "date"}, the
            unchanged ones too.
        payment_id: A payment method of the user's profile, e.g. 'credit_card_7815826'.
    """
    flights = _convert(flights, "FlightInfo")
    reservation = _reservation(db, reservation_id)
    user = _user(db, reservation["user_id"])
    total = 0
    new_flights = []
    for info in flights:
        kept = next((f for f in reservation["flights"]
                     if f["flight_number"] == info.flight_number and f["date"] == info.date
                     and cabin == reservation["cabin"]), None)
        if kept is not None:
            total += kept["price"] * len(reservation["passengers"])
            new_flights.append(kept)
            continue
        flight = _flight(db, info.flight_number)
        day = _flight_date(db, info.flight_number, info.date)
        if day["status"] != "available":
            raise ValueError(f"Flight {info.flight_number} not available on date {info.date}")
        if day["available_seats"][cabin] < len(reservation["passengers"]):
            raise ValueError(f"Not enough seats on flight {info.flight_number}")
        segment = {"flight_number": info.flight_number, "origin": flight["origin"],
                   "destination": flight["destination"], "date": info.date,
                   "price": day["prices"][cabin]}
        total += segment["price"] * len(reservation["passengers"])
        new_flights.append(segment)
    total -= sum(f["price"] for f in reservation["flights"]) * len(reservation["passengers"])
    payment = _pay_for_update(db, user, payment_id, total)
    if payment is not None:
        reservation["payment_history"].append(payment)
    reservation["flights"] = new_flights
    reservation["cabin"] = cabin
    db.put("reservations", reservation)
    return Tau2.text(Model(reservation))


def update_reservation_passengers(db: State, reservation_id: str, passengers: list[dict]) -> str:
    """Replace a reservation's passengers; their number cannot change.

    Args:
        reservation_id: The reservation's ID, e.g. 'ZFA04Y'.
        passengers: Every passenger, each {"first_name", "last_name", "dob": "YYYY-MM-DD"}.
    """
    passengers = _convert(passengers, "Passenger")
    reservation = _reservation(db, reservation_id)
    if len(passengers) != len(reservation["passengers"]):
        raise ValueError("Number of passengers does not match")
    reservation["passengers"] = _plain(passengers)
    db.put("reservations", reservation)
    return Tau2.text(Model(reservation))


def get_flight_status(db: State, flight_number: str, date: str) -> str:
    """Give a flight's status on a date.

    Args:
        flight_number: The flight number, e.g. 'HAT001'.
        date: The date as 'YYYY-MM-DD'.
    """
    return _flight_date(db, flight_number, date)["status"]


Tau2.toolkit("AirlineTools", globals())
