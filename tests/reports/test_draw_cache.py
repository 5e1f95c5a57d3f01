"""`stats.resampling.unit_draw_counts` keeps its latest draws (up to a byte budget): asked
again for the same (n, resamples, seed) it gives the same counts without drawing; a generator left before its
end keeps nothing; other seeds or sizes draw anew."""

from __future__ import annotations

import numpy as np
import pytest

from benchpack.reports.stats import resampling


def _all(n: int, resamples: int, seed: int) -> list[list[int]]:
    return [row for block in resampling.unit_draw_counts(n, resamples, seed)
            for row in block.tolist()]


def test_the_same_draws_are_given_again_without_drawing(monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    monkeypatch.setattr(resampling, "_DRAWS", {})
    first = _all(37, 600, 5)
    assert all(sum(row) == 37 for row in first) and len(first) == 600
    blocks = list(resampling.unit_draw_counts(37, 600, 5))
    assert [b.dtype for b in blocks] == [np.dtype(np.int64)] * 3  # as drawn: 256, 256, 88
    real = np.random.default_rng

    def no_draws(seed: int) -> None:
        raise AssertionError("drew again")

    monkeypatch.setattr(np.random, "default_rng", no_draws)
    assert _all(37, 600, 5) == first
    # another seed, size or count is drawn
    with pytest.raises(AssertionError, match="drew again"):
        _all(37, 600, 6)
    monkeypatch.setattr(np.random, "default_rng", real)
    assert _all(37, 600, 6) != first
    # the latest are kept up to the byte budget (16-bit counts: 2·n·resamples bytes each),
    # the least recently used dropped first: room for two of these, not a third
    monkeypatch.setattr(resampling, "_DRAWS_KEPT_BYTES", 2 * 2 * 38 * 600)
    _all(38, 600, 5)
    assert set(resampling._DRAWS) == {(37, 600, 6, 256), (38, 600, 5, 256)}


def test_draws_are_made_whole_at_the_first_ask(monkeypatch: pytest.MonkeyPatch) -> None:
    """Made whole under a lock when first asked (a report and what it runs beside it on
    another thread make them once), so a generator left early has kept them all: the same
    draws as the whole sequence."""
    monkeypatch.setattr(resampling, "_DRAWS", {})
    gen = resampling.unit_draw_counts(50, 600, 1)
    first = next(gen).tolist()
    gen.close()
    [kept] = resampling._DRAWS.values()
    assert sum(len(totals) for totals in kept) == 600
    assert _all(50, 600, 1)[:256] == first


def test_two_threads_asking_the_same_draws_make_them_once(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    monkeypatch.setattr(resampling, "_DRAWS", {})
    made: list[int] = []
    drawn = resampling._drawn

    def counted(*args: object, **kwargs: object) -> object:
        made.append(1)
        return drawn(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(resampling, "_drawn", counted)
    out: list[list[list[int]]] = [[], []]
    start = threading.Barrier(2)

    def ask(i: int) -> None:
        start.wait()
        out[i] = [row for block in resampling.unit_draw_counts(300, 2000, 4)
                  for row in block.tolist()]

    threads = [threading.Thread(target=ask, args=(i,)) for i in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert made == [1] and out[0] == out[1] and len(out[0]) == 2000
