"""Schema validation: YAML data → pack-language models, errors → located diagnostics.

The models in `benchpack.specs` are the schema (the published JSON Schema is generated from
them), so validating with them is validating against the JSON Schema. What this module adds is
the translation of validation errors into messages a pack author can act on: the offending key
is pointed at, union branches are collapsed into one message, and near-misses get a
"did you mean" hint.
"""

from __future__ import annotations

import copy
import types
import typing
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

from benchpack.specs import pack as P
from benchpack.specs.pack import Fragment, Pack
from benchpack.specs.plugins import plugin_names

from .diagnostics import LINT_CODES, Diagnostics, PathPart, did_you_mean, suggest, suggest_fix
from .loader import SourceFile, type_name

_TYPE_WORDS = {
    "string_type": "a string",
    "int_type": "a whole number",
    "int_parsing": "a whole number",
    "int_from_float": "a whole number",
    "float_type": "a number",
    "float_parsing": "a number",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "list_type": "a list",
    "tuple_type": "a list",
    "dict_type": "a mapping",
    "model_type": "a mapping",
    "model_attributes_type": "a mapping",
    "datetime_type": "a date-time",
    "datetime_parsing": "a date-time (ISO 8601)",
    "date_type": "a date",
    "date_parsing": "a date (YYYY-MM-DD)",
    "none_required": "nothing",
}

_PATTERN_HINTS = {
    P.ID_PATTERN: "ids use letters, digits, `_`, `-` and `.`, and start with a letter or digit",
    P.NAME_PATTERN: "pack names use lowercase letters, digits, `-` and `_`",
    P.TOOL_NAME_PATTERN: "tool and service names use letters, digits, `_` and `-` (no spaces or dots)",
    P.STYLE_PATTERN: "a style is `NONE` or trait letters E P V Q M I joined by `+`, e.g. `E+Q`",
    P.DURATION_PATTERN: "durations look like `30m`, `2h` or `1d`",
    P.PYTHON_ENTRY_PATTERN: "write `path/to/file.py:function`",
    P.LINT_CODE_PATTERN: "lint codes look like `W304`",
}


@dataclass
class Salvage:
    """What validation dropped from broken files, so that the checks after it neither trip
    over the damage nor report its consequences."""

    names: set[str] = field(default_factory=set)
    """Ids and names of dropped items: references to them are not reported again."""
    dropped: dict[str, list[tuple[PathPart, ...]]] = field(default_factory=dict)
    """File (as shown) → JSON paths of the dropped values and items."""

    def hides(self, file: str, path: tuple[PathPart, ...], severity: str) -> bool:
        """Whether a later diagnostic is a consequence of a drop: it is about a dropped value,
        an error about the very object that lost a key (a rule whose only source was invalid
        "needs a source"), or a lint of an object that lost part of itself."""
        for d in self.dropped.get(file, ()):
            if path[: len(d)] == d:
                return True
            if d and not isinstance(d[-1], int) and path == d[:-1]:
                return True
            if severity == "warning":
                owner = d[:-2] if isinstance(d[-1], int) else d[:-1]
                if path == owner or (owner and not isinstance(d[-1], int)
                                     and path[: len(owner)] == owner):
                    return True
        return False


def validate_file(src: SourceFile, diags: Diagnostics,
                  salvaged: Salvage | None = None) -> Pack | Fragment | None:
    """Validate one loaded file against its model; diagnostics on failure.

    On failure the valid parts are salvaged, so that reference checks and lints still run on
    them; `salvaged` records what was dropped."""
    model: type[Pack] | type[Fragment] = Pack if src.kind == "pack" else Fragment
    try:
        return model.model_validate(src.data)
    except ValidationError as exc:
        report_validation_error(exc, model, src.data, src.shown, diags)
        record = salvaged if salvaged is not None else Salvage()
        return salvage(exc, model, src.data, record, record.dropped.setdefault(src.shown, []))


_DROPPED = object()
"""Stands in for a dropped list item, so that later paths keep the file's indexes."""


