"""`bench compare` (issue 15 items 2–3): the paired statistics by hand, against straightforward
reference implementations of the textbook formulas (scipy/statsmodels are not in the venv),
and end to end through the CLI on reference packs with scripted agents: a run against itself,
the demo agent against one that only says "Done.", the comparability guard, units in one run
only, every format."""

from __future__ import annotations

import json
import math
import random
import shutil
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

from benchpack.cli import cli
from benchpack.compiler import compile_pack
from benchpack.reports import paired
from conftest import TASKPACKS

# ----------------------------------------------------------------------------- by hand


def test_mcnemar_exact_by_hand() -> None:
    # b=1, c=6: 2 · P(X ≤ 1 | n=7, ½) = 2 · (1 + 7)/128 = 0.125
    assert paired.mcnemar_exact(1, 6) == pytest.approx(0.125)
    assert paired.mcnemar_exact(6, 1) == pytest.approx(0.125)
    assert paired.mcnemar_exact(0, 5) == pytest.approx(2 / 32)
    assert paired.mcnemar_exact(0, 0) == 1.0
    assert paired.mcnemar_exact(3, 3) == 1.0  # the tail sum passes ½: capped at 1
    # thousands of discordant pairs (a big store): 2^n is past a float's range, no overflow
    assert paired.mcnemar_exact(700, 700) == 1.0
    assert 0 < paired.mcnemar_exact(600, 700) < 0.01


def test_holm_and_bh_by_hand() -> None:
    ps = [0.01, 0.04, 0.03, 0.005]
    # Holm: sorted 0.005·4 = 0.02, 0.01·3 = 0.03, 0.03·2 = 0.06, max(0.04·1, 0.06) = 0.06
    assert paired.holm(ps) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    # BH: 0.005·4/1 = 0.02, 0.01·4/2 = 0.02, 0.03·4/3 = 0.04, 0.04·4/4 = 0.04 (step-up mins)
    assert paired.benjamini_hochberg(ps) == pytest.approx([0.02, 0.04, 0.04, 0.02])
    # a missing p (a row without a test) is not in the family
    assert paired.holm([0.01, None, 0.04]) == pytest.approx([0.02, None, 0.04])


def test_paired_mean_se_ci_five_pairs() -> None:
    a = [0.2, 0.4, 0.5, 0.6, 0.8]
    b = [0.3, 0.6, 0.5, 0.9, 0.9]
    # d = 0.1, 0.2, 0, 0.3, 0.1; mean 0.14; Σ(d − d̄)² = 0.052, var 0.013, sd 0.114018
    # SE = sd/√5 = 0.0509902; t(0.975, 4) = 2.7764451
    d = paired.paired_difference([(i, x, y) for i, (x, y) in enumerate(zip(a, b, strict=True))])
    assert d.delta == pytest.approx(0.14)
    assert d.sd == pytest.approx(math.sqrt(0.013))
    assert d.se == pytest.approx(math.sqrt(0.013 / 5))
    assert d.low == pytest.approx(0.14 - 2.7764451 * 0.0509902, abs=1e-6)
    assert d.high == pytest.approx(0.14 + 2.7764451 * 0.0509902, abs=1e-6)
    assert (d.n, d.clusters, d.df) == (5, 5, 4)
    assert d.mean_a == pytest.approx(0.5) and d.mean_b == pytest.approx(0.64)


def test_clustered_se_three_clusters_by_hand() -> None:
    # differences: g1 [1, 0], g2 [0], g3 [1, 1, 0]; N = 6, d̄ = 0.5
    # S_g − n_g·d̄: 1 − 1 = 0, 0 − 0.5 = −0.5, 2 − 1.5 = 0.5 → Σ² = 0.5
    # SE = √(3/2 · 0.5) / 6 = 0.1443376
    pairs = [("g1", 0, 1), ("g1", 0, 0), ("g2", 0, 0), ("g3", 0, 1), ("g3", 0, 1), ("g3", 0, 0)]
    assert paired.clustered_se(pairs) == pytest.approx(math.sqrt(0.75) / 6)
    # a single cluster has no between-cluster spread to measure
    assert paired.clustered_se([("g", 0, 1), ("g", 0, 0)]) is None
    # two clusters of the same differences: wider than treating the 6 units as independent
    iid = paired.paired_difference([(i, a, b) for i, (_, a, b) in enumerate(pairs)])
    assert iid.se == pytest.approx(math.sqrt(0.3 / 6))  # sd² = 1.5/5 = 0.3


