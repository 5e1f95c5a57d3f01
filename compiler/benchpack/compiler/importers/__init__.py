"""`bench import FORMAT SOURCE -o PACK`: released benchmarks turned into ordinary packs (YAML a
person can edit, comments saying where each part came from, IMPORT_REPORT.md accounting for
every source field). Importers write files before the compiler runs; they never import the
runtime. Each format is a module with `import_pack(source: Path, out: Path) -> ImportResult`,
loaded only when used (`bench --help` stays fast)."""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


class ImportError_(Exception):
    """A source the importer cannot use: one line `what: why (hint)` for the CLI."""

    def __init__(self, what: str, why: str, hint: str = "") -> None:
        super().__init__(f"{what}: {why}" + (f" ({hint})" if hint else ""))


@dataclass
class ImportResult:
    out: Path
    files: list[str] = field(default_factory=list)
    sessions: int = 0
    dropped: list[str] = field(default_factory=list)
    """Source items not imported (each with why), as listed in IMPORT_REPORT.md."""


# format name → module of this package (keep one line per format: several engineers add here)
IMPORTERS: dict[str, str] = {
    # -- tau2 (engineer T) --
    "tau2": "tau2",
    # -- end tau2 --
}


def run_import(fmt: str, source: Path, out: Path) -> ImportResult:
    if fmt not in IMPORTERS:
        raise ImportError_(fmt, "unknown import format",
                           "one of: " + ", ".join(sorted(IMPORTERS)))
    module: Any = importlib.import_module(f"{__name__}.{IMPORTERS[fmt]}")
    result: ImportResult = module.import_pack(source, out)
    return result


__all__ = ["IMPORTERS", "ImportError_", "ImportResult", "run_import"]
