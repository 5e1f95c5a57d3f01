"""Protocol registry of the reports stage: one module per protocol, the same name as its
pack-language models (`benchpack.specs.protocols.<name>`), its compile step
(`benchpack.compiler.protocols.<name>`) and its runtime interpreter
(`benchpack.runtime.protocols.<name>`). Each module defines `PROTOCOL` (a `ProtocolReports`: its
views and its built-in reports); `views.VIEWS` and `registry.default_reports()` are built from
`PROTOCOL_REPORTS`, so adding a protocol's reports is its module plus one entry here."""

from __future__ import annotations

from . import (
    instructed_user,
    intent_tracking,
    staged_disclosure,
    trigger_rubric,
    verified_outcome,
)
from .base import ProtocolReports

PROTOCOL_REPORTS: dict[str, ProtocolReports] = {
    p.name: p for p in (intent_tracking.PROTOCOL, staged_disclosure.PROTOCOL,
                        trigger_rubric.PROTOCOL, verified_outcome.PROTOCOL,
                        instructed_user.PROTOCOL)
}

__all__ = ["PROTOCOL_REPORTS", "ProtocolReports"]