def test_mde_by_hand() -> None:
    # (t(0.975, 4) + t(0.80, 4)) · 0.05 = (2.7764451 + 0.9409646) · 0.05
    assert paired.mde(0.05, 4) == pytest.approx((2.7764451 + 0.9409646) * 0.05, abs=1e-7)
    # many clusters: the normal formula 2.8016 · SE
    assert paired.mde(0.1, 100_000) == pytest.approx(0.28016, abs=1e-4)
    assert paired.mde(0.0, 4) is None and paired.mde(None, None) is None


@pytest.mark.parametrize(("q", "df", "expected"), [
    (0.975, 1, 12.7062047), (0.975, 4, 2.7764451), (0.975, 10, 2.2281389),
    (0.975, 30, 2.0422725), (0.80, 4, 0.9409646), (0.995, 2, 9.9248432)])
def test_t_quantile_against_printed_tables(q: float, df: int, expected: float) -> None:
    assert paired.t_quantile(q, df) == pytest.approx(expected, abs=1e-6)


# ------------------------------------------------ against straightforward reference versions


def _t_cdf_reference(t: float, df: int) -> float:
    """Simpson's rule over the t density from 0 to t (symmetric about 0)."""
    c = math.gamma((df + 1) / 2) / (math.sqrt(df * math.pi) * math.gamma(df / 2))
    n = 20_000
    h = abs(t) / n
    f = [c * (1 + (i * h) ** 2 / df) ** (-(df + 1) / 2) for i in range(n + 1)]
    area = h / 3 * (f[0] + f[-1] + 4 * sum(f[1:-1:2]) + 2 * sum(f[2:-1:2]))
    return 0.5 + math.copysign(area, t)


def test_t_cdf_against_numerical_integration() -> None:
    rng = random.Random(1)
    for _ in range(20):
        df, t = rng.randint(1, 40), rng.uniform(-6, 6)
        assert paired.t_cdf(t, df) == pytest.approx(_t_cdf_reference(t, df), abs=1e-8)


def test_mcnemar_against_enumeration() -> None:
    for n in range(0, 16):
        for b in range(n + 1):
            c = n - b
            # every outcome of n fair coin flips at least as unlikely as the one observed
            probs = [math.comb(n, k) / 2 ** n for k in range(n + 1)]
            observed = probs[b]
            ref = sum(p for p in probs if p <= observed * (1 + 1e-12))
            assert paired.mcnemar_exact(b, c) == pytest.approx(min(1.0, ref))


def _sign_flip_reference(pairs: list[tuple[object, float, float]]) -> float:
    """Every one of the 2^G sign patterns of the clusters' summed differences, enumerated."""
    sums: dict[object, float] = {}
    for c, a, b in pairs:
        sums[c] = sums.get(c, 0.0) + b - a
    xs = list(sums.values())
    observed = abs(math.fsum(xs))
    hits = 0
    for mask in range(2 ** len(xs)):
        t = math.fsum(x if mask >> i & 1 else -x for i, x in enumerate(xs))
        hits += abs(t) >= observed - 1e-9
    return hits / 2 ** len(xs)


