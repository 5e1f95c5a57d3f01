"""Schema validation: YAML data → pack-language models, errors → located diagnostics.

The models in `benchpack.specs` are the schema (the published JSON Schema is generated from
them), so validating with them is validating against the JSON Schema. What this module adds is
the translation of validation errors into messages a pack author can act on: the offending key
is pointed at, union branches are collapsed into one message, and near-misses get a
"did you mean" hint.
"""

from __future__ import annotations

import types
import typing
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

from benchpack.specs import pack as P
from benchpack.specs.pack import Fragment, Pack

from .diagnostics import Diagnostics, PathPart, did_you_mean, suggest
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


_ITEM_MODELS: dict[str, type[BaseModel]] = {
    "personas": P.Persona, "tools": P.Tool, "services": P.Service,
    "event_streams": P.EventStream, "corpora": P.Corpus, "environments": P.Environment,
    "episodes": P.Episode,
}


def validate_file(src: SourceFile, diags: Diagnostics,
                  broken: dict[str, set[str]] | None = None) -> Pack | Fragment | None:
    """Validate one loaded file against its model; diagnostics on failure.

    On failure the valid parts are salvaged (every list item that validates on its own), so
    that reference checks and lints still run on them, and the names of the invalid items are
    added to `broken` so that references to them are not reported a second time."""
    model: type[Pack] | type[Fragment] = Pack if src.kind == "pack" else Fragment
    try:
        return model.model_validate(src.data)
    except ValidationError as exc:
        report_validation_error(exc, model, src.data, src.shown, diags)
    return _salvage(src, model, broken if broken is not None else {})


def _salvage(src: SourceFile, model: type[Pack] | type[Fragment],
             broken: dict[str, set[str]]) -> Pack | Fragment | None:
    data = dict(src.data)
    for key, item_model in _ITEM_MODELS.items():
        items = data.get(key)
        if not isinstance(items, list):
            data.pop(key, None)
            continue
        kept = []
        for item in items:
            if key == "episodes" and isinstance(item, dict):
                item = _salvage_episode(item, broken)
            try:
                item_model.model_validate(item)
                kept.append(item)
            except ValidationError:
                if isinstance(item, dict):
                    name = item.get("id", item.get("name"))
                    if isinstance(name, str):
                        broken.setdefault(key, set()).add(name)
        data[key] = kept
    try:
        return model.model_validate(data)
    except ValidationError:
        if model is Pack:
            try:  # keep the pack's name and lists even when a manifest field is broken
                minimal = {k: data[k] for k in _ITEM_MODELS if k in data}
                minimal["name"] = data.get("name") if isinstance(data.get("name"), str) else "pack"
                return Pack.model_validate(minimal)
            except ValidationError:
                return None
        return None


def _salvage_episode(item: dict[str, Any], broken: dict[str, set[str]]) -> dict[str, Any]:
    sessions = item.get("sessions")
    if not isinstance(sessions, list):
        return item
    kept = []
    for s in sessions:
        try:
            P.Session.model_validate(s)
            kept.append(s)
        except ValidationError:
            if isinstance(s, dict) and isinstance(s.get("id"), str):
                broken.setdefault("sessions", set()).add(s["id"])
    return {**item, "sessions": kept}


def report_validation_error(exc: ValidationError, model: type[BaseModel], data: Any,
                            shown: str, diags: Diagnostics,
                            prefix: tuple[PathPart, ...] = ()) -> None:
    raw: list[tuple[tuple[PathPart, ...], bool, dict[str, Any]]] = []
    for detail in exc.errors(include_url=False):
        err: dict[str, Any] = dict(detail)
        if err["loc"] and err["loc"][-1] == "[key]":  # a mapping key of the wrong type
            path, _ = data_path(data, err["loc"][:-2], err["type"])
            key = err["input"]
            full = (*prefix, *path, key if isinstance(key, str | int) else str(key))
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
            _one(err, path, full, model, data, shown, diags)


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


def _owner(path: tuple[PathPart, ...], data: Any) -> str:
    """Describe the mapping at `path` for messages: "session `triage`", "the pack"…"""
    node = data
    for part in path:
        if isinstance(node, dict):
            node = node.get(part)
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
        else:
            node = None
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
        return "the top level"
    return f"{kind} `{name}`" if name and kind and not kind.startswith("`") else kind


def _field(path: tuple[PathPart, ...]) -> str:
    names = [p for p in path if isinstance(p, str)]
    return f"`{names[-1]}`" if names else "this value"


def _one(err: dict[str, Any], path: tuple[PathPart, ...], full: tuple[PathPart, ...],
         model: type[BaseModel], data: Any, shown: str, diags: Diagnostics) -> None:
    kind = err["type"]
    value = err.get("input")
    ctx = err.get("ctx") or {}
    field = _field(path)
    if kind == "extra_forbidden":
        key = str(path[-1]) if path else "?"
        allowed = allowed_keys(model, path[:-1], data)
        hint = did_you_mean(key, allowed) if allowed else None
        if hint is None and allowed:
            hint = "allowed keys here: " + ", ".join(f"`{k}`" for k in sorted(allowed)[:14])
        diags.error("E101", f"unknown key `{key}` in {_owner(path[:-1], data)}", shown, full,
                    hint, at_key=True)
    elif kind == "missing":
        key = str(path[-1]) if path else "?"
        diags.error("E102", f"{_owner(path[:-1], data)} is missing the required key `{key}`",
                    shown, full[:-1], hint=f"add `{key}: …`")
    elif kind in _TYPE_WORDS:
        hint = None
        if kind == "string_type" and isinstance(value, bool | int | float):
            hint = "put the value in quotes to keep it as text"
        elif kind in ("list_type", "tuple_type") and isinstance(value, str | dict):
            hint = "write a list: one `- item` per line, or `[a, b]`"
        elif kind in ("model_type", "dict_type") and isinstance(value, str):
            hint = "this needs nested `key: value` lines, indented under it"
        elif value is None:
            hint = "the value is empty; fill it in or remove the key"
        diags.error("E103", f"{field} must be {_TYPE_WORDS[kind]}, found {type_name(value)}",
                    shown, full, hint)
    elif kind == "literal_error":
        expected = ctx.get("expected", "")
        choices = [c.strip().strip("'") for c in str(expected).replace(" or ", ",").split(",")]
        hint = did_you_mean(str(value), choices) if isinstance(value, str) else None
        diags.error("E104", f"{field} cannot be `{value}`; expected {expected}", shown, full, hint)
    elif kind in ("union_tag_invalid", "union_tag_not_found"):
        tags = ctx.get("expected_tags", "")
        tag = ctx.get("tag")
        choices = [t.strip().strip("'") for t in str(tags).split(",")]
        if kind == "union_tag_not_found":
            diags.error("E102", f"{field} is missing `{ctx.get('discriminator', 'kind')}`", shown,
                        full, hint=f"one of {tags}")
        else:
            diags.error("E104", f"unknown kind `{tag}` for {field}; expected one of {tags}", shown,
                        full, did_you_mean(str(tag), choices))
    elif kind == "string_pattern_mismatch":
        pattern = str(ctx.get("pattern", ""))
        diags.error("E104", f"`{value}` is not a valid value for {field}", shown, full,
                    _PATTERN_HINTS.get(pattern, f"must match {pattern}"))
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


__all__ = ["allowed_keys", "report_validation_error", "suggest", "validate_file"]
