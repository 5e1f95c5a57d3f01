"""`bench import FORMAT SOURCE -o PACK`: released benchmarks → ordinary, editable packs.

An importer reads a release's files and writes a pack directory (YAML a person can edit, with
comments saying where each part came from) plus `IMPORT_REPORT.md`, which lists every source
field and what became of it. Importers run before the compiler and never import the runtime.

Each format is one module of this package, registered below by name and loaded on demand (the
CLI's start-up time must not pay for importers it does not run). Its `import_pack(source, out,
**options)` returns an `ImportResult`; a problem with the source is an `ImportError_` carrying a
located one-line message.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# ---- registry: one line per format (other formats are added beside, in their own line) ----
IMPORTERS: dict[str, str] = {
    "proactbench": "benchpack.compiler.importers.proactbench",
}
# ---- end of registry ----


class ImportError_(ValueError):
    """A source the importer cannot read: `file:line: message (hint)`."""


@dataclass
class ImportResult:
    out: Path
    files: list[Path] = field(default_factory=list)
    """Files written, relative to `out`."""
    sessions: int = 0
    notes: list[str] = field(default_factory=list)
    """One-line remarks for the terminal (details are in IMPORT_REPORT.md)."""


def formats() -> list[str]:
    return sorted(IMPORTERS)


def import_pack(fmt: str, source: str | Path, out: str | Path, **options: Any) -> ImportResult:
    if fmt not in IMPORTERS:
        raise ImportError_(f"unknown format `{fmt}` (known: {', '.join(formats())})")
    module = importlib.import_module(IMPORTERS[fmt])
    result: ImportResult = module.import_pack(Path(source), Path(out), **options)
    return result


__all__ = ["IMPORTERS", "ImportError_", "ImportResult", "formats", "import_pack"]