def test_sign_flip_by_hand() -> None:
    # 6 episodes, B better in 5 by one task, tied in 1: of the 2^5 patterns of the 5 that
    # differ, |Σ| ≥ 5 only for all + and all −: p = 2/32
    pairs = [(g, 0.0, 1.0) for g in range(5)] + [(5, 1.0, 1.0)]
    assert paired.sign_flip_p(pairs) == pytest.approx(2 / 32)
    flip = paired.sign_flip(pairs)
    assert (flip.method, flip.differing) == ("exact", 5)
    # sums 3, −1, 1, 1, 1, 1: observed |Σ| = 6. With +3: Σ = 3 − ε_b + S (S the other four,
    # −4…4 by 2) ≥ 6 needs ε_b = −1 and S ≥ 2 (C(4,3) + C(4,4) = 5 patterns) or ε_b = +1 and
    # S = 4 (1): 6; Σ ≤ −6 is out of reach. Mirrored with −3: 6 more. p = 12/64
    sums = [("a", 0.0, 3.0), ("b", 1.0, 0.0), *[(g, 0.0, 1.0) for g in "cdef"]]
    assert paired.sign_flip_p(sums) == pytest.approx(12 / 64)
    assert paired.sign_flip_p(sums) == pytest.approx(_sign_flip_reference(sums))


def test_sign_flip_is_mcnemar_when_every_episode_is_one_pair() -> None:
    for b in range(8):
        for c in range(8):
            pairs = ([(f"b{i}", 1, 0) for i in range(b)] + [(f"c{i}", 0, 1) for i in range(c)]
                     + [(f"t{i}", 1, 1) for i in range(6)])  # ties: 6 clusters at least
            assert paired.sign_flip_p(pairs) == pytest.approx(paired.mcnemar_exact(b, c))


def test_sign_flip_counts_an_episode_once_however_many_repeats_agree() -> None:
    """The adversarial case of issue 25: agents deterministic per task, so a discordant task
    is discordant on every repeat. McNemar over repeat-matched pairs counts it 3 times."""
    # 6 tasks (episodes) × 3 identical repeats; B passes 5 tasks A fails, task 6 tied
    units = [(g, 0.0, 1.0) for g in range(5)] + [(5, 1.0, 1.0)]
    assert paired.mcnemar_exact(0, 15) == pytest.approx(2 / 2 ** 15)  # "p < 0.0001"
    assert paired.sign_flip_p(units) == pytest.approx(2 / 32)        # not below 0.05
    # 5 episodes: too few for any p below 0.05, so none is given
    assert paired.sign_flip(units[:5]).method == "too few"
    assert paired.sign_flip_p(units[:5]) is None
    # a run against itself: p = 1 at any size
    assert paired.sign_flip_p([(g, 0.5, 0.5) for g in range(3)]) == 1.0


def test_sign_flip_against_enumeration() -> None:
    rng = random.Random(11)
    for _ in range(60):
        g = rng.randint(6, 11)
        pairs = [(rng.randrange(g), rng.random(), rng.random()) for _ in range(2 * g)]
        pairs += [(k, 0.0, 0.0) for k in range(g)]  # every cluster present
        assert paired.sign_flip_p(pairs) == pytest.approx(_sign_flip_reference(pairs),
                                                          abs=1e-12)
    # pass/fail with repeats: lattice sums, exact at any size (here 40 episodes)
    pairs = [(g, rng.randint(0, 3) / 3, rng.randint(0, 3) / 3) for g in range(40)]
    flip = paired.sign_flip(pairs)
    assert flip.method == "exact" and 0 < flip.p <= 1


def test_sign_flip_random_patterns_past_the_size_limit() -> None:
    """Continuous differences over 30 episodes: 2^30 patterns, so random ones (seeded), p =
    (1 + b)/(1 + R): within Monte-Carlo error of the exact p, and never 0."""
    rng = random.Random(5)
    pairs = [(g, rng.random(), rng.random() + 0.05) for g in range(30)]
    flip = paired.sign_flip(pairs, resamples=4000, seed=1)
    assert flip.method == "random"
    assert flip.p == paired.sign_flip_p(pairs, resamples=4000, seed=1)  # seeded
    # the exact p by meet in the middle: the two halves' sums, 2^15 each
    sums = [b - a for _, a, b in pairs]
    observed = abs(math.fsum(sums))

    def half(xs: list[float]) -> list[float]:
        out = [0.0]
        for x in xs:
            out = [t + x for t in out] + [t - x for t in out]
        return sorted(out)

    import bisect

    left, right = half(sums[:15]), half(sums[15:])
    hits = sum(len(right) - bisect.bisect_left(right, observed - t - 1e-9)
               + bisect.bisect_right(right, -observed - t + 1e-9) for t in left)
    exact = hits / 2 ** 30
    assert flip.p == pytest.approx(exact, abs=4 * math.sqrt(exact * (1 - exact) / 4000) + 1e-3)


