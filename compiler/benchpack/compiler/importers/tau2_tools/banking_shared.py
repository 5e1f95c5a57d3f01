"""What both sides of τ²-bench's banking_knowledge share (written for benchpack from τ²'s
documented behaviour; none of its code is copied): the fixed clock, the deterministic record
ids, and the table helpers that word results as τ²'s database helpers do.

τ²'s banking database is one object of tables, each `{data: {record id: record}}`; a record
need not carry its own id. Here every row carries it as `_id` (the table's key), which no
result text shows. The agent and the user work on the same database (one service, `banking`).
"""

import hashlib
import json

NOW = "2025-11-14T03:40:00"
"""τ²'s locked clock for the domain (`get_now().isoformat()`)."""
TODAY = "11/14/2025"
"""τ²'s locked date, as its records write it (MM/DD/YYYY)."""


class Bank:
    """Helpers (static methods only: a class keeps them from being tools)."""

    @staticmethod
    def hex_id(seed, length=16):
        """The first `length` hex digits of the seed's sha256 (τ²'s `_deterministic_id`)."""
        return hashlib.sha256(seed.encode()).digest()[: length // 2].hex()

    @staticmethod
    def record(row):
        return {k: v for k, v in row.items() if k != "_id"}

    @staticmethod
    def matches(row, constraints):
        """Equality on every field (the only constraint τ²'s tools use here); a comparison
        that cannot be made is no match."""
        return all(row.get(k) == v for k, v in constraints.items())

    @staticmethod
    def query(db, table, constraints):
        """The text τ²'s `query_database_tool` gives: the matching records, numbered, each
        field on its own line (Python's `str` of the value)."""
        found = [r for r in db.rows(table) if Bank.matches(r, constraints)]
        if not found:
            return f"No records found in '{table}'."
        lines = [f"Found {len(found)} record(s) in '{table}':\n"]
        for i, row in enumerate(found, 1):
            lines.append(f"{i}. Record ID: {row['_id']}")
            for field, value in Bank.record(row).items():
                lines.append(f"   {field}: {Bank.py_str(value)}")
            lines.append("")
        return "\n".join(lines)

    @staticmethod
    def py_str(value):
        """Python's `str` of a JSON value (True, None, {'a': 1}), as τ²'s f-strings print."""
        if isinstance(value, str):
            return value
        return repr(Bank._py(value))

    @staticmethod
    def _py(value):
        if isinstance(value, dict):
            return {k: Bank._py(v) for k, v in value.items()}
        if isinstance(value, list):
            return [Bank._py(v) for v in value]
        return value

    @staticmethod
    def has(db, table, record_id):
        hash(record_id)  # τ²'s `record_id in table.data`: an unhashable id raises TypeError
        return any(r["_id"] == record_id for r in db.find(table, _id=record_id))

    @staticmethod
    def add(db, table, record_id, record):
        """τ²'s `add_to_db`: False (and nothing written) when the id is taken."""
        if Bank.has(db, table, record_id):
            return False
        db.put(table, {"_id": record_id, **record})
        return True

    @staticmethod
    def update(db, table, record_id, updates):
        hash(record_id)  # as `has`
        rows = db.find(table, _id=record_id)
        if not rows:
            return None
        row = {**rows[0], **updates}
        db.put(table, row)
        return row

    @staticmethod
    def json_args(arguments):
        """τ²'s parse of a discoverable tool's `arguments`: every JSON integer a float (so that
        ids and records do not depend on how a number was spelt); (args, error text)."""
        try:  # arguments that are no text raise TypeError, which τ² does not catch
            return json.loads(arguments, parse_int=float), None
        except json.JSONDecodeError as exc:
            return None, f"Error: Invalid JSON in arguments: {exc}"
