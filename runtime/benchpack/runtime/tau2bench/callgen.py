"""The calls `bench parity tau2` makes: every task's gold list, and seeded generated calls.

Generated calls are built from the tools' parameter schemas (τ²'s, `$ref`s resolved) and the
domain's own data, by parameter name, so the same code serves retail, mock and airline:
- a value pool per field name from the database (`order_id`, `zip`, `item_id`, … and the keys
  of id-keyed maps: `payment_methods` → `payment_method_id`) and from the gold arguments;
- coherent calls: an anchor row (a row whose key the tool takes, e.g. an order) fills the
  other parameters from itself and the rows it names (its user's payment methods, its items),
  and `new_<x>` lists take, position by position, a sibling of each `<x>` (another variant of
  the same product) — so item changes, exchanges and payments mostly succeed;
- then, at random, the mistakes an agent makes: missing and extra arguments, wrong types, ids
  that do not exist, names in other cases, lists permuted, duplicated, emptied or strings.
Calls are grouped into sequences on a fresh database, anchors reused within a sequence, so
state changes interact (a cancelled order then refused a change). Pure: no I/O.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

WRONG_TYPES: list[Any] = [123, 4.5, True, None, [], ["x"], {"a": 1}, ""]
WORDS = ["order", "refund", "please", "café", "naïve", "中文", "help", "user", "blue", "XL"]


@dataclass
class Call:
    name: str
    arguments: dict[str, Any]
    how: str = ""
    """How it was made (`gold`, `coherent`, `template`, `random`, and each mutation)."""
    requestor: str = "assistant"
    """Whose tool it is: `user` for the user's own tools (dual control, issue 24)."""

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "arguments": self.arguments}
        if self.requestor != "assistant":  # the driver's default: older requests unchanged
            out["requestor"] = self.requestor
        return out


@dataclass
class Sequence:
    id: str
    calls: list[Call]
    task_id: str | None = None
    """Start from this task's initial state (τ²'s; the gold lists), else the released DB."""


@dataclass
class Tool:
    name: str
    parameters: dict[str, Any]
    mutates: bool = False


