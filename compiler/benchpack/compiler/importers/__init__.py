"""`bench import FORMAT SOURCE -o PACK`: released benchmarks → ordinary, editable packs.

An importer reads a release's files and writes a pack directory (YAML a person can edit, with
comments saying where each part came from) plus `IMPORT_REPORT.md`, which lists every source
field and what became of it. Importers run before the compiler and never import the runtime.

Each format is one module of this package, registered below by name and loaded on demand (the
CLI's start-up time must not pay for importers it does not run). Its `import_pack(source, out,
**options)` returns an `ImportResult`; a problem with the source is an `ImportError_` carrying a
one-line message (`what: why (hint)`, located where the source allows).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# ---- registry: format name → module (one line per format) ----
IMPORTERS: dict[str, str] = {
    "claw": "benchpack.compiler.importers.claw",
    "pibench": "benchpack.compiler.importers.pibench",
    "proactbench": "benchpack.compiler.importers.proactbench",
    "tau2": "benchpack.compiler.importers.tau2",
    "vibesearch": "benchpack.compiler.importers.vibesearch",
}
# ---- end of registry ----


class ImportError_(ValueError):
    """A source the importer cannot use: one line for the CLI. Either the whole message, or
    `ImportError_(what, why, hint)`."""

    def __init__(self, what: str, why: str | None = None, hint: str = "") -> None:
        text = what if why is None else f"{what}: {why}" + (f" ({hint})" if hint else "")
        super().__init__(text)


@dataclass
class ImportResult:
    out: Path
    files: list[Any] = field(default_factory=list)
    """Files written, relative to `out`."""
    sessions: int = 0
    dropped: list[str] = field(default_factory=list)
    """Source items not imported (each with why), as listed in IMPORT_REPORT.md."""
    notes: list[str] = field(default_factory=list)
    """One-line remarks for the terminal (details are in IMPORT_REPORT.md)."""
    differences: list[dict[str, str]] = field(default_factory=list)
    """Deliberate differences from the original benchmark the import made (`id`, `what`,
    `why`), also listed in IMPORT_REPORT.md: a pack with any is not comparable with it."""


def formats() -> list[str]:
    return sorted(IMPORTERS)


def import_pack(fmt: str, source: str | Path, out: str | Path, **options: Any) -> ImportResult:
    if fmt not in IMPORTERS:
        raise ImportError_(fmt, "unknown import format", "one of: " + ", ".join(formats()))
    module = importlib.import_module(IMPORTERS[fmt])
    result: ImportResult = module.import_pack(Path(source), Path(out), **options)
    return result


def run_import(fmt: str, source: Path, out: Path) -> ImportResult:
    """`import_pack` without options (the τ² importer's entry point, kept for its callers)."""
    return import_pack(fmt, source, out)


__all__ = ["IMPORTERS", "ImportError_", "ImportResult", "formats", "import_pack", "run_import"]
