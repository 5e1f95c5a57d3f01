"""Prompt templates, strict output parsing, and the retry-once-then-record policy.

Judge output is parsed strictly. A malformed answer is retried once with the parse error shown
to the model; a second failure becomes a `JudgeError` that callers record and exclude from
scores. Nothing is ever silently scored as NO.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any, Protocol, TypeVar

from ..types import LLMCallRecord

T = TypeVar("T")


@lru_cache(maxsize=1)
def environment() -> Any:
    """The sandboxed Jinja environment prompts render in, made on the first render: jinja2's
    import (~30 ms) is no part of a run whose judges and simulator are rules or scripts."""
    from jinja2 import StrictUndefined
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    return ImmutableSandboxedEnvironment(undefined=StrictUndefined, autoescape=False,
                                         keep_trailing_newline=True)


class ParseError(ValueError):
    """The model's output is not in the required shape."""


class JudgeError(Exception):
    """A judge (or simulator) failed to give a usable answer after its retry."""

    def __init__(self, purpose: str, message: str, role: str = "judge") -> None:
        super().__init__(f"{purpose}: {message}")
        self.purpose = purpose
        self.message = message
        self.role = role
        """The role that failed (`judge`, `simulator`, `planner`): it decides the error kind
        of a session this failure ends."""


@lru_cache(maxsize=64)
def default_template(name: str) -> str:
    path = resources.files("benchpack.runtime.judges") / "prompts" / f"{name}.j2"
    return str(path.read_text(encoding="utf-8"))


class Templates:
    """Built-in prompt templates, overridden by the plan's `prompts`."""

    def __init__(self, overrides: Mapping[str, str] | None = None) -> None:
        self.overrides = dict(overrides or {})

    def render(self, name: str, **context: Any) -> str:
        source = self.overrides.get(name) or default_template(name)
        return str(_compile(source).render(**context))


def templates_fingerprint(overrides: Mapping[str, str] | None = None) -> str:
    """sha256 over every prompt template a run renders (built-ins with the plan's overrides):
    stored with the run so that `bench compare` can tell runs prompted differently apart,
    even under one benchpack version (an edited install)."""
    import hashlib

    folder = resources.files("benchpack.runtime.judges") / "prompts"
    names = sorted({p.name[:-3] for p in folder.iterdir() if p.name.endswith(".j2")}
                   | set(overrides or {}))
    digest = hashlib.sha256()
    for name in names:
        source = (overrides or {}).get(name) or default_template(name)
        digest.update(json.dumps([name, source]).encode())
    return digest.hexdigest()


@lru_cache(maxsize=256)
def _compile(source: str) -> Any:
    return environment().from_string(source)


_FENCE = re.compile(r"```(?:json)?\s*(.*?)\s*```", re.DOTALL)


def extract_json(text: str) -> Any:
    """The single JSON object in `text` (a ```json fence is tolerated, prose is not)."""
    stripped = text.strip()
    fence = _FENCE.fullmatch(stripped)
    if fence:
        stripped = fence.group(1).strip()
    if not stripped.startswith("{") or not stripped.endswith("}"):
        raise ParseError("the answer must be a single JSON object and nothing else")
    try:
        return json.loads(stripped)
    except json.JSONDecodeError as exc:
        raise ParseError(f"invalid JSON: {exc.msg} at position {exc.pos}") from None


def parse_decisions(text: str, ids: list[str], key: str = "decisions",
                    field: str = "decision") -> dict[str, bool]:
    """`{"decisions": [{"id": ..., "decision": "YES"|"NO"}]}` covering exactly `ids`."""
    data = extract_json(text)
    items = data.get(key) if isinstance(data, dict) else None
    if not isinstance(items, list):
        raise ParseError(f"missing the `{key}` list")
    out: dict[str, bool] = {}
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("id"), str):
            raise ParseError(f"every entry of `{key}` needs an `id`")
        value = item.get(field)
        if not isinstance(value, str) or value.strip().upper() not in ("YES", "NO"):
            raise ParseError(f"`{field}` for `{item['id']}` must be YES or NO, got {value!r}")
        if item["id"] in out:
            raise ParseError(f"`{item['id']}` is judged twice")
        out[item["id"]] = value.strip().upper() == "YES"
    missing = [i for i in ids if i not in out]
    extra = [i for i in out if i not in ids]
    if missing or extra:
        raise ParseError(f"ids must be exactly {ids}; missing {missing}, unexpected {extra}")
    return out


def parse_reasons(text: str, key: str = "scores") -> dict[str, str]:
    data = extract_json(text)
    out: dict[str, str] = {}
    for item in data.get(key, []) if isinstance(data, dict) else []:
        if isinstance(item, dict) and isinstance(item.get("id"), str):
            out[item["id"]] = str(item.get("reason") or "")
    return out


@lru_cache(maxsize=64)
def _tag_pattern(tag: str) -> re.Pattern[str]:
    return re.compile(rf"<{tag}>(.*?)</{tag}>", re.DOTALL)


def parse_tagged(text: str, tag: str) -> str:
    """The content of exactly one `<tag>…</tag>` block, non-empty."""
    found = _tag_pattern(tag).findall(text)
    if len(found) != 1:
        raise ParseError(f"expected exactly one <{tag}>…</{tag}> block, found {len(found)}")
    body = str(found[0]).strip()
    if not body:
        raise ParseError(f"the <{tag}> block is empty")
    return body


class Completer(Protocol):
    """The slice of LLMClient judges need."""

    async def complete(self, **kwargs: Any) -> Any:
        ...


@dataclass
class JudgeCall:
    """Where judge calls go and how they are recorded."""

    client: Completer
    model: str
    recorder: Callable[[LLMCallRecord], None]
    seed: int | None = 0
    """None: the request carries no seed (τ²'s NL-assertion judge sends none)."""
    repeat: int = 0
    role: str = "judge"


async def ask(call: JudgeCall, prompt: str | list[dict[str, Any]], parse: Callable[[str], T], *,
              purpose: str, turn: int | None = None, temperature: float = 0.0) -> T:
    """One strict question: ask, parse; on a parse failure ask once more showing the error;
    then give up with JudgeError. Provider errors (after the client's own retries) also end in
    JudgeError. `prompt` is the user message, or the whole chat (a system message first, say).
    Judges and simulators sample at `temperature` 0 unless a pack says otherwise."""
    messages: list[dict[str, Any]] = ([{"role": "user", "content": prompt}]
                                      if isinstance(prompt, str) else list(prompt))
    last_error = ""
    for attempt in range(2):
        try:
            resp = await call.client.complete(
                role=call.role, model=call.model, messages=messages, seed=call.seed,
                repeat=call.repeat, purpose=purpose if attempt == 0 else f"{purpose}:retry",
                turn=turn, recorder=call.recorder,
                # an int 0 as always: the cache keys of existing runs stay the same
                params={"temperature": 0 if temperature == 0 else temperature})
        except Exception as exc:  # provider failure after retries
            raise JudgeError(purpose, f"model call failed: {exc}", call.role) from None
        text = resp.content or ""
        try:
            return parse(text)
        except ParseError as exc:
            last_error = str(exc)
            messages = [*messages, {"role": "assistant", "content": text},
                        {"role": "user", "content": f"Your answer could not be used: {exc}. "
                         "Answer again, strictly in the required format."}]
    raise JudgeError(purpose, f"malformed output twice: {last_error}", call.role)