def test_holm_bh_against_definitions() -> None:
    rng = random.Random(7)
    for _ in range(200):
        m = rng.randint(1, 9)
        ps = [rng.random() ** 2 for _ in range(m)]
        order = sorted(range(m), key=lambda i: ps[i])
        rank = {i: r for r, i in enumerate(order)}
        # Holm: max over the smaller-or-equal p's of (m − j)·p_(j)
        holm = [min(1.0, max((m - rank[j]) * ps[j] for j in range(m) if rank[j] <= rank[i]))
                for i in range(m)]
        # BH: min over the larger-or-equal p's of m·p_(j)/(j + 1)
        bh = [min(1.0, min(m * ps[j] / (rank[j] + 1) for j in range(m) if rank[j] >= rank[i]))
              for i in range(m)]
        assert paired.holm(ps) == pytest.approx(holm)
        assert paired.benjamini_hochberg(ps) == pytest.approx(bh)


def test_cluster_bootstrap_p() -> None:
    same = [(g, 0.3 + 0.1 * g, 0.3 + 0.1 * g) for g in range(8)]
    assert paired.cluster_bootstrap_p(same) == 1.0  # a run against itself
    shifted = [(g, 0.1 * (g % 4), 0.1 * (g % 4) + 0.5 + 0.01 * g) for g in range(10)]
    p = paired.cluster_bootstrap_p(shifted, resamples=500, seed=3)
    assert p == pytest.approx(1 / 501)  # no resample comes near 0
    assert p == paired.cluster_bootstrap_p(shifted, resamples=500, seed=3)  # seeded
    # 2 clusters: too few for any resampling test to mean something
    assert paired.cluster_bootstrap_p([(0, 0, 1), (1, 0, 0.9)]) is None


def _bootstrap_reference(pairs: list[tuple[int, float, float]], resamples: int, seed: int
                         ) -> float:
    """The paired cluster bootstrap as the docstring states it, drawing clusters with
    `random.Random(seed).randrange`: the figures `bench compare` printed before its draws
    were made cheaper must not move."""
    sums: dict[int, list[float]] = {}
    for c, a, b in pairs:
        sums.setdefault(c, [0.0, 0])
        sums[c][0] += b - a
        sums[c][1] += 1
    cl = sorted(((s, int(k)) for s, k in sums.values()), key=lambda t: (t[1], t[0]))
    g, n = len(cl), sum(k for _, k in cl)
    delta = sum(s for s, _ in cl) / n
    rng = random.Random(seed)
    extreme = 0
    for _ in range(resamples):
        draw = [cl[rng.randrange(g)] for _ in range(g)]
        if abs(sum(s for s, _ in draw) / sum(k for _, k in draw) - delta) >= \
                abs(delta) - 1e-12 * max(1.0, abs(delta)):
            extreme += 1
    return (1 + extreme) / (1 + resamples)


@pytest.mark.parametrize(("b", "c"), [(1, 6), (40, 61), (1234, 1400), (2000, 0)])
def test_mcnemar_exact_is_the_binomial_tail(b: int, c: int) -> None:
    from fractions import Fraction

    n, k = b + c, min(b, c)
    tail = sum(math.comb(n, i) for i in range(k + 1))
    assert paired.mcnemar_exact(b, c) == min(1.0, float(Fraction(2 * tail, 2 ** n)))


