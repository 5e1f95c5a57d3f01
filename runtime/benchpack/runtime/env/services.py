"""Declarative services: fixture tables and the operations the agent calls on them.

A `ServiceState` holds its own deep copy of the plan's rows, so every (episode, repeat) run
starts from the fixtures. Operation kinds:

- `list`   equality filters on `filter_fields` (strings compare case-insensitively), `limit`
           (default 100, at most 500); returns a list of rows;
- `get`    one row by the table key; returns the row;
- `search` rows where `query` is a case-insensitive substring of a searched field
           (`search_fields`, or every string field) — or, for a query of several words, where
           every word is found in some searched field; `limit`; returns a list of rows;
- `create` sets only the allowed `fields` (all schema fields, or any field without a schema),
           needs `required`, generates the key (`id_prefix` + next integer) unless given,
           fills schema `default`s, validates against `row_schema`; returns the new row;
- `update` merges allowed fields into an existing row and validates it; returns the row;
- `delete` removes an existing row; returns `{"deleted": key}`.

Errors raise `ToolError` with a message that says how to fix the call. Returned rows are
copies: later changes never alter what a tool call returned.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from benchpack.specs.pack import Operation
from benchpack.specs.plan import PlanService, PlanTable

from ..snapblobs import FrozenRows
from .copying import copy_json
from .errors import ToolError

if TYPE_CHECKING:  # imported by the first table with a row schema (a run without one never
    # loads jsonschema)
    from jsonschema.protocols import Validator

DEFAULT_LIMIT = 100
MAX_LIMIT = 500
_NUMBERED = re.compile(r"^(.*?)(\d+)$")


def _names(items: list[str], most: int = 20) -> str:
    shown = ", ".join(items[:most])
    return shown + (f", … ({len(items) - most} more)" if len(items) > most else "") \
        if items else "(none)"


def _same(a: Any, b: Any) -> bool:
    """Equality for filters and keys: exact, or the same text (case-insensitive for strings,
    so `3` finds `"3"`); booleans only ever equal booleans."""
    if a == b and type(a) is type(b):
        return True
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, list | dict) or isinstance(b, list | dict):
        return bool(a == b)
    if a is None or b is None:
        return False
    return str(a).casefold() == str(b).casefold()


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    return []


def _limit(args: dict[str, Any]) -> int:
    value = args.get("limit", DEFAULT_LIMIT)
    if value is None:
        return DEFAULT_LIMIT
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ToolError(f"`limit` must be a positive integer, got {value!r}")
    return min(value, MAX_LIMIT)


def _schema_errors(validator: Validator, row: dict[str, Any]) -> list[str]:
    errors = sorted(validator.iter_errors(row), key=lambda e: [str(p) for p in e.absolute_path])
    out = []
    for e in errors[:5]:
        where = ".".join(str(p) for p in e.absolute_path)
        out.append(f"{where}: {e.message}" if where else e.message)
    return out


@dataclass(frozen=True)
class _KeyFacts:
    """What a table's keys say about the keys it generates."""

    prefix: str | None
    """The common prefix of numbered keys (`ORD-` of `ORD-0042`); None when every key is an
    integer; "" when the keys agree on none."""
    width: int
    """The zero-padding of the numbers after the prefix (0: none)."""
    max_number: int
    """The largest number a key stands for (0: none)."""


def _number_of(key: Any, prefix: str | None) -> int | None:
    if prefix is None:
        return key if isinstance(key, int) and not isinstance(key, bool) else None
    if isinstance(key, str) and key.startswith(prefix) and key[len(prefix):].isdigit():
        return int(key[len(prefix):])
    return None


_FACTS: dict[tuple[Any, ...], _KeyFacts] = {}
"""`_KeyFacts` by a table's `id_prefix`, keys and their types (`ServiceState._key_facts`)."""


