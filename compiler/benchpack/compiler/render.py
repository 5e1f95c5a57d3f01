"""Sandboxed Jinja rendering of pack text fields.

The compiler never executes pack content: templates run in an immutable sandbox with
StrictUndefined, so a typo in a variable name is an error, not an empty string, and templates
cannot reach Python internals or mutate the objects they are given.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from jinja2 import StrictUndefined, TemplateSyntaxError, UndefinedError
from jinja2.exceptions import SecurityError, TemplateError
from jinja2.sandbox import ImmutableSandboxedEnvironment

MAX_OUTPUT_CHARS = 1_000_000


class _Env(ImmutableSandboxedEnvironment):
    # Ranges and string repetition are the classic ways to make a sandboxed template expensive.
    def call(self, context: Any, obj: Any, *args: Any, **kwargs: Any) -> Any:
        if obj is range and args and any(isinstance(a, int) and abs(a) > 10_000 for a in args):
            raise SecurityError("range() too large in a pack template")
        return super().call(context, obj, *args, **kwargs)

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        if operator in ("*", "**") and (
            (isinstance(left, str | list) and isinstance(right, int) and right > 10_000)
            or (isinstance(right, str | list) and isinstance(left, int) and left > 10_000)
            or (operator == "**" and isinstance(right, int) and right > 100)
        ):
            raise SecurityError("operation too large in a pack template")
        return super().call_binop(context, operator, left, right)


ENV = _Env(undefined=StrictUndefined, autoescape=False, keep_trailing_newline=True)
ENV.intercepted_binops = frozenset({"*", "**"})


class RenderError(Exception):
    def __init__(self, code: str, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.hint = hint


def needs_render(text: str) -> bool:
    return "{{" in text or "{%" in text or "{#" in text


@lru_cache(maxsize=4096)
def _compile(source: str) -> Any:
    return ENV.from_string(source)


def check_syntax(source: str) -> RenderError | None:
    """Parse a template without running it (prompt overrides are rendered at run time)."""
    try:
        ENV.parse(source)
    except TemplateSyntaxError as exc:
        return RenderError("E208", f"template syntax error on template line {exc.lineno}: {exc.message}")
    return None


def render(source: str, context: dict[str, Any]) -> str:
    """Render one text field. Raises RenderError with a diagnostic code."""
    if not needs_render(source):
        return source
    try:
        out = _compile(source).render(context)
    except TemplateSyntaxError as exc:
        raise RenderError("E208", f"template syntax error: {exc.message}",
                          "close every `{{` with `}}` and every `{%` with `%}`") from None
    except UndefinedError as exc:
        names = ", ".join(f"`{k}`" for k in sorted(context))
        raise RenderError("E209", f"template uses an undefined value: {exc.message}",
                          f"available names: {names}") from None
    except SecurityError as exc:
        raise RenderError("E210", f"template not allowed: {exc}") from None
    except TemplateError as exc:
        raise RenderError("E208", f"template error: {exc}") from None
    except Exception as exc:  # arithmetic errors and the like inside expressions
        raise RenderError("E208", f"template failed: {type(exc).__name__}: {exc}") from None
    if len(out) > MAX_OUTPUT_CHARS:
        raise RenderError("E210", "template output exceeds 1,000,000 characters")
    return str(out)