@pytest.mark.parametrize("seed", [0, 1, 7])
@pytest.mark.parametrize("clusters", [6, 13, 300])
def test_cluster_bootstrap_p_matches_its_definition(seed: int, clusters: int) -> None:
    rng = random.Random(100 + clusters)
    # a small true difference: p between the extremes, so every draw counts
    pairs = [(rng.randrange(clusters), rng.random(), rng.random() + 0.03)
             for _ in range(3 * clusters)]
    assert paired.cluster_bootstrap_p(pairs, resamples=300, seed=seed) == \
        _bootstrap_reference(pairs, 300, seed)


# ----------------------------------------------------------------------------- end to end

CLAW = TASKPACKS / "claw-lab-ops"
BOOKSHOP = TASKPACKS / "bookshop-service"


def _bench(*args: str | Path) -> tuple[int, str]:
    res = CliRunner().invoke(cli, [str(a) for a in args])
    return res.exit_code, res.output


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """claw-lab-ops (2 tasks × 3 repeats) with its demo agent twice and a "Done." agent;
    bookshop-service (12 tasks) with its demo agent and the "Done." agent."""
    tmp = tmp_path_factory.mktemp("compare")
    done = tmp / "done.yaml"
    done.write_text("default:\n" + '  - say: "Done."\n' * 12)
    db = tmp / "bench.duckdb"
    claw, shop = tmp / "claw", tmp / "shop"
    assert compile_pack(CLAW, claw, use_cache=False).ok
    assert compile_pack(BOOKSHOP, shop, use_cache=False).ok
    common = ("--quiet", "--db", db, "--judge", "rules")
    for run_id, agent in (("claw-demo", CLAW / "demo/agent.yaml"),
                          ("claw-demo2", CLAW / "demo/agent.yaml"), ("claw-done", done)):
        code, out = _bench("run", claw, *common, "--simulator", "rules", "--repeats", "3",
                           "--agent", f"scripted:{agent}", "--run-id", run_id)
        assert code == 0, out
    sim = f"scripted:{BOOKSHOP / 'demo/simulator.yaml'}"
    for run_id, agent in (("shop-demo", BOOKSHOP / "demo/agent.yaml"), ("shop-done", done)):
        code, out = _bench("run", shop, *common, "--simulator", sim, "--allow-python",
                           "--agent", f"scripted:{agent}", "--run-id", run_id)
        assert code == 0, out
    return db


def _json(db: Path, *args: str) -> dict:
    code, out = _bench("compare", *args, "--db", db, "--format", "json")
    assert code == 0, out
    return json.loads(out)


def _rows(doc: dict) -> dict[str, dict]:
    return {r["metric"]: r for r in doc["tables"][0]["rows"]}


def test_a_run_against_itself_is_zero_with_p_one(store: Path) -> None:
    rows = _rows(_json(store, "claw-demo", "claw-demo2"))
    assert set(rows) == {"verified score", "pass rate"}
    for r in rows.values():
        assert r["delta"]["value"] == 0.0 and r["p"] == 1.0 and r["p_adj"] == 1.0
        assert (r["paired"], r["only_a"], r["only_b"]) == (2, 0, 0)


def test_demo_against_done_is_large_and_significant(store: Path) -> None:
    rows = _rows(_json(store, "shop-demo", "shop-done"))
    # demo 1.0 on 12/12 tasks, "Done." 0 on 12/12 (tests/taskpacks/test_reference_runs.py);
    # each task is an episode of its own
    score, pass_ = rows["verified score"], rows["pass rate"]
    assert score["delta"]["value"] == pytest.approx(-1.0)
    assert pass_["delta"]["value"] == pytest.approx(-1.0)
    # 12 episodes, all −1: only the two patterns of all-equal signs are as far from 0,
    # p = 2/2^12 (what McNemar's b = 12, c = 0 gives, each episode one pair)
    for r in (score, pass_):
        assert r["test"] == "sign-flip, exact (12 of 12 episodes differ)"
        assert r["p"] == pytest.approx(2 / 4096)
        assert r["p_adj"] == pytest.approx(4 / 4096)  # Holm: both 2/4096, × 2 and × 1 → max
        assert (r["paired"], r["clusters"], r["cluster"]) == (12, 12, "episodes")
        assert r["se"]["value"] == 0.0 and r["delta"]["low"] == pytest.approx(-1.0)
    # every episode alike (SE 0): not Δ ± 0, but the difference of the two runs' intervals at
    # 97.5 % each — 12 passes of 12 episodes [0.0125^(1/12), 1], 0 of 12 [0, 1 − that]
    edge = 0.0125 ** (1 / 12)
    assert pass_["delta"]["high"] == pytest.approx((1 - edge) - edge, abs=1e-9)
    assert -1 < score["delta"]["high"] < -0.5