@dataclass
class _Pools:
    by_name: dict[str, list[Any]] = field(default_factory=dict)
    maps: dict[str, list[list[str]]] = field(default_factory=dict)
    """A key → the key lists of the maps holding it (its siblings)."""
    tables: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Table → key → row."""
    key_field: dict[str, str] = field(default_factory=dict)
    """Table → key field name."""

    def add(self, name: str, value: Any) -> None:
        values = self.by_name.setdefault(name, [])
        if len(values) < 5000 and value not in values[-50:]:
            values.append(value)


def singular(name: str) -> str:
    """`item_ids` → `item_id`, `new_item_ids` → `item_id`, `payment_methods` →
    `payment_method`."""
    if name.startswith("new_"):
        name = name[4:]
    if name.endswith("ids"):
        return name[:-1]
    if name.endswith("ies"):
        return name[:-3] + "y"
    return name[:-1] if name.endswith("s") and not name.endswith("ss") else name


def build_pools(db: Mapping[str, Any], gold: Iterable[Call]) -> _Pools:
    pools = _Pools()
    for table, rows in db.items():
        if not isinstance(rows, dict):
            continue
        pools.tables[table] = dict(rows)
        first = next(iter(rows.values()), None)
        if isinstance(first, dict):
            for f in first:
                if all(isinstance(r, dict) and r.get(f) == k for k, r in rows.items()):
                    pools.key_field[table] = f
                    break
        for key in rows:
            pools.add(singular(table) + "_id", key)
        _walk(rows, pools)
    for call in gold:
        for name, value in call.arguments.items():
            _walk_arg(name, value, pools)
    return pools


def _walk(value: Any, pools: _Pools, name: str = "") -> None:
    if isinstance(value, dict):
        if name and value and all(isinstance(v, dict) for v in value.values()):
            keys = list(value)
            for k in keys:
                pools.maps.setdefault(k, []).append(keys)
                pools.add(singular(name) + "_id", k)
        for k, v in value.items():
            _walk(v, pools, str(k))
    elif isinstance(value, list):
        for v in value:
            _walk(v, pools, singular(name))
    elif name and value is not None:
        pools.add(name, value)


def _walk_arg(name: str, value: Any, pools: _Pools) -> None:
    if isinstance(value, list):
        for v in value:
            _walk_arg(singular(name), v, pools)
    elif isinstance(value, dict):
        for k, v in value.items():
            _walk_arg(k, v, pools)
    elif value is not None:
        pools.add(name, value)


class CallMaker:
    """Seeded calls over one domain (see the module docstring)."""

    def __init__(self, tools: list[Tool], db: Mapping[str, Any], gold: list[Call],
                 seed: int = 0) -> None:
        self.tools = tools
        self.rng = random.Random(seed)
        self.pools = build_pools(db, gold)
        self.templates: dict[str, list[Call]] = {}
        for call in gold:
            self.templates.setdefault(call.name, []).append(call)

    # ------------------------------------------------------------------ values

    def _resolve(self, schema: Any, root: Mapping[str, Any]) -> dict[str, Any]:
        if not isinstance(schema, dict):
            return {}
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/"):
            node: Any = root
            for part in ref[2:].split("/"):
                node = node.get(part, {}) if isinstance(node, dict) else {}
            return self._resolve(node, root)
        options = schema.get("anyOf") or schema.get("oneOf")
        if options:
            real = [o for o in options if self._resolve(o, root).get("type") != "null"] \
                or options
            return self._resolve(real[0], root)  # the first real branch (a model over a dict)
        return schema

    def value(self, name: str, schema: Any, root: Mapping[str, Any],
              local: Mapping[str, list[Any]] | None = None, depth: int = 0) -> Any:
        """A plausible value for parameter `name`: from the anchor's neighbourhood, the
        pools, the enum, or made up from the type."""
        s = self._resolve(schema, root)
        kind = s.get("type")
        if "enum" in s and self.rng.random() < 0.8:
            return self.rng.choice(s["enum"])
        if kind == "array":
            item = s.get("items", {})
            one = singular(name)
            n = self.rng.choice([1, 1, 2, 2, 3])
            return [self.value(one, item, root, local, depth + 1) for _ in range(n)]
        if kind == "object" and depth < 4:
            props = s.get("properties") or {}
            return {k: self.value(k, v, root, local, depth + 1) for k, v in props.items()}
        for pool in ((local or {}).get(name), self.pools.by_name.get(name),
                     (local or {}).get(singular(name)), self.pools.by_name.get(singular(name))):
            typed = [v for v in pool or [] if _fits(v, kind)]
            if typed:
                return self.rng.choice(typed)
        return _made_up(kind, self.rng)

    def _anchor(self, tool: Tool, reuse: list[tuple[str, str]]) -> tuple[str, str] | None:
        """A row the tool takes the key of (reused from the sequence half the time)."""
        props = tool.parameters.get("properties") or {}
        tables = [t for t, f in self.pools.key_field.items() if f in props]
        if not tables:
            return None
        fitting = [a for a in reuse if a[0] in tables]
        if fitting and self.rng.random() < 0.5:
            return self.rng.choice(fitting)
        table = self.rng.choice(tables)
        return table, self.rng.choice(list(self.pools.tables[table]))

    def _neighbourhood(self, table: str, key: str
                       ) -> tuple[dict[str, list[Any]], dict[str, list[Any]]]:
        """Values by field name in the anchor row, and in it and the rows it names (one hop:
        an order's user and products)."""
        own = _Pools()
        _walk(self.pools.tables[table][key], own)
        near = _Pools()
        _walk(self.pools.tables[table][key], near)
        for values in [list(v) for v in own.by_name.values()]:
            for v in values:
                for t, rows in self.pools.tables.items():
                    if isinstance(v, str) and v in rows and t != table:
                        _walk(rows[v], near)
        return own.by_name, near.by_name

    # ------------------------------------------------------------------ calls

    def coherent(self, tool: Tool, reuse: list[tuple[str, str]]) -> Call:
        root = tool.parameters
        props = root.get("properties") or {}
        anchor = self._anchor(tool, reuse)
        own: dict[str, list[Any]] = {}
        local: dict[str, list[Any]] = {}
        args: dict[str, Any] = {}
        if anchor is not None:
            own, local = self._neighbourhood(*anchor)
            args[self.pools.key_field[anchor[0]]] = anchor[1]
            reuse.append(anchor)
        for name, schema in props.items():
            if name in args:
                continue
            if name.startswith("new_") and name[4:] in props:
                continue  # after the list it follows
            s = self._resolve(schema, root)
            if s.get("type") == "array" and own.get(singular(name)):
                have = list(dict.fromkeys(own[singular(name)]))
                k = self.rng.randint(1, min(3, len(have)))
                args[name] = self.rng.sample(have, k)
            else:
                args[name] = self.value(name, schema, root, local)
        for name in props:
            if name.startswith("new_") and name[4:] in props:
                olds = args.get(name[4:])
                if isinstance(olds, list):
                    args[name] = [self._sibling(v) for v in olds]
                else:
                    args[name] = self.value(name, props[name], root, local)
        return Call(tool.name, {k: args[k] for k in props if k in args},
                    "coherent" if anchor else "random")

    def _sibling(self, value: Any) -> Any:
        groups = self.pools.maps.get(value) if isinstance(value, str) else None
        if not groups:
            return value
        keys = self.rng.choice(groups)
        others = [k for k in keys if k != value]
        if others and self.rng.random() < 0.9:
            return self.rng.choice(others)
        return value

    def template(self, tool: Tool) -> Call | None:
        calls = self.templates.get(tool.name)
        if not calls:
            return None
        return Call(tool.name, copy.deepcopy(self.rng.choice(calls).arguments), "template")

    def mutate(self, call: Call, tool: Tool) -> Call:
        """One mistake an agent makes (see the module docstring)."""
        args = copy.deepcopy(call.arguments)
        props = tool.parameters.get("properties") or {}
        names = list(args)
        choice = self.rng.choice(["missing", "extra", "type", "list", "id", "case", "swap"])
        if choice == "missing" and names:
            del args[self.rng.choice(names)]
        elif choice == "extra":
            args[self.rng.choice(["foo", "user", "order", "note", "id"])] = \
                self.rng.choice(["x", 1, None])
        elif choice == "type" and names:
            args[self.rng.choice(names)] = copy.deepcopy(self.rng.choice(WRONG_TYPES))
        elif choice == "list" and any(isinstance(args[n], list) for n in names):
            n = self.rng.choice([n for n in names if isinstance(args[n], list)])
            args[n] = _list_mistake(args[n], self.rng)
        elif choice == "id" and names:
            n = self.rng.choice(names)
            args[n] = _missing_id(args[n], self.rng)
        elif choice == "case" and any(isinstance(args[n], str) for n in names):
            n = self.rng.choice([n for n in names if isinstance(args[n], str)])
            args[n] = _case(args[n], self.rng)
        elif choice == "swap" and props:
            n = self.rng.choice(list(props))
            args[n] = self.value(n, props[n], tool.parameters)
        else:
            return self.mutate(call, tool) if self.rng.random() < 0.5 else call
        return Call(call.name, args, f"{call.how}+{choice}")

    def one(self, reuse: list[tuple[str, str]]) -> Call:
        weights = [3 if t.mutates else 1 for t in self.tools]
        tool = self.rng.choices(self.tools, weights)[0]
        roll = self.rng.random()
        call = self.template(tool) if roll < 0.2 else None
        if call is None:
            call = self.coherent(tool, reuse)
        if tool.name == "calculate" and "expression" in call.arguments:
            call.arguments["expression"] = _expression(self.rng)
        if self.rng.random() < 0.4:
            call = self.mutate(call, tool)
        return call

    def sequences(self, n_calls: int, prefix: str = "gen") -> list[Sequence]:
        out: list[Sequence] = []
        made = 0
        while made < n_calls:
            length = min(self.rng.randint(3, 12), n_calls - made)
            reuse: list[tuple[str, str]] = []
            calls = [self.one(reuse) for _ in range(length)]
            out.append(Sequence(f"{prefix}-{len(out) + 1}", calls))
            made += length
        return out


def gold_sequences(tasks: list[dict[str, Any]], permute_seed: int | None = None
                   ) -> list[Sequence]:
    """Each task's gold actions as one sequence from its initial state; with `permute_seed`,
    the same with every list argument of a state-changing call shuffled (the same request
    in another order: τ²'s result may depend on it)."""
    rng = random.Random(permute_seed)
    out = []
    for task in tasks:
        actions = (task.get("evaluation_criteria") or {}).get("actions") or []
        calls = [Call(str(a["name"]), copy.deepcopy(a.get("arguments") or {}), "gold",
                      str(a.get("requestor") or "assistant")) for a in actions]
        if not calls:
            continue
        if permute_seed is not None:
            changed = False
            for c in calls:
                changed = _permute_lists(c, rng) or changed
                c.how = "gold+permuted"
            if not changed:
                continue
        out.append(Sequence(f"{'permuted' if permute_seed is not None else 'gold'}-"
                            f"{task.get('id')}", calls, str(task.get("id"))))
    return out


def _permute_lists(call: Call, rng: random.Random) -> bool:
    """Shuffle the call's lists; `new_<x>` with `<x>` in one order (the same request, listed
    in another order). Whether anything moved."""
    args = call.arguments
    moved = False
    for k, v in list(args.items()):
        if not isinstance(v, list) or len(v) < 2 or k.startswith("new_"):
            continue
        order = _shuffled(list(range(len(v))), rng)
        args[k] = [v[i] for i in order]
        partner = args.get(f"new_{k}")
        if isinstance(partner, list) and len(partner) == len(v):
            args[f"new_{k}"] = [partner[i] for i in order]
        moved = moved or args[k] != v
    return moved


def _shuffled(values: list[Any], rng: random.Random) -> list[Any]:
    """Another order of `values` (rotated when shuffling left it as it was)."""
    out = list(values)
    rng.shuffle(out)
    if out == values and len(values) > 1:
        out = out[1:] + out[:1]
    return out


def _fits(value: Any, kind: Any) -> bool:
    if kind == "string":
        return isinstance(value, str)
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    if kind == "boolean":
        return isinstance(value, bool)
    return value is not None


def _made_up(kind: Any, rng: random.Random) -> Any:
    if kind == "integer":
        return rng.choice([0, 1, 2, 3, 5, 10, -1])
    if kind == "number":
        return rng.choice([0, 1.5, 10, 99.99, -3.25])
    if kind == "boolean":
        return rng.choice([True, False])
    if kind == "array":
        return []
    if kind == "object":
        return {}
    return " ".join(rng.sample(WORDS, rng.randint(1, 3)))


def _list_mistake(values: list[Any], rng: random.Random) -> Any:
    kind = rng.choice(["permute", "duplicate", "empty", "drop", "string"])
    if kind == "permute" and len(values) > 1:
        return _shuffled(values, rng)
    if kind == "duplicate" and values:
        return [*values, rng.choice(values)]
    if kind == "empty":
        return []
    if kind == "drop" and len(values) > 1:
        return values[1:]
    if kind == "string" and values:
        return values[0]
    return list(reversed(values))


def _missing_id(value: Any, rng: random.Random) -> Any:
    if isinstance(value, str) and value:
        return rng.choice([value[:-1] + ("0" if value[-1] != "0" else "1"), value + "x",
                           value.lstrip("#"), value.upper(), f" {value}", "nonexistent"])
    return rng.choice(["nonexistent", "#W0000000", "user_0"])


def _case(value: str, rng: random.Random) -> str:
    out: str = rng.choice([value.upper(), value.lower(), value.title(), f" {value} ",
                           value.replace("e", "é"), value.replace("a", "á")])
    return out


def _expression(rng: random.Random) -> str:
    if rng.random() < 0.2:
        return rng.choice(["1/0", "(1+2", "2 3", "", " ", "2^3", "abc", "1e5", "()", "-",
                           "10 % 3", "3..2", "(((1)))", "1/3", "2*-3"])
    parts = [str(rng.choice([rng.randint(0, 999), round(rng.uniform(0, 500), 2)]))]
    for _ in range(rng.randint(1, 4)):
        parts += [rng.choice(["+", "-", "*", "/"]), str(rng.choice(
            [rng.randint(1, 999), round(rng.uniform(0.01, 500), 2)]))]
    text = " ".join(parts)
    if rng.random() < 0.3:
        text = f"({text})"
    return text
