"""The HTML page's sessions section, kept once per state of the store file.

Every `bench report NAME --format html` over the same runs shows the same drill-down: the
same session attempts read from the store and rendered the same way (0.6-1.2 s of each report
on 1 M turns, 280 transcripts). It depends only on the store's content, the runs, the page's
size budget and this code, so it is kept, with the page header's description of the runs (a
page over a kept section opens no connection: 0.1 s of each page on 1 M turns), beside what
`verify_once` learnt about the file (`benchpack.specs.storefile.store_facts_dir`) under a key of all four: the file's identity
(`store_identity`: any write to the file changes it), the runs in order, the budget and caps,
and a digest of the report package's source (an edited renderer never reads an old section).
The section is written only if the file did not change while it was read. One section is
kept per store file (the latest selection of runs); a cache that cannot be read or written
only means the section is built again.
"""

from __future__ import annotations

import hashlib
import json
import os
from functools import lru_cache
from pathlib import Path
from typing import Any

from benchpack.specs.storefile import store_facts_dir, store_identity

_MAGIC = "benchpack drill-down section v2\n"


@lru_cache(maxsize=1)
def code_digest() -> str:
    """sha256 of every Python source and asset of the report package (what renders the
    section), read once a process."""
    root = Path(__file__).resolve().parent
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file() and p.suffix in
                       (".py", ".css", ".js", ".html")):
        digest.update(str(path.relative_to(root)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def section_key(store: str | Path, runs: list[str], settings: dict[str, Any]
                ) -> tuple[str, list[Any] | None]:
    """The key of the section of `runs` over `store` as it is now, and the file's identity
    (None: the file cannot be identified, nothing is kept)."""
    identity = store_identity(store)
    key = json.dumps({"store": str(Path(store).resolve()), "identity": identity, "runs": runs,
                      "settings": settings, "code": code_digest()}, sort_keys=True)
    return hashlib.sha256(key.encode()).hexdigest(), identity


def _path(store: str | Path) -> Path:
    name = hashlib.sha256(str(Path(store).resolve()).encode()).hexdigest()[:32]
    return store_facts_dir() / f"{name}.sessions.html"


def load_section(store: str | Path, key: str
                 ) -> tuple[str, int, list[dict[str, Any]]] | None:
    """The kept section, its number of transcripts and the page header's run descriptions,
    if they were kept under `key`."""
    try:
        # read as bytes and decoded once (through a text stream: ~12 ms of 3 MB, half that)
        with _path(store).open("rb") as f:
            if f.readline() != _MAGIC.encode() or f.readline().rstrip(b"\n") != key.encode():
                return None
            count = int(f.readline())
            runs = json.loads(f.readline())
            if not isinstance(runs, list) or not all(isinstance(r, dict) for r in runs):
                return None
            return f.read().decode("utf-8"), count, runs
    except (OSError, ValueError, RuntimeError):  # RuntimeError: no home directory
        return None


def keep_section(store: str | Path, key: str, identity: list[Any] | None, section: str,
                 count: int, runs: list[dict[str, Any]]) -> None:
    """Keep `section` and the header's `runs` (JSON values) under `key`, unless the file
    changed since `identity` was taken."""
    if identity is None or store_identity(store) != identity:
        return
    try:
        header = json.dumps(runs, ensure_ascii=True)  # one line: no raw line break
        target = _path(store)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f"{target.name}.{os.getpid()}.tmp")
        with tmp.open("w", encoding="utf-8", newline="") as f:
            f.write(f"{_MAGIC}{key}\n{count}\n{header}\n{section}")
        os.replace(tmp, target)
    except (OSError, RuntimeError, TypeError, ValueError):  # a value JSON cannot hold
        return


def forget_section(store: str | Path) -> None:
    """Drop the section kept for `store` (`benchmarks/report_bench.py` times a cold one)."""
    try:
        _path(store).unlink(missing_ok=True)
    except (OSError, RuntimeError):
        return
