"""τ²-bench airline tools, written for benchpack from τ²'s documented behaviour (names, arguments,
business rules and error messages of `src/tau2/domains/airline/tools.py`); copied into every
pack `bench import tau2` writes for the airline domain. The tables are τ²'s `db.json`: flights
(key `flight_number`), users (`user_id`), reservations (`reservation_id`).

τ²'s quirks are kept on purpose, because its gold final states are computed with them: new
reservation ids are HATHAT, HATHAU, HATHAV; certificates are certificate_3221322 … 3221324;
"now" is 2024-05-15T15:00:00; a cancellation refunds the payments in the reservation's history
but neither credits gift cards nor releases seats; a flight change does not move seats."""

from typing import Literal

from benchpack_tools import State, ToolError

_CALC_CHARS = set("0123456789+-*/(). ")
_NEW_RESERVATION_IDS = ("HATHAT", "HATHAU", "HATHAV")
_NEW_CERTIFICATE_NUMBERS = (3221322, 3221323, 3221324)
_NOW = "2024-05-15T15:00:00"
_CABINS = ("business", "economy", "basic_economy")
_AIRPORTS = [("SFO", "San Francisco"), ("JFK", "New York"), ("LAX", "Los Angeles"),
             ("ORD", "Chicago"), ("DFW", "Dallas"), ("DEN", "Denver"), ("SEA", "Seattle"),
             ("ATL", "Atlanta"), ("MIA", "Miami"), ("BOS", "Boston"), ("PHX", "Phoenix"),
             ("IAH", "Houston"), ("LAS", "Las Vegas"), ("MCO", "Orlando"), ("EWR", "Newark"),
             ("CLT", "Charlotte"), ("MSP", "Minneapolis"), ("DTW", "Detroit"),
             ("PHL", "Philadelphia"), ("LGA", "LaGuardia")]


# ---- lookups (τ²'s messages) ----

def _user(db: State, user_id: str) -> dict:
    rows = db.find("users", user_id=user_id)
    if not rows:
        raise ToolError(f"User {user_id} not found")
    return rows[0]


def _reservation(db: State, reservation_id: str) -> dict:
    rows = db.find("reservations", reservation_id=reservation_id)
    if not rows:
        raise ToolError(f"Reservation {reservation_id} not found")
    return rows[0]


def _flight(db: State, flight_number: str) -> dict:
    rows = db.find("flights", flight_number=flight_number)
    if not rows:
        raise ToolError(f"Flight {flight_number} not found")
    return rows[0]


def _instance(flight: dict, date: str) -> dict:
    if date not in flight["dates"]:
        raise ToolError(f"Flight {flight['flight_number']} not found on date {date}")
    return flight["dates"][date]


# ---- argument shapes τ² validates with pydantic (extra fields are dropped, as pydantic does) ----

def _text(obj: dict, field: str, what: str) -> str:
    value = obj.get(field)
    if not isinstance(value, str):
        raise ToolError(f"{what}: `{field}` is required and must be a string")
    return value


def _whole(value: object, what: str) -> int:
    # pydantic's lax int: an int, or a float with no fraction
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value):
        raise ToolError(f"{what} must be a whole number of dollars")
    return int(value)


def _objects(items: list, what: str) -> list[dict]:
    if not all(isinstance(x, dict) for x in items):
        raise ToolError(f"each of {what} must be an object")
    return items


def _passengers(items: list) -> list[dict]:
    return [{"first_name": _text(p, "first_name", "passenger"),
             "last_name": _text(p, "last_name", "passenger"),
             "dob": _text(p, "dob", "passenger")} for p in _objects(items, "passengers")]


def _flight_infos(items: list) -> list[tuple[str, str]]:
    return [(_text(f, "flight_number", "flight"), _text(f, "date", "flight"))
            for f in _objects(items, "flights")]


def _cabin(cabin: str) -> str:
    if cabin not in _CABINS:
        raise ToolError(f"Invalid cabin {cabin!r}: one of " + ", ".join(_CABINS))
    return cabin


