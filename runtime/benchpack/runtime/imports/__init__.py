"""`bench import-run FORMAT SOURCE --db DB`: released results → a run in the store, written
through the store module with the tables a live run writes. One module per format, registered
below and loaded on demand."""

from __future__ import annotations

# ---- registry: one line per format ----
RUN_IMPORTERS: dict[str, str] = {
    "proactbench": "benchpack.runtime.imports.proactbench",
    "tau2": "benchpack.runtime.imports.tau2",
}
# ---- end of registry ----