def test_claw_one_episode_has_no_interval_and_no_test(store: Path) -> None:
    rows = _rows(_json(store, "claw-demo", "claw-done"))
    score, pass_ = rows["verified score"], rows["pass rate"]
    # per task (repeats identical): demo 0.941667 and 0.8, "Done." 0 (it achieves nothing:
    # issue 25); both tasks are sessions of one episode (one calendar, one mailbox): one cluster
    d1, d2 = 0.0 - 0.9416666666666667, 0.0 - 0.8
    assert score["delta"]["value"] == pytest.approx((d1 + d2) / 2)
    for r in (score, pass_):
        assert (r["clusters"], r["cluster"]) == (1, "episode")
        assert r["se"]["value"] is None and r["delta"]["low"] is None
        assert r["p"] is None and r["mde"]["value"] is None
        assert r["test"] == "– (1 episode; a test needs ≥ 6)"
    # (McNemar over the 6 repeat-matched pairs of this one episode said p = 2/64)


def test_units_in_one_run_only_are_counted(store: Path, tmp_path: Path) -> None:
    db = tmp_path / "cut.duckdb"
    shutil.copy(store, db)
    con = duckdb.connect(str(db))
    gone = con.execute("SELECT min(session_id) FROM sessions WHERE run_id = 'shop-done'"
                       ).fetchone()[0]
    con.execute("DELETE FROM sessions WHERE run_id = 'shop-done' AND session_id = ?", [gone])
    con.close()
    rows = _rows(_json(db, "shop-demo", "shop-done"))
    for r in rows.values():
        assert (r["paired"], r["only_a"], r["only_b"]) == (11, 1, 0)
    code, out = _bench("compare", "shop-done", "shop-demo", "--db", db, "--format", "md")
    assert code == 0 and "| 11 | 11 | episodes | 0 | 1 |" in out


def test_guard_refuses_runs_with_different_judges(store: Path, tmp_path: Path) -> None:
    db = tmp_path / "judged.duckdb"
    shutil.copy(store, db)
    con = duckdb.connect(str(db))
    con.execute("UPDATE runs SET judge = 'litellm:x' WHERE run_id = 'claw-done'")
    con.close()
    code, out = _bench("compare", "claw-demo", "claw-done", "--db", db)
    assert code == 1
    assert out.strip().splitlines() == [
        "✗ compare: runs differ in judge: claw-demo rules, claw-done litellm:x (hint: "
        "--allow-incomparable compares them anyway, bannered; their difference is then not "
        "the agent's alone)"]
    for fmt in ("table", "md", "json", "html"):
        code, out = _bench("compare", "claw-demo", "claw-done", "--db", db,
                           "--allow-incomparable", "--format", fmt)
        assert code == 0, out
        assert "NOT COMPARABLE" in out and "claw-done litellm:x" in out, fmt
    # an ordinary report over both runs says so too
    code, out = _bench("report", "pass-k", "--run", "claw-demo", "--run", "claw-done",
                       "--db", db)
    assert code == 0 and "Not comparable" in out and "judge: claw-demo rules" in out
    # runs of different packs: refused (the pack differs), never a traceback
    code, out = _bench("compare", "claw-demo", "shop-done", "--db", store)
    assert code == 1 and out.startswith("✗ compare: runs differ in pack: claw-demo claw-lab-ops")