def _direct(flight: dict, instance: dict, date: str | None) -> dict:
    return {"flight_number": flight["flight_number"], "origin": flight["origin"],
            "destination": flight["destination"], "status": "available",
            "scheduled_departure_time_est": flight["scheduled_departure_time_est"],
            "scheduled_arrival_time_est": flight["scheduled_arrival_time_est"],
            "date": date, "available_seats": dict(instance["available_seats"]),
            "prices": dict(instance["prices"])}


def _search(db: State, date: str, origin: str | None, destination: str | None,
            leave_after: str | None = None) -> list[dict]:
    found = []
    for flight in db.rows("flights"):
        instance = flight["dates"].get(date)
        if ((origin is None or flight["origin"] == origin)
                and (destination is None or flight["destination"] == destination)
                and instance is not None and instance.get("status") == "available"
                and (leave_after is None
                     or flight["scheduled_departure_time_est"] >= leave_after)):
            found.append(_direct(flight, instance, None))
    return found


def _charge_for_update(db: State, user: dict, payment_id: str, total: int) -> dict | None:
    """τ²'s payment for a change: no certificates; a gift card must cover a positive total and
    takes a negative one back; nothing is recorded when the total is 0."""
    method = user["payment_methods"].get(payment_id)
    if method is None:
        raise ToolError("Payment method not found")
    if method.get("source") == "certificate":
        raise ToolError("Certificate cannot be used to update reservation")
    if method.get("source") == "gift_card" and method["amount"] < total:
        raise ToolError("Gift card balance is not enough")
    if method.get("source") == "gift_card":
        method["amount"] = method["amount"] - total
        db.put("users", user)
    return {"payment_id": payment_id, "amount": total} if total != 0 else None


# ---- tools ----

def book_reservation(db: State, user_id: str, origin: str, destination: str,
                     flight_type: Literal["round_trip", "one_way"],
                     cabin: Literal["business", "economy", "basic_economy"], flights: list[dict],
                     passengers: list[dict], payment_methods: list[dict], total_baggages: int,
                     nonfree_baggages: int, insurance: Literal["yes", "no"]) -> dict:
    """Book a reservation.

    Args:
        user_id: The ID of the user to book the reservation, such as 'sara_doe_496'.
        origin: The IATA code for the origin city, such as 'SFO'.
        destination: The IATA code for the destination city, such as 'JFK'.
        flight_type: 'one_way' or 'round_trip'.
        cabin: 'basic_economy', 'economy' or 'business'.
        flights: Each flight segment as {"flight_number": "HAT001", "date": "2024-05-01"}.
        passengers: Each passenger as {"first_name", "last_name", "dob": "YYYY-MM-DD"}.
        payment_methods: Each payment as {"payment_id": "credit_card_7815826", "amount": 100}.
        total_baggages: The total number of bags.
        nonfree_baggages: The number of bags that are paid for.
        insurance: 'yes' or 'no'.
    """
    infos = _flight_infos(flights)
    people = _passengers(passengers)
    payments = [{"payment_id": _text(p, "payment_id", "payment"),
                 "amount": _whole(p.get("amount"), "payment amount")}
                for p in _objects(payment_methods, "payment_methods")]
    cabin = _cabin(cabin)
    user = _user(db, user_id)
    reservation_id = next((r for r in _NEW_RESERVATION_IDS
                           if not db.find("reservations", reservation_id=r)), None)
    if reservation_id is None:
        raise ToolError("Too many reservations")
    segments, changed, total = [], [], 0
    for number, date in infos:
        flight = _flight(db, number)
        instance = _instance(flight, date)
        if instance.get("status") != "available":
            raise ToolError(f"Flight {number} not available on date {date}")
        if instance["available_seats"][cabin] < len(people):
            raise ToolError(f"Not enough seats on flight {number}")
        price = instance["prices"][cabin]
        segments.append({"flight_number": number, "origin": flight["origin"],
                         "destination": flight["destination"], "date": date, "price": price})
        changed.append((number, date))
        total += price * len(people)
    if insurance == "yes":
        total += 30 * len(people)
    total += 50 * nonfree_baggages
    for p in payments:
        method = user["payment_methods"].get(p["payment_id"])
        if method is None:
            raise ToolError(f"Payment method {p['payment_id']} not found")
        if method.get("source") in ("gift_card", "certificate") and method["amount"] < p["amount"]:
            raise ToolError(f"Not enough balance in payment method {p['payment_id']}")
    paid = sum(p["amount"] for p in payments)
    if paid != total:
        raise ToolError(f"Payment amount does not add up, total price is {total}, but paid {paid}")
    for p in payments:
        method = user["payment_methods"][p["payment_id"]]
        if method.get("source") == "gift_card":
            method["amount"] = method["amount"] - p["amount"]
        elif method.get("source") == "certificate":
            del user["payment_methods"][p["payment_id"]]
    for number, date in changed:
        # read again: a flight may appear twice in one booking
        flight = _flight(db, number)
        flight["dates"][date]["available_seats"][cabin] -= len(people)
        db.put("flights", flight)
    reservation = {"reservation_id": reservation_id, "user_id": user_id, "origin": origin,
                   "destination": destination, "flight_type": flight_type, "cabin": cabin,
                   "flights": segments, "passengers": people, "payment_history": payments,
                   "created_at": _NOW, "total_baggages": total_baggages,
                   "nonfree_baggages": nonfree_baggages, "insurance": insurance, "status": None}
    user["reservations"] = [*user["reservations"], reservation_id]
    db.put("users", user)
    return db.put("reservations", reservation)


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


