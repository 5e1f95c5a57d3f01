"""Secret redaction: `benchpack.specs.secrets`, the one path every byte leaving the process
goes through (the runtime writes with it, the reports read with it; neither imports the
other, so it lives in specs). Re-exported here for the runtime's modules and older imports."""

from __future__ import annotations

from benchpack.specs.secrets import (
    MASK,
    MIN_LENGTH,
    NOT_SECRETS,
    SECRET_NAME,
    RedactingStream,
    Redactor,
    env_secrets,
    url_secrets,
)

__all__ = ["MASK", "MIN_LENGTH", "NOT_SECRETS", "SECRET_NAME", "RedactingStream", "Redactor",
           "env_secrets", "url_secrets"]
