"""The cluster: one definition for every figure with an interval or a test (the headline,
pass-k, triggers, ablation, `bench compare`), printed beside each (`n 30 in 10 episodes`).

Here, apart from the statistics, so the renderers name it without loading them (`bench query`
starts without the statistics: tests/test_startup.py); `stats` re-exports it."""

from __future__ import annotations

CLUSTER = "episode"
"""The one cluster of every figure (headline, pass-k, triggers, `bench compare`): the episode,
with all its sessions, their repeats, triggers, style and ablation variants. Why: an episode's
sessions run as one chain in one workspace with the same services and memory (what one
session leaves, the next finds), and are written around one persona and situation; a pack is a
sample of episodes, not of sessions. Observations that can share a cause other than chance
must be in one cluster (Abadie, Athey, Imbens & Wooldridge 2023: cluster at the level the
sample was drawn); a pack of one episode has no interval and no test, and says so."""

CLUSTER_NOTE = ("clusters = episodes: an episode's sessions share a workspace, services, "
                "memory and persona, so they, their repeats and triggers vary together; "
                "the SE, the interval and the test rest on the episodes")
"""What every table with an interval or a test says about its cluster."""


def cluster_name(n: int) -> str:
    """`episode` / `episodes`: the word printed beside every figure's cluster count."""
    return CLUSTER if n == 1 else CLUSTER + "s"


def cluster_sql(alias: str = "") -> str:
    """The cluster of a `session_results` row in SQL: its episode (the session itself where a
    store has none, as a hand-made or imported one may)."""
    a = f"{alias}." if alias else ""
    return f"coalesce({a}episode, {a}session_id)"