def cancel_reservation(db: State, reservation_id: str) -> dict:
    """Cancel the whole reservation.

    Args:
        reservation_id: The reservation ID, such as 'ZFA04Y'.
    """
    reservation = _reservation(db, reservation_id)
    refunds = [{"payment_id": p["payment_id"], "amount": -p["amount"]}
               for p in reservation["payment_history"]]
    reservation["payment_history"] = [*reservation["payment_history"], *refunds]
    reservation["status"] = "cancelled"
    return db.put("reservations", reservation)


def get_reservation_details(db: State, reservation_id: str) -> dict:
    """Get the details of a reservation.

    Args:
        reservation_id: The reservation ID, such as '8JX2WO'.
    """
    return _reservation(db, reservation_id)


def get_user_details(db: State, user_id: str) -> dict:
    """Get the details of a user, including their reservations.

    Args:
        user_id: The user ID, such as 'sara_doe_496'.
    """
    return _user(db, user_id)


def list_all_airports() -> list[dict]:
    """Returns a list of all available airports (IATA code and city)."""
    return [{"iata": code, "city": city} for code, city in _AIRPORTS]


def search_direct_flight(db: State, origin: str, destination: str, date: str) -> list[dict]:
    """Search for direct flights between two cities on a specific date.

    Args:
        origin: The origin city airport in three letters, such as 'JFK'.
        destination: The destination city airport in three letters, such as 'LAX'.
        date: The date of the flight in the format 'YYYY-MM-DD', such as '2024-01-01'.
    """
    return _search(db, date, origin, destination)


def search_onestop_flight(db: State, origin: str, destination: str, date: str) -> list[list[dict]]:
    """Search for one-stop flights between two cities on a specific date.

    Args:
        origin: The origin city airport in three letters, such as 'JFK'.
        destination: The destination city airport in three letters, such as 'LAX'.
        date: The date of the flight in the format 'YYYY-MM-DD', such as '2024-05-01'.
    """
    pairs = []
    for first in _search(db, date, origin, None):
        first["date"] = date
        # τ²'s rule for a first leg arriving the next day (May 2024 dates only)
        second_date = (f"2024-05-{int(date[-2:]) + 1}"
                       if "+1" in first["scheduled_arrival_time_est"] else date)
        for second in _search(db, second_date, first["destination"], destination,
                              leave_after=first["scheduled_arrival_time_est"]):
            second["date"] = second_date
            pairs.append([first, second])
    return pairs


def send_certificate(db: State, user_id: str, amount: int) -> str:
    """Send a certificate to a user. Be careful!

    Args:
        user_id: The ID of the user, such as 'sara_doe_496'.
        amount: The amount of the certificate to send.
    """
    user = _user(db, user_id)
    for number in _NEW_CERTIFICATE_NUMBERS:
        payment_id = f"certificate_{number}"
        if payment_id not in user["payment_methods"]:
            user["payment_methods"][payment_id] = {"source": "certificate", "id": payment_id,
                                                   "amount": amount}
            db.put("users", user)
            return f"Certificate {payment_id} added to user {user_id} with amount {amount}."
    raise ToolError("Too many certificates")


