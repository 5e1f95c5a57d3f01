"""What every τ²-bench toolset of ours shares: how τ² turns a tool's return value into the text
the agent reads, how its pydantic models word a refused value, how it looks rows up.

`bench import tau2` inlines this file into `tools/<domain>.py` in place of the block marked
`# ---- prelude` … `# ---- end of prelude` (a pack module is one file). It defines no public
function: every public function of a toolset module is a tool.

Written for benchpack from τ²'s documented behaviour (`Environment.to_json_str`, pydantic's
error format); none of τ²'s code is copied here.
"""

import json

PYDANTIC_DOCS = "2.14"
"""The pydantic version (major.minor) in the links of its error texts: the importer writes the
one τ²'s own Python has (`bench import tau2 --tau2`)."""


class Model(dict):
    """A row as τ² returns it: a pydantic model, dumped as it is (its numbers stay numbers)."""


class Tau2:
    """τ²'s rules (static methods only: a class keeps them from being tools)."""

    @staticmethod
    def text(value):
        """The tool message content τ² makes of a return value: a str as it is; anything else
        JSON (`ensure_ascii`, `default=str`) after τ²'s processing, in which models are dumped
        as they are while numbers and booleans outside models become strings."""
        if isinstance(value, str):
            return value
        return json.dumps(Tau2._process(value), default=str)

    @staticmethod
    def _process(value):
        if isinstance(value, Model):
            return dict(value)
        if isinstance(value, str) or value is None:
            return value
        if isinstance(value, (int, float, bool)):
            return str(value)
        if isinstance(value, list):
            return [Tau2._process(v) for v in value]
        if isinstance(value, tuple):
            return tuple(Tau2._process(v) for v in value)
        if isinstance(value, dict):
            return {k: Tau2._process(v) for k, v in value.items()}
        raise ValueError(f"Unsupported type: {type(value)}")

    @staticmethod
    def short_repr(value):
        """How pydantic shows a refused input: Python's repr, cut to 25 + 24 bytes around
        `...` when longer than 50 bytes (never inside a character)."""
        text = repr(value)
        raw = text.encode("utf-8")
        if len(raw) <= 50:
            return text
        return (raw[:25].decode("utf-8", "ignore") + "..."
                + raw[len(raw) - 24:].decode("utf-8", "ignore"))

    @staticmethod
    def strings(model, fields, optional=()):
        """Check, as a pydantic model of `str` fields does, the (name, value) pairs in the
        model's field order: a ValueError worded as pydantic's ValidationError otherwise.
        Names in `optional` also accept None."""
        bad = [(name, value) for name, value in fields
               if not isinstance(value, str) and not (value is None and name in optional)]
        if not bad:
            return
        lines = [f"{len(bad)} validation error{'s' if len(bad) > 1 else ''} for {model}"]
        for name, value in bad:
            lines += [name, "  Input should be a valid string [type=string_type, "
                            f"input_value={Tau2.short_repr(value)}, "
                            f"input_type={type(value).__name__}]",
                      f"    For further information visit https://errors.pydantic.dev/"
                      f"{PYDANTIC_DOCS}/v/string_type"]
        raise ValueError("\n".join(lines))

    @staticmethod
    def row(db, table, key, message):
        """The row τ² finds with `key in <table dict>`: an unhashable key raises Python's own
        TypeError, a key that is not there (or not a str: every key is) `ValueError(message)`."""
        _ = key in _NO_KEYS  # TypeError: unhashable type: 'list', as a dict lookup says
        if not isinstance(key, str):
            raise ValueError(message)
        try:
            return db.get(table, key)
        except Exception:  # State's "no row": τ²'s own message instead
            raise ValueError(message) from None

    @staticmethod
    def toolkit(name, names):
        """Name each tool function `<name>.<tool>`, so that Python's own errors for missing or
        unexpected arguments read as they do for τ²'s toolkit methods."""
        for fn in names.values():
            if callable(fn) and getattr(fn, "__module__", None) == names.get("__name__") \
                    and not fn.__name__.startswith("_") and not isinstance(fn, type):
                fn.__qualname__ = f"{name}.{fn.__name__}"


_NO_KEYS: dict = {}
