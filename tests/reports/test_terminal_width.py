"""Terminal tables fit the terminal: no line wider than COLUMNS, and no header word broken
across lines ("repeat s", "finish ed"); headers are abbreviated, the box dropped or columns
left out (and named) instead."""

from __future__ import annotations

import re
from itertools import pairwise
from pathlib import Path

import pytest
from click.testing import CliRunner

from benchpack.cli import cli
from benchpack.reports.render import abbreviate

RULE = re.compile(r"^[┡─ ]+$")


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    root = tmp_path_factory.mktemp("width")
    runner = CliRunner()
    assert runner.invoke(cli, ["init", str(root / "p")]).exit_code == 0
    assert runner.invoke(cli, ["compile", str(root / "p"), "-o", str(root / "build")]
                         ).exit_code == 0
    (root / "agent.yaml").write_text("default:\n  - say: OK.\n  - say: Noted.\n"
                                     "  - say: Thanks, noted.\n", encoding="utf-8")
    out = runner.invoke(cli, ["run", str(root / "build"), "--agent",
                              f"scripted:{root / 'agent.yaml'}", "--db", str(root / "bench.duckdb"),
                              "--run-id", "a-rather-long-run-name-2026", "--quiet"],
                        env={"COLUMNS": "80"})  # quiet: no progress bar, still the summary
    assert out.exit_code == 0, out.output
    return root / "bench.duckdb", out.output


def _header_tokens(text: str, tables: list[str]) -> list[str]:
    """The words of every table header: the lines above each header rule (`┡━━…` boxed,
    `────` compact) up to the top border, the table's title or the start of the output."""
    lines = text.splitlines()
    tokens: list[str] = []
    for n, line in enumerate(lines):
        if not (line.startswith("┡") or (line.strip() and set(line.strip()) == {"─"})):
            continue
        k = n - 1
        while k >= 0 and not lines[k].startswith("┏") and lines[k].strip() not in tables:
            tokens += lines[k].replace("┃", " ").split()
            k -= 1
    return tokens


def _vocabulary(titles: list[str]) -> set[str]:
    return {w for t in titles for w in (*t.split(), *abbreviate(t).split())}


def _md_tables(md: str) -> list[str]:
    return [line[3:].strip() for line in md.splitlines() if line.startswith("## ")]


def _md_titles(md: str) -> list[str]:
    lines = md.splitlines()
    return [c.strip() for a, b in pairwise(lines)
            if a.startswith("| ") and b.startswith("| ---") for c in a.strip("|").split(" | ")]


def _check(text: str, width: int, titles: list[str], tables: list[str] | None = None) -> None:
    too_wide = [line for line in text.splitlines() if len(line) > width]
    assert not too_wide, "\n".join(too_wide)
    words = _vocabulary(titles)
    tokens = _header_tokens(text, tables or [])
    assert tokens, text
    broken = [t for t in tokens if t not in words]
    assert not broken, f"{broken}\n{text}"


@pytest.mark.parametrize("width", [80, 100])
@pytest.mark.parametrize("name", ["summary", "status"])
def test_reports_fit_the_terminal(store: tuple[Path, str], name: str, width: int) -> None:
    db, _ = store
    runner = CliRunner()
    md = runner.invoke(cli, ["report", name, "--run", "all", "--db", str(db), "--format", "md"])
    out = runner.invoke(cli, ["report", name, "--run", "all", "--db", str(db)],
                        env={"COLUMNS": str(width)})
    assert out.exit_code == 0, out.output
    _check(out.output, width, _md_titles(md.output), _md_tables(md.output))


@pytest.mark.parametrize("width", [80, 100])
def test_query_fits_the_terminal(store: tuple[Path, str], width: int) -> None:
    db, _ = store
    runner = CliRunner()
    sql = "SELECT run_id, session_id, status, termination, turns, user_turns, " \
          "assistant_turns, tool_calls, judge_errors, prompt_tokens FROM sessions"
    csv = runner.invoke(cli, ["query", sql, "--db", str(db), "--format", "csv"])
    out = runner.invoke(cli, ["query", sql, "--db", str(db)], env={"COLUMNS": str(width)})
    assert out.exit_code == 0, out.output
    _check(out.output, width, csv.output.splitlines()[0].split(","))
    # a SELECT too wide even compact: the columns left out are named
    wide = runner.invoke(cli, ["query", "SELECT * FROM sessions", "--db", str(db)],
                         env={"COLUMNS": str(width)})
    assert "not shown at" in wide.output and "prompt_tokens" in wide.output


def test_run_summary_fits_the_terminal(store: tuple[Path, str]) -> None:
    _, output = store  # `bench run` at COLUMNS=80
    assert all(len(line) <= 80 for line in output.splitlines()), output
    for label in ("sessions", "PROC / COMP", "judge errors", "LLM calls", "wall time"):
        assert re.search(rf"^ {re.escape(label)} ", output, re.M), output