def salvage(exc: ValidationError, model: type[Pack] | type[Fragment], data: Any,
            record: Salvage, dropped: list[tuple[PathPart, ...]]) -> Pack | Fragment | None:
    """The model of `data` without its broken parts: an invalid value is dropped (its default
    applies); when that leaves a required key missing, the list item holding it is dropped
    (a workspace file, a session, a persona), and so on outwards."""
    data = copy.deepcopy(data)
    for _ in range(12):
        if not _prune(data, exc, record.names, dropped):
            return None
        try:
            return model.model_validate(_live(data))
        except ValidationError as again:
            exc = again
    return None


def _live(node: Any) -> Any:
    """`node` without the dropped list items."""
    if isinstance(node, dict):
        return {k: _live(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_live(x) for x in node if x is not _DROPPED]
    return node


def _file_loc(data: Any, loc: tuple[Any, ...]) -> tuple[Any, ...]:
    """An error location in the live view → the same location in the file's indexes."""
    out: list[Any] = []
    node = data
    for part in loc:
        if isinstance(node, list) and isinstance(part, int):
            live = [i for i, x in enumerate(node) if x is not _DROPPED]
            if 0 <= part < len(live):
                out.append(live[part])
                node = node[live[part]]
                continue
        out.append(part)
        node = node.get(part) if isinstance(node, dict) else None
    return tuple(out)


def _prune(data: dict[str, Any], exc: ValidationError, names: set[str],
           dropped: list[tuple[PathPart, ...]]) -> bool:
    """Drop what each error points at; False when nothing could be dropped."""
    progress = False
    for err in exc.errors(include_url=False):
        loc = _file_loc(data, err["loc"])
        path, _ = data_path(data, loc, err["type"])
        if loc and loc[-1] == "[key]":  # a key of the wrong type: drop the entry
            path = (*data_path(data, loc[:-2], err["type"])[0], loc[-2])
        if err["type"] == "missing" or not path:
            items = [i for i, part in enumerate(path[:-1]) if isinstance(part, int)]
            if not items:
                if path == ("name",):
                    data["name"] = "pack"
                    progress = True
                    continue
                return False  # the file itself is unusable
            path = path[: items[-1] + 1]
        parent: Any = data
        for part in path[:-1]:
            parent = parent[part]
        last = path[-1]
        if isinstance(parent, dict) and last not in parent:
            last = next((k for k in parent if str(k) == str(last)), last)
        if not _has(parent, last):
            continue
        value = parent[last]
        if last in ("id", "name") and isinstance(value, str):
            names.add(value)  # an item with an invalid id is dropped next
        for item in value if isinstance(value, list) else [value]:
            name = item.get("id", item.get("name")) if isinstance(item, dict) else None
            if isinstance(name, str):
                names.add(name)
        if isinstance(parent, list) and isinstance(last, int):
            parent[last] = _DROPPED
        else:
            del parent[last]
        dropped.append(path)
        progress = True
    return progress


def _has(parent: Any, key: Any) -> bool:
    if isinstance(parent, dict):
        return key in parent
    return (isinstance(parent, list) and isinstance(key, int) and 0 <= key < len(parent)
            and parent[key] is not _DROPPED)


def _comma_hint(parent: Any, key: str) -> str | None:
    """`{text: Done, thanks.}` reads as `text: Done` plus a key `thanks.` with no value: an
    unquoted `, ` inside `{…}` ends the value. The hint shows the quoted text."""
    if not isinstance(parent, dict) or key not in parent or parent[key] is not None:
        return None
    keys = list(parent)
    at = keys.index(key)
    if at == 0 or not isinstance(parent[keys[at - 1]], str):
        return None
    prev = keys[at - 1]
    return (f"inside `{{…}}` an unquoted `, ` ends a value; quote the whole text: "
            f"`{prev}: \"{parent[prev]}, {key}\"`")


def report_validation_error(exc: ValidationError, model: type[BaseModel], data: Any,
                            shown: str, diags: Diagnostics,
                            prefix: tuple[PathPart, ...] = (), root: str = "the top level"
                            ) -> None:
    """Every error of `exc` (from validating `data` with `model`) at its place in the file:
    `prefix` is where `data` sits there, `root` how messages name `data` itself."""
    raw: list[tuple[tuple[PathPart, ...], bool, dict[str, Any]]] = []
    for detail in exc.errors(include_url=False):
        err: dict[str, Any] = dict(detail)
        if err["loc"] and err["loc"][-1] == "[key]":  # a mapping key of the wrong type
            path, _ = data_path(data, err["loc"][:-2], err["type"])
            key = err["input"]
            full = (*prefix, *path, str(key))  # a key, even when it looks like a number
            text = "null" if key is None else str(key).lower() if isinstance(key, bool) else key
            diags.error("E103", f"key `{text}` in {_field(path)} must be a string, found "
                        f"{type_name(key)}", shown, full, "put the key in quotes", at_key=True)
            continue
        path, branched = data_path(data, err["loc"], err["type"])
        raw.append((path, branched, err))
    # A union reports one error per branch. Keep the branch that matches the input's shape:
    # drop "wrong type" errors at a path that also has errors inside it or other errors at it.
    type_errors = {t for t in _TYPE_WORDS} | {"union_tag_not_found", "model_type"}
    kept: list[tuple[tuple[PathPart, ...], dict[str, Any]]] = []
    by_path: dict[tuple[PathPart, ...], list[dict[str, Any]]] = {}
    for path, _, err in raw:
        by_path.setdefault(path, []).append(err)
    for path, branched, err in raw:
        if branched and err["type"] in type_errors:
            deeper = any(len(p) > len(path) and p[: len(path)] == path for p in by_path)
            others = [e for e in by_path[path] if e["type"] not in type_errors]
            if deeper or others:
                continue
        kept.append((path, err))
    merged: dict[tuple[PathPart, ...], list[dict[str, Any]]] = {}
    for path, err in kept:
        merged.setdefault(path, []).append(err)
    for path, errs in merged.items():
        full = prefix + path
        wrong = [e for e in errs if e["type"] in _TYPE_WORDS]
        if len(wrong) > 1:
            expected = _join_or(sorted({_TYPE_WORDS[e["type"]] for e in wrong}))
            diags.error("E103", f"expected {expected}, found {type_name(wrong[0]['input'])}",
                        shown, full)
            errs = [e for e in errs if e not in wrong]
        for err in errs:
            _one(err, path, full, model, data, shown, diags, root)


_BOUNDS = {
    "greater_than_equal": ("at least", "ge"), "greater_than": ("more than", "gt"),
    "less_than_equal": ("at most", "le"), "less_than": ("less than", "lt"),
}


def _join_or(words: list[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]


def data_path(data: Any, loc: tuple[Any, ...], err_type: str) -> tuple[tuple[PathPart, ...], bool]:
    """Turn a pydantic error location into a path that exists in the YAML data: union branch
    tags (`str`, `CommunicationStyle`, `service`…) are dropped. Returns (path, had_branches)."""
    path: list[PathPart] = []
    node = data
    branched = False
    for i, part in enumerate(loc):
        last = i == len(loc) - 1
        if (isinstance(node, dict) and part in node) or (isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node)):
            path.append(part)
            node = node[part]
        elif last and err_type in ("missing", "extra_forbidden") and isinstance(node, dict):
            path.append(part)
        else:
            branched = True  # a union/tag segment, or a `[head, rel, tail]` tuple index
    return tuple(path), branched


_SINGULAR = {
    "personas": "persona", "episodes": "episode", "sessions": "session", "tools": "tool",
    "services": "service", "operations": "operation", "event_streams": "event stream",
    "events": "event", "corpora": "corpus", "documents": "document", "environments":
    "environment", "files": "file", "hidden_intents": "hidden intent", "stages": "stage",
    "triggers": "trigger point", "anchors": "anchor", "dialogue": "dialogue turn",
    "checklist": "checklist item", "triples": "triple", "caps": "cap", "all": "check",
    "any": "check",
}


def node_at(data: Any, path: Sequence[PathPart]) -> Any:
    """The value at `path` in loaded YAML data, or None."""
    node = data
    for part in path:
        if isinstance(node, dict):
            node = node.get(part)
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
        else:
            return None
    return node


def _owner(path: tuple[PathPart, ...], data: Any, root: str = "the top level") -> str:
    """Describe the mapping at `path` for messages: "session `triage`", "the pack"…"""
    node = node_at(data, path)
    name = None
    if isinstance(node, dict):
        for key in ("id", "name", "path", "text"):
            if isinstance(node.get(key), str):
                name = node[key] if len(node[key]) <= 40 else node[key][:37] + "..."
                break
    kind = None
    for i in range(len(path) - 1, -1, -1):
        part = path[i]
        if isinstance(part, str):
            kind = _SINGULAR.get(part, f"`{part}`") if i < len(path) - 1 else f"`{part}`"
            break
    if kind is None:
        return root
    return f"{kind} `{name}`" if name and kind and not kind.startswith("`") else kind


def _field(path: tuple[PathPart, ...]) -> str:
    names = [p for p in path if isinstance(p, str)]
    return f"`{names[-1]}`" if names else "this value"


def _one(err: dict[str, Any], path: tuple[PathPart, ...], full: tuple[PathPart, ...],
         model: type[BaseModel], data: Any, shown: str, diags: Diagnostics,
         root: str = "the top level") -> None:
    kind = err["type"]
    value = err.get("input")
    ctx = err.get("ctx") or {}
    field = _field(path)
    if kind == "extra_forbidden":
        key = str(path[-1]) if path else "?"
        allowed = allowed_keys(model, path[:-1], data)
        parent = node_at(data, path[:-1])
        hint, fix = suggest_fix(key, allowed, "rename_key",
                                parent if isinstance(parent, dict) else ())
        if path and not isinstance(path[-1], str):
            fix = None  # `1:` or `true:` as a key: retyping it is more than a rename
        if hint is None:
            hint = _comma_hint(parent, key)
        if hint is None and allowed:
            hint = "allowed keys here: " + ", ".join(f"`{k}`" for k in sorted(allowed)[:14])
        diags.error("E101", f"unknown key `{key}` in {_owner(path[:-1], data, root)}", shown, full,
                    hint, at_key=True, fix=fix)
    elif kind == "missing":
        key = str(path[-1]) if path else "?"
        diags.error("E102", f"{_owner(path[:-1], data, root)} is missing the required key `{key}`",
                    shown, full[:-1], hint=f"add `{key}: …`")
    elif kind in _TYPE_WORDS:
        hint = None
        if kind == "string_type" and isinstance(value, bool | int | float):
            hint = "put the value in quotes to keep it as text"
        elif kind in ("list_type", "tuple_type") and isinstance(value, str | dict):
            hint = "write a list: one `- item` per line, or `[a, b]`"
        elif kind in ("model_type", "dict_type") and isinstance(value, str):
            hint = "this needs nested `key: value` lines, indented under it"
        elif kind in ("model_type", "dict_type") and path and path[-1] == "count" \
                and isinstance(value, int) and not isinstance(value, bool):
            hint = (f"a count is bounded by a mapping: `count: {{equals: {value}}}`, "
                    f"`{{min: {value}}}` or `{{max: {value}}}`")
        elif kind in ("model_type", "dict_type") and isinstance(value, int | float | bool):
            hint = "this needs `key: value` pairs, as `{key: value}` or indented lines"
        elif value is None:
            hint = "the value is empty; fill it in or remove the key"
        diags.error("E103", f"{field} must be {_TYPE_WORDS[kind]}, found {type_name(value)}",
                    shown, full, hint)
    elif kind == "literal_error":
        expected = ctx.get("expected", "")
        choices = [c.strip() for c in str(expected).replace(" or ", ",").split(",")]
        if field == "`protocol`" and plugin_names():  # the set is open to installed plug-ins
            choices += [f"'{name}'" for name in plugin_names()]
            expected = f"{expected} or an installed plug-in ({', '.join(plugin_names())})"
        hint, fix = suggest_fix(value, [c.strip("'") for c in choices]) if isinstance(
            value, str) else (None, None)
        if fix is not None and f"'{fix.new}'" not in choices:
            fix = None  # a number or boolean choice: the text `1` would not become the number
        diags.error("E104", f"{field} cannot be `{value}`; expected {expected}", shown, full, hint,
                    fix=fix)
    elif kind in ("union_tag_invalid", "union_tag_not_found"):
        disc = str(ctx.get("discriminator", "kind")).strip("'")
        if kind == "union_tag_not_found":
            diags.error("E102", f"{field} is missing `{disc}`", shown, full,
                        hint=f"add `{disc}: …` to say which kind of {field.strip('`')} this is")
        else:
            tags = ctx.get("expected_tags", "")
            tag = ctx.get("tag")
            choices = [t.strip().strip("'") for t in str(tags).split(",")]
            hint, fix = suggest_fix(tag, choices) if isinstance(tag, str) else (
                did_you_mean(str(tag), choices), None)
            diags.error("E104", f"unknown {disc} `{tag}` for {field}; expected one of {tags}",
                        shown, (*full, disc), hint, fix=fix)
    elif kind == "string_pattern_mismatch":
        pattern = str(ctx.get("pattern", ""))
        hint, fix = None, None
        if pattern == P.LINT_CODE_PATTERN and isinstance(value, str):
            hint, fix = suggest_fix(value, LINT_CODES)  # `w304`; `W3O4` is W304 or W314
        diags.error("E104", f"`{value}` is not a valid value for {field}", shown, full,
                    hint if fix else _PATTERN_HINTS.get(pattern, f"must match {pattern}"),
                    fix=fix)
    elif kind in _BOUNDS:
        words, key = _BOUNDS[kind]
        diags.error("E104", f"{field} must be {words} {ctx.get(key)}, found {value}", shown, full)
    elif kind == "value_error":
        msg = str(err.get("msg", "invalid value")).removeprefix("Value error, ")
        diags.error("E104", f"{field}: {msg}", shown, full)
    else:
        msg = str(err.get("msg", "invalid value"))
        diags.error("E104", f"{field}: {msg[0].lower() + msg[1:] if msg else msg}", shown, full)


# --------------------------------------------------------------------------- model walking


def _unwrap(tp: Any) -> list[Any]:
    """Flatten Optional/Union/Annotated into candidate types."""
    origin = get_origin(tp)
    if origin is typing.Annotated:
        return _unwrap(get_args(tp)[0])
    if origin in (Union, types.UnionType):
        out: list[Any] = []
        for a in get_args(tp):
            out.extend(_unwrap(a))
        return out
    return [tp]


def _is_model(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, BaseModel)


def _model_keys(model: type[BaseModel]) -> list[str]:
    return [f.alias or name for name, f in model.model_fields.items()]


def _pick(cands: list[Any], node: Any) -> Any:
    """Choose the union member describing `node`."""
    models = [c for c in cands if _is_model(c)]
    if isinstance(node, dict) and models:
        kind = node.get("kind")
        for m in models:
            f = m.model_fields.get("kind")
            if f is not None and kind in get_args(f.annotation):
                return m
        return models[0]
    for c in cands:
        if get_origin(c) in (list, dict, tuple):
            return c
    return cands[0] if cands else None


def allowed_keys(root: type[BaseModel], path: tuple[PathPart, ...], data: Any) -> list[str]:
    """Field names (aliases) of the model describing the mapping at `path`."""
    tp: Any = root
    node = data
    for part in path:
        cands = _unwrap(tp)
        tp = _pick(cands, node)
        if tp is None:
            return []
        if _is_model(tp):
            fields = {(f.alias or n): f for n, f in tp.model_fields.items()}
            if not isinstance(part, str) or part not in fields:
                return []
            tp = fields[part].annotation
        elif get_origin(tp) is list:
            tp = get_args(tp)[0]
        elif get_origin(tp) is dict:
            tp = get_args(tp)[1]
        else:
            return []
        if isinstance(node, dict):
            node = node.get(part)
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
        else:
            node = None
    final = _pick(_unwrap(tp), node)
    return _model_keys(final) if _is_model(final) else []


__all__ = ["allowed_keys", "node_at", "report_validation_error", "suggest", "validate_file"]