def test_the_prompt_templates_are_recorded(store: Path) -> None:
    con = duckdb.connect(str(store), read_only=True)
    hashes = {r[0] for r in con.execute(
        "SELECT json_extract_string(config, '$.prompt_templates') FROM runs").fetchall()}
    con.close()
    assert len(hashes) == 1 and len(next(iter(hashes))) == 64


def test_user_mistakes_are_one_line(store: Path) -> None:
    for args, start in (
            (["claw-demo"], "Error: give at least two runs"),
            (["claw-demo", "claw-demo"], "✗ compare: a run is given twice"),
            (["claw-demo", "nope"], "✗ no run matches nope"),
            (["claw-demo", "claw-done", "--metric", "prc"], "✗ compare: no metric `prc`"),
            (["claw-demo", "claw-done", "--by", "colour"], "✗ compare: cannot slice by")):
        code, out = _bench("compare", *args, "--db", store)
        assert code in (1, 2), out
        assert "Traceback" not in out
        assert start in out, out


def test_three_runs_against_the_first_in_every_format(store: Path) -> None:
    doc = _json(store, "claw-demo", "claw-demo2", "claw-done", "--by", "name",
                "--correction", "bh")
    rows = doc["tables"][0]["rows"]
    # 2 metrics × 2 tasks (slices) × 2 runs against the baseline
    assert len(rows) == 8
    assert {r["run"] for r in rows} == {"scripted:agent.yaml · claw-lab-ops · claw-demo2",
                                        "scripted:done.yaml"}
    assert any("Benjamini" in n for n in doc["tables"][0]["notes"])
    for fmt, marker in (("table", "Δ [CI]"), ("md", "| run |"), ("html", "<table")):
        code, out = _bench("compare", "claw-demo", "claw-done", "--db", store, "--format", fmt)
        assert code == 0 and marker in out, fmt


def test_vary_simulator_reports_simulator_sensitivity(store: Path, tmp_path: Path) -> None:
    db = tmp_path / "sims.duckdb"
    shutil.copy(store, db)
    con = duckdb.connect(str(db))
    con.execute("UPDATE runs SET simulator = 'litellm:other' WHERE run_id IN "
                "('claw-demo2', 'claw-done')")
    con.close()
    # the guard refuses a simulator difference by default
    code, out = _bench("compare", "claw-demo", "claw-demo2", "--db", db)
    assert code == 1 and "simulator: claw-demo rules, claw-demo2 litellm:other" in out
    # --vary simulator allows exactly it, for one agent, and labels Δ as the sensitivity
    for fmt in ("table", "md", "json"):
        code, out = _bench("compare", "claw-demo", "claw-demo2", "--vary", "simulator",
                           "--db", db, "--format", fmt)
        assert code == 0, out
        assert "Simulator sensitivity" in out and "NOT COMPARABLE" not in out, fmt
        assert "litellm:other" in out, fmt
    rows = _rows(_json(db, "claw-demo", "claw-demo2", "--vary", "simulator"))
    assert rows["pass rate"]["delta"]["value"] == 0.0  # the rules user is deterministic
    # another agent under the other simulator: refused, one line
    code, out = _bench("compare", "claw-demo", "claw-done", "--vary", "simulator", "--db", db)
    assert code == 1 and out.startswith("✗ compare: --vary simulator: the runs evaluate "
                                        "different agents") and len(out.splitlines()) == 1
    # nothing to vary
    code, out = _bench("compare", "claw-demo2", "claw-done", "--vary", "simulator", "--db", db)
    assert code == 1 and "do not differ in the simulator" in out
    # the simulator and the judge differ: the judge is still refused
    con = duckdb.connect(str(db))
    con.execute("UPDATE runs SET judge = 'litellm:x' WHERE run_id = 'claw-demo2'")
    con.close()
    code, out = _bench("compare", "claw-demo", "claw-demo2", "--vary", "simulator", "--db", db)
    assert code == 1 and "runs differ in judge" in out and "simulator:" not in out