def _key_facts(keys: tuple[Any, ...], id_prefix: str | None) -> _KeyFacts:
    prefix: str | None
    if id_prefix is not None:
        prefix = id_prefix
    elif keys and all(isinstance(k, int) and not isinstance(k, bool) for k in keys):
        prefix = None
    else:
        prefixes = {m.group(1) for k in keys if isinstance(k, str) and (m := _NUMBERED.match(k))}
        prefix = prefixes.pop() if len(prefixes) == 1 else ""
    width = 0
    if prefix is not None:
        digits = [k[len(prefix):] for k in keys
                  if isinstance(k, str) and k.startswith(prefix) and k[len(prefix):].isdigit()]
        if any(len(d) > 1 and d.startswith("0") for d in digits):
            width = max(len(d) for d in digits)
    numbers = [n for k in keys if (n := _number_of(k, prefix)) is not None]
    return _KeyFacts(prefix, width, max(numbers, default=0))


class ServiceState:
    """The live state of one declarative service during one (episode, repeat) run."""

    def __init__(self, service: PlanService) -> None:
        self.name = service.name
        self.spec = service
        self.tables: dict[str, PlanTable] = dict(service.tables)
        self.operations: dict[str, Operation] = {op.name: op for op in service.operations}
        # the plan's row objects, shared and not copied: a service never changes a row in place
        # (every write stores a new object, every read hands out a copy), and environments
        # that start alike then hold the same rows, which lets a warm python tool worker
        # started from them be lent again (`pytool_pool.same_rows`)
        self._rows: dict[str, list[dict[str, Any]]] = {
            name: list(t.rows) for name, t in service.tables.items()}
        self._validators: dict[str, Validator] = {}
        for name, t in service.tables.items():
            if t.row_schema:
                from jsonschema import Draft202012Validator
                from jsonschema.validators import validator_for

                cls = validator_for(t.row_schema, default=Draft202012Validator)
                self._validators[name] = cls(t.row_schema)
        self.version = 0
        """Bumped by every write: a python tool worker whose replica saw another version
        reloads the tables before its next call (`pytools.PyToolWorker`)."""
        self._facts_at: dict[str, tuple[int, _KeyFacts]] = {}
        """Per table: the `version` its `_KeyFacts` were last looked up at, and those."""
        self._counters: dict[str, int] = {name: self._max_number(name) for name in self.tables}

    # ------------------------------------------------------------------ state

    def rows(self, table: str) -> list[dict[str, Any]]:
        """A copy of a table's current rows."""
        if table not in self._rows:
            raise KeyError(f"service `{self.name}` has no table `{table}`")
        return copy_json(self._rows[table])

    def snapshot(self) -> dict[str, list[dict[str, Any]]]:
        """Every table's rows by table name (a copy; JSON-serialisable)."""
        return copy_json(self._rows)

    def live_rows(self) -> dict[str, list[dict[str, Any]]]:
        """The rows themselves, not copied: only to look at. A row is never changed in
        place (`put_row` stores a new object), so keeping a reference keeps its content —
        a cheap before/after for comparisons (`bench parity tau2`)."""
        return {t: FrozenRows(rows) for t, rows in self._rows.items()}

    def adopt_rows(self, live: dict[str, list[dict[str, Any]]],
                   counters: dict[str, int] | None = None) -> None:
        """`restore` from another state's `live_rows()` (and `counters()`): the very row
        objects, not copies (rows are never changed in place), so a worker started from them
        can be lent again."""
        for table, rows in live.items():
            if table in self._rows:
                self._rows[table] = list(rows)
        self.version += 1
        for table in self.tables:
            self._counters[table] = max(self._max_number(table),
                                        (counters or {}).get(table, 0))

    def counters(self) -> dict[str, int]:
        """The last number used for generated keys, per table (kept in episode snapshots so
        a resumed run never reuses the key of a deleted row)."""
        return dict(self._counters)

    def restore(self, snapshot: dict[str, list[dict[str, Any]]],
                counters: dict[str, int] | None = None) -> None:
        """Replace the rows of the tables in `snapshot` (other tables keep theirs)."""
        for table, rows in snapshot.items():
            if table in self._rows:
                self._rows[table] = copy_json(rows)
        self.version += 1
        for table in self.tables:
            self._counters[table] = max(self._max_number(table),
                                        (counters or {}).get(table, 0))

    # ------------------------------------------------------------------ row writes (python tools)

    def _find_exact(self, table: str, key: Any) -> int | None:
        """Where the row with exactly this key is: python tools compare keys as Python does
        (`3` is not `"3"`), the same way their worker's replica of the table does."""
        field = self.tables[table].key
        for i, row in enumerate(self._rows[table]):
            if field in row and row[field] == key and type(row[field]) is type(key):
                return i
        return None

    def validate_row(self, table: str, row: Any) -> list[str]:
        """Why `row` cannot be stored in `table` (no such table, not an object, no key,
        against the row schema); empty when it can."""
        if table not in self._rows:
            return [f"service `{self.name}` has no table `{table}`"]
        if not isinstance(row, dict):
            return [f"a row of `{table}` must be an object, got {type(row).__name__}"]
        key = self.tables[table].key
        if row.get(key) is None:
            return [f"the row has no `{key}`, the key of `{table}`"]
        validator = self._validators.get(table)
        return _schema_errors(validator, row) if validator is not None else []

    def put_row(self, table: str, row: dict[str, Any]) -> None:
        """Insert `row`, or replace the row with the same key in place (a python tool's
        `State.put`); the caller has checked it with `validate_row`."""
        key = row[self.tables[table].key]
        i = self._find_exact(table, key)
        self.version += 1
        if i is None:
            self._rows[table].append(copy_json(row))
        else:
            self._rows[table][i] = copy_json(row)
        number = self._number_of(table, key)
        if number is not None:
            self._counters[table] = max(self._counters.get(table, 0), number)

    def delete_row(self, table: str, key: Any) -> bool:
        """Remove the row with exactly this key (a python tool's `State.delete`); False when
        there is none."""
        i = self._find_exact(table, key)
        if i is None:
            return False
        self._rows[table].pop(i)
        self.version += 1
        return True

    def key_info(self) -> dict[str, dict[str, Any]]:
        """Per table: the key field, the prefix of generated keys (None: integer keys), the
        zero-padding width and the counter — what a python tool worker needs for `next_id` to
        give the key a declarative `create` would."""
        out = {}
        for table, t in self.tables.items():
            facts = self._key_facts(table)
            key_schema = ((t.row_schema or {}).get("properties") or {}).get(t.key) or {}
            int_keys = facts.prefix is None or (not facts.prefix
                                                and key_schema.get("type") == "integer")
            out[table] = {"key": t.key, "prefix": "" if int_keys else (facts.prefix or ""),
                          "int_keys": int_keys, "width": facts.width,
                          "counter": self._counters.get(table, 0)}
        return out

    # ------------------------------------------------------------------ keys

    def _key_facts(self, table: str) -> _KeyFacts:
        """`_KeyFacts` of the table's keys as they are now, worked out once for a given set
        of keys: a python tool call sends `key_info` to its worker, and each scanned every
        row of every table with a regular expression, as did every environment's start and
        restore (the τ² retail gold run, 114 tasks at concurrency 4: ~2.5 s of the event
        loop's CPU, holding up the other sessions' calls). Looking the keys up hashes
        strings whose hashes Python keeps."""
        at = self._facts_at.get(table)
        if at is not None and at[0] == self.version:  # nothing written since
            return at[1]
        t = self.tables[table]
        keys = tuple([r.get(t.key) for r in self._rows[table]])
        # with their types: `==` holds between 1, 1.0 and True, which do not number alike
        seen = (t.id_prefix, keys, tuple(map(type, keys)))
        try:
            facts = _FACTS.get(seen)
        except TypeError:  # an unhashable key (a list): not shared
            facts = _key_facts(keys, t.id_prefix)
        else:
            if facts is None:
                facts = _key_facts(keys, t.id_prefix)
                if len(_FACTS) >= 256:  # tables of earlier runs and their states
                    _FACTS.pop(next(iter(_FACTS)))
                _FACTS[seen] = facts
        self._facts_at[table] = (self.version, facts)
        return facts

    def _prefix(self, table: str) -> str | None:
        return self._key_facts(table).prefix

    def _max_number(self, table: str) -> int:
        return self._key_facts(table).max_number

    _UNSET: Any = object()

    def _number_of(self, table: str, key: Any, prefix: Any = _UNSET) -> int | None:
        """The counter value a key stands for (None if it is not a generated-style key)."""
        return _number_of(key, self._prefix(table) if prefix is ServiceState._UNSET else prefix)

    def _next_key(self, table: str) -> Any:
        """The next free generated key (the counter advances when the row is stored)."""
        t = self.tables[table]
        facts = self._key_facts(table)
        prefix = facts.prefix
        key_schema = ((t.row_schema or {}).get("properties") or {}).get(t.key) or {}
        int_keys = prefix is None or (not prefix and key_schema.get("type") == "integer")
        n = self._counters.get(table, 0)
        while True:
            n += 1
            key: Any = n if int_keys else f"{prefix or ''}{str(n).zfill(facts.width)}"
            if self._find(table, key) is None:
                return key

    def _find(self, table: str, key: Any) -> int | None:
        field = self.tables[table].key
        for i, row in enumerate(self._rows[table]):
            if field in row and _same(row[field], key):
                return i
        return None

    def _known(self, table: str) -> str:
        field = self.tables[table].key
        return _names([str(r.get(field)) for r in self._rows[table]])

    def _need_row(self, table: str, args: dict[str, Any]) -> int:
        field = self.tables[table].key
        if field not in args or args[field] is None:
            raise ToolError(f"give `{field}`, the key of the row in `{table}`")
        i = self._find(table, args[field])
        if i is None:
            raise ToolError(f"no row of `{table}` with {field} {args[field]}; known "
                            f"{field}s: {self._known(table)}")
        return i

    # ------------------------------------------------------------------ operations

    def _settable(self, op: Operation) -> list[str] | None:
        """Fields the operation may set (None: any field)."""
        if op.fields is not None:
            return list(op.fields)
        t = self.tables[op.table]
        props = (t.row_schema or {}).get("properties")
        if isinstance(props, dict) and props:
            return list(props)
        return None

    def _unexpected(self, op: Operation, args: dict[str, Any], allowed: list[str]) -> None:
        extra = [a for a in args if a not in allowed]
        if extra:
            raise ToolError(f"`{op.name}` does not take {', '.join(f'`{e}`' for e in extra)}; "
                            f"it takes: {_names(allowed)}")

    def _validate(self, table: str, row: dict[str, Any]) -> None:
        validator = self._validators.get(table)
        if validator is None:
            return
        problems = _schema_errors(validator, row)
        if problems:
            raise ToolError(f"the row is not valid for `{table}`: " + "; ".join(problems))

    def call(self, operation_name: str, args: dict[str, Any] | None = None) -> Any:
        """Run an operation with the agent's arguments; the result is JSON-serialisable."""
        op = self.operations.get(operation_name)
        if op is None:
            raise ToolError(f"service `{self.name}` has no operation `{operation_name}`; it has: "
                            f"{_names(sorted(self.operations))}")
        if op.table not in self._rows:
            raise ToolError(f"service `{self.name}` has no table `{op.table}`")
        args = dict(args or {})
        handler = getattr(self, f"_op_{op.kind}")
        return handler(op, args)

    def _op_list(self, op: Operation, args: dict[str, Any]) -> list[dict[str, Any]]:
        extra = [a for a in args if a not in op.filter_fields and a != "limit"]
        if extra:
            raise ToolError(f"cannot filter `{op.table}` on {', '.join(f'`{e}`' for e in extra)};"
                            f" filterable fields: {_names(op.filter_fields)}")
        limit = _limit(args)
        filters = {f: v for f, v in args.items() if f != "limit" and v is not None}
        out = [r for r in self._rows[op.table]
               if all(_same(r.get(f), v) for f, v in filters.items())]
        return copy_json(out[:limit])

    def _op_get(self, op: Operation, args: dict[str, Any]) -> dict[str, Any]:
        key = self.tables[op.table].key
        self._unexpected(op, args, [key])
        return copy_json(self._rows[op.table][self._need_row(op.table, args)])

    def _op_search(self, op: Operation, args: dict[str, Any]) -> list[dict[str, Any]]:
        self._unexpected(op, args, ["query", "limit"])
        query = args.get("query")
        if not isinstance(query, str) or not query.strip():
            raise ToolError("give `query`, the text to look for")
        limit = _limit(args)
        needle = query.strip().casefold()
        words = needle.split()
        out = []
        for row in self._rows[op.table]:
            if op.search_fields:
                texts = [s for f in op.search_fields for s in _strings(row.get(f))]
            else:
                texts = _strings(row)
            folded = [t.casefold() for t in texts]
            if any(needle in t for t in folded) or (
                    len(words) > 1 and all(any(w in t for t in folded) for w in words)):
                out.append(row)
        return copy_json(out[:limit])

    def _op_create(self, op: Operation, args: dict[str, Any]) -> dict[str, Any]:
        t = self.tables[op.table]
        settable = self._settable(op)
        if settable is not None:
            allowed = settable if op.fields is not None else [*settable, t.key]
            self._unexpected(op, args, list(dict.fromkeys(allowed)))
        missing = [f for f in op.required if args.get(f) is None]
        if missing:
            raise ToolError(f"`{op.name}` needs {', '.join(f'`{m}`' for m in missing)}")
        row: dict[str, Any] = {}
        props = (t.row_schema or {}).get("properties") or {}
        if args.get(t.key) is not None:
            if self._find(op.table, args[t.key]) is not None:
                raise ToolError(f"`{op.table}` already has a row with {t.key} {args[t.key]}")
            key = args[t.key]
        else:
            key = self._next_key(op.table)
        row[t.key] = key
        for name, sch in props.items():
            if isinstance(sch, dict) and "default" in sch and name != t.key:
                row[name] = copy_json(sch["default"])
        row.update({k: copy_json(v) for k, v in args.items() if k != t.key})
        self._validate(op.table, row)
        self._rows[op.table].append(row)
        self.version += 1
        number = self._number_of(op.table, key)
        if number is not None:
            self._counters[op.table] = max(self._counters.get(op.table, 0), number)
        return copy_json(row)

    def _op_update(self, op: Operation, args: dict[str, Any]) -> dict[str, Any]:
        t = self.tables[op.table]
        settable = self._settable(op)
        changes = {k: v for k, v in args.items() if k != t.key}
        if settable is not None:
            self._unexpected(op, args, [t.key, *[f for f in settable if f != t.key]])
        if not changes:
            raise ToolError(f"nothing to update; give {t.key} and at least one field to change "
                            f"({_names([f for f in settable or [] if f != t.key]) if settable else 'any field'})")
        i = self._need_row(op.table, args)
        row = {**copy_json(self._rows[op.table][i]), **copy_json(changes)}
        self._validate(op.table, row)
        self._rows[op.table][i] = row
        self.version += 1
        return copy_json(row)

    def _op_delete(self, op: Operation, args: dict[str, Any]) -> dict[str, Any]:
        key = self.tables[op.table].key
        self._unexpected(op, args, [key])
        i = self._need_row(op.table, args)
        row = self._rows[op.table].pop(i)
        self.version += 1
        return {"deleted": copy_json(row.get(key))}