def transfer_to_human_agents(summary: str) -> str:
    """Transfer the user to a human agent, with a summary of the user's issue. Only transfer if
    the user explicitly asks for a human agent, or the policy and tools cannot solve the issue.

    Args:
        summary: A summary of the user's issue.
    """
    return "Transfer successful"


def update_reservation_baggages(db: State, reservation_id: str, total_baggages: int,
                                nonfree_baggages: int, payment_id: str) -> dict:
    """Update the baggage information of a reservation.

    Args:
        reservation_id: The reservation ID, such as 'ZFA04Y'.
        total_baggages: The updated total number of bags in the reservation.
        nonfree_baggages: The updated number of paid bags in the reservation.
        payment_id: A payment method of the user's profile, such as 'credit_card_7815826'.
    """
    reservation = _reservation(db, reservation_id)
    user = _user(db, reservation["user_id"])
    total = 50 * max(0, nonfree_baggages - reservation["nonfree_baggages"])
    payment = _charge_for_update(db, user, payment_id, total)
    if payment is not None:
        reservation["payment_history"] = [*reservation["payment_history"], payment]
    reservation["total_baggages"] = total_baggages
    reservation["nonfree_baggages"] = nonfree_baggages
    return db.put("reservations", reservation)


def update_reservation_flights(db: State, reservation_id: str,
                               cabin: Literal["business", "economy", "basic_economy"],
                               flights: list[dict], payment_id: str) -> dict:
    """Update the flights of a reservation.

    Args:
        reservation_id: The reservation ID, such as 'ZFA04Y'.
        cabin: The cabin class of the reservation.
        flights: Every flight of the ENTIRE new reservation as {"flight_number", "date"}, the
            unchanged ones included.
        payment_id: A payment method of the user's profile, such as 'credit_card_7815826'.
    """
    infos = _flight_infos(flights)
    cabin = _cabin(cabin)
    reservation = _reservation(db, reservation_id)
    user = _user(db, reservation["user_id"])
    people = len(reservation["passengers"])
    segments, total = [], 0
    for number, date in infos:
        kept = next((f for f in reservation["flights"] if f["flight_number"] == number
                     and f["date"] == date and cabin == reservation["cabin"]), None)
        if kept is not None:
            total += kept["price"] * people
            segments.append(kept)
            continue
        flight = _flight(db, number)
        instance = _instance(flight, date)
        if instance.get("status") != "available":
            raise ToolError(f"Flight {number} not available on date {date}")
        if instance["available_seats"][cabin] < people:
            raise ToolError(f"Not enough seats on flight {number}")
        segment = {"flight_number": number, "origin": flight["origin"],
                   "destination": flight["destination"], "date": date,
                   "price": instance["prices"][cabin]}
        total += segment["price"] * people
        segments.append(segment)
    total -= sum(f["price"] for f in reservation["flights"]) * people
    payment = _charge_for_update(db, user, payment_id, total)
    if payment is not None:
        reservation["payment_history"] = [*reservation["payment_history"], payment]
    reservation["flights"] = segments
    reservation["cabin"] = cabin
    return db.put("reservations", reservation)


def update_reservation_passengers(db: State, reservation_id: str, passengers: list[dict]) -> dict:
    """Update the passengers of a reservation (the number of passengers cannot change).

    Args:
        reservation_id: The reservation ID, such as 'ZFA04Y'.
        passengers: Each passenger as {"first_name", "last_name", "dob": "YYYY-MM-DD"}.
    """
    people = _passengers(passengers)
    reservation = _reservation(db, reservation_id)
    if len(people) != len(reservation["passengers"]):
        raise ToolError("Number of passengers does not match")
    reservation["passengers"] = people
    return db.put("reservations", reservation)


def get_flight_status(db: State, flight_number: str, date: str) -> str:
    """Get the status of a flight.

    Args:
        flight_number: The flight number, such as 'HAT001'.
        date: The date of the flight, such as '2024-05-01'.
    """
    return str(_instance(_flight(db, flight_number), date)["status"])
