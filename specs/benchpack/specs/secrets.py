"""Secret redaction, the one path (issue 27): the values of API keys and tokens never leave the
process, in any encoding.

A key reaches benchpack in many ways it does not control: litellm reads `OPENAI_API_KEY` and
dozens of other variables itself, `--api-key-env` names one, `--api-base` may carry one in its
URL, and a provider's reply or error message (or an agent) may echo any of them back — as
written, JSON-escaped, URL-encoded, or base64-encoded (an `Authorization: Basic` header is
`base64(user:password)`: the password's bytes at any offset of a base64 text). So instead of
tracking where each key flows, every configured secret *value*, in each of those forms, is
replaced by `***` wherever bytes leave the process: the LLM client's error strings, the store
writer (everything stored), the response cache, the CLI's stdout/stderr, report files written
with `-o`, exports, and every response of `bench view`. Readers mask too: a store written by an
older benchpack, or under other variables, is masked with the reader's own secrets on the way
out.

Shared by the runtime (writes) and the reports (reads; they never import the runtime), so it
lives here; `benchpack.runtime.redact` re-exports it.

```python
r = Redactor.from_environment(extra_names=["MY_KEY_VAR"], urls=[api_base])
r("Incorrect API key provided: sk-…")  # → "Incorrect API key provided: ***"
```
"""

from __future__ import annotations

import base64
import json
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import parse_qsl, quote, quote_plus, urlsplit

MASK = "***"
MIN_LENGTH = 8
"""Shorter values are never treated as secrets: `HF_HUB_DISABLE_TOKEN=1` or a 3-letter
placeholder would otherwise mask ordinary words and digits everywhere."""

SECRET_NAME = re.compile(r"API_?KEY|APIKEY|_KEY$|^KEY$|TOKEN|SECRET|PASSWORD|PASSWD|"
                         r"CREDENTIAL|_AUTH$|AUTHORIZATION", re.IGNORECASE)
"""Environment variable names whose values are secrets: every variable litellm reads for keys
(`*_API_KEY`, `*_TOKEN`, `AWS_SECRET_ACCESS_KEY`, `WATSONX_APIKEY`, `AZURE_AD_TOKEN`…), and the
same for any other provider or tool."""

_URL_SECRET_PARAM = re.compile(r"key|token|secret|sig|pass|auth|code", re.IGNORECASE)

NOT_SECRETS = frozenset({"no-key"})
"""benchpack's own placeholder for local servers that ignore the key."""


def env_secrets(environ: Mapping[str, str] | None = None,
                extra_names: Iterable[str | None] = ()) -> set[str]:
    """Values of the variables named like secrets, plus those of `extra_names` (e.g. the
    `--api-key-env` variable, whatever its name)."""
    env = os.environ if environ is None else environ
    names = {n for n in env if SECRET_NAME.search(n)} | {n for n in extra_names if n}
    return {v for n in names if len(v := env.get(n) or "") >= MIN_LENGTH
            and v not in NOT_SECRETS}


def url_secrets(url: str | None) -> set[str]:
    """The password of `user:password@host` and values of key-like query parameters."""
    if not url:
        return set()
    try:
        parts = urlsplit(url)
        found = {parts.password} if parts.password else set()
        found |= {v for k, v in parse_qsl(parts.query) if _URL_SECRET_PARAM.search(k)}
    except ValueError:  # not a URL: nothing to find in it
        return set()
    return {v for v in found if v and len(v) >= MIN_LENGTH}


B64_MIN = 8
"""Shortest base64 piece masked: shorter ones (a secret of 8 bytes at an awkward offset
leaves 9-10 characters) would still be specific, but never shorter than a secret may be."""


def _base64_pieces(data: bytes) -> set[str]:
    """The base64 characters that encode `data` alone, wherever it starts in a longer encoded
    text: for each of the three offsets (0-2 bytes before it), the characters whose 6 bits
    all come from `data` — in the standard and the URL-safe alphabets."""
    out = set()
    for k in range(3):
        enc = base64.b64encode(b"\0" * k + data + b"\0\0").decode()
        start = -(-8 * k // 6)  # the first character with no bit of the prefix
        end = (8 * (k + len(data))) // 6  # characters before the first one with a pad bit
        piece = enc[start:end]
        if len(piece) >= B64_MIN:
            out |= {piece, piece.replace("+", "-").replace("/", "_")}
    return out


def _forms(value: str) -> set[str]:
    """The value as written, inside JSON strings (escaped either way), URL-encoded (with
    `%20` or `+` for a space) and base64-encoded at any offset."""
    out = {value, json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1],
           quote(value, safe=""), quote_plus(value, safe="")}
    return out | _base64_pieces(value.encode("utf-8"))


class Redactor:
    """Replaces every known secret value, in each of its forms, by `***` (longest first, so a
    key containing another is masked whole). Text without secrets costs one substring search
    per form (C speed: with base64 forms, a regex of them all scanned 2 KB 5× slower), text
    shorter than the shortest form nothing."""

    def __init__(self, secrets: Iterable[str | None] = ()) -> None:
        self.secrets = frozenset(s for s in secrets if s and len(s) >= MIN_LENGTH
                                 and s not in NOT_SECRETS)
        forms = sorted({f for s in self.secrets for f in _forms(s)}, key=len, reverse=True)
        self._forms = tuple(forms)
        self._shortest = min((len(f) for f in forms), default=0)
        self._pattern = re.compile("|".join(map(re.escape, forms))) if forms else None

    @classmethod
    def from_environment(cls, *, extra_names: Iterable[str | None] = (),
                         urls: Iterable[str | None] = (),
                         values: Iterable[str | None] = ()) -> Redactor:
        found = env_secrets(extra_names=extra_names)
        for url in urls:
            found |= url_secrets(url)
        return cls(found | {v for v in values if v})

    def __bool__(self) -> bool:
        return self._pattern is not None

    @property
    def forms(self) -> tuple[str, ...]:
        """Every text that is masked, longest first (for masking done elsewhere: an export
        masks in SQL, with `replace`)."""
        return self._forms

    def __call__(self, text: str) -> str:
        if self._pattern is None or len(text) < self._shortest:
            return text
        if not any(f in text for f in self._forms):
            return text
        return self._pattern.sub(MASK, text)

    def deep(self, value: Any) -> Any:
        """`value` with every string inside (dict keys and values, lists, tuples) redacted."""
        if self._pattern is None:
            return value
        if isinstance(value, str):
            return self(value)
        if isinstance(value, dict):
            return {self.deep(k): self.deep(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.deep(v) for v in value]
        if isinstance(value, tuple):
            return tuple(self.deep(v) for v in value)
        return value

    def url(self, url: str | None) -> str | None:
        """A URL fit to store: its secrets masked."""
        return Redactor(url_secrets(url) | self.secrets)(url) if url else url


class RedactingStream:
    """A text stream that redacts what it is given, then writes it to `inner`. It offers no
    `buffer`, so nothing (click, rich) writes bytes past it."""

    def __init__(self, inner: Any, redactor: Redactor) -> None:
        self._inner = inner
        self._redact = redactor

    def write(self, text: str) -> int:
        self._inner.write(self._redact(text) if isinstance(text, str) else text)
        return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        if name == "buffer":
            raise AttributeError(name)
        return getattr(self._inner, name)
