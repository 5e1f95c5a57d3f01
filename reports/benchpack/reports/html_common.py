"""Escaping, prose and the inlined assets, shared by the HTML report (`html.py`), its
transcripts (`html_transcript.py`) and `bench view`.

Separate so that every piece that writes HTML escapes stored text the same way and reads the
same vendored files, without importing the page that assembles them.
"""

from __future__ import annotations

import html
import re
from importlib import resources
from typing import Any


def esc(text: Any) -> str:
    return html.escape("" if text is None else str(text), quote=True)


def prose(text: str) -> str:
    """A report's own note: escaped, with `code` spans and its addresses (`bench compare`
    names `bench view`'s pages) as links."""
    return link_addresses(re.sub(r"`([^`]+)`", r"<code>\1</code>", esc(text)))


_URL = re.compile(r"\bhttps?://[^\s<>\"']+")


def link_addresses(escaped: str) -> str:
    """Addresses in already escaped text as links (an `&amp;` in one stays escaped, as an
    attribute wants it)."""
    return _URL.sub(lambda m: f'<a href="{m.group(0)}">{m.group(0)}</a>', escaped)


def asset_text(name: str) -> str:
    return (resources.files(__package__) / "assets" / name).read_text(encoding="utf-8")


def chart_js() -> str:
    """The vendored Chart.js build, without its source-map comment (the map is not shipped and
    a viewer's dev tools would try to fetch it)."""
    return re.sub(r"\n//# sourceMappingURL=\S+\s*$", "\n", asset_text("chart.umd.min.js"))
