"""Compile-time benchmark: a synthetic pack of N sessions (default 10,000).

Prints, measured side by side in one run:
  cold compile ÷ parse   (target ≤ 3×): full `compile_pack` with an empty cache, divided by the
                          time the fastest safe YAML loader (PyYAML's libyaml CSafeLoader) takes
                          just to parse the same files;
  warm ÷ cold            (target ≤ 0.1×): recompiling the unchanged pack (cache hit).

Usage: python benchmarks/compile_bench.py [--sessions 10000] [--files 100] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import yaml

PACK = """\
benchpack: 1
name: synthetic
description: Synthetic pack for the compile benchmark.
vars:
  company: Northwind
include:
  - episodes/*.yaml
personas:
{personas}
services:
  - name: todo
    tables:
      tasks:
        key: id
        rows:
          - {{id: T-1, title: seed task, done: false}}
    operations:
      - {{name: create, kind: create, table: tasks, fields: [title], required: [title]}}
      - {{name: list, kind: list, table: tasks}}
environments:
  - id: office
    files:
      - path: notes/readme.md
        content: Team notes for {{{{ vars.company }}}}.
    services: [todo]
"""

SESSION = """\
      - id: s{j}
        title: Task {j} of episode {i}
        protocol: intent_tracking
{deps}        metadata: {{category: cat{cat}, difficulty: {diff}}}
        request: Please prepare the quarterly summary number {j} for the {{{{ vars.company }}}} team, using the notes in the workspace.
        hidden_intents:
          - text: Lead with the three largest budget variances in session {j}.
          - text: Keep the summary to one page with a table for region {cat}.
            scope: persistent
            evidence: [notes/readme.md]
          - text: Flag every figure that still needs sign-off from finance lead {i}.
        checklist:
          - text: The summary lists the three largest variances first.
          - text: A to-do item is created for the finance sign-off.
            rule:
              tool: todo__create
              where:
                args.title: {{contains: sign-off}}
          - text: The summary fits on one page.
"""


def make_pack(root: Path, sessions: int, files: int, per_episode: int = 10) -> int:
    episodes = sessions // per_episode
    personas = "\n".join(
        f"  - id: p{k}\n    profile: {{role: Analyst number {k}, preferences: [concise tables]}}\n"
        f"    style: P" for k in range(20)
    )
    (root / "pack.yaml").write_text(PACK.format(personas=personas), encoding="utf-8")
    (root / "episodes").mkdir()
    per_file = max(1, episodes // files)
    count = 0
    for f in range(0, episodes, per_file):
        chunk = ["episodes:"]
        for i in range(f, min(f + per_file, episodes)):
            chunk.append(f"  - id: ep{i}\n    persona: p{i % 20}\n    environment: office\n"
                         "    sessions:")
            for j in range(per_episode):
                deps = f"        depends_on: [s{j - 1}]\n" if j % 3 == 2 else ""
                chunk.append(SESSION.format(i=i, j=j, deps=deps, cat=j % 5,
                                            diff=("easy", "medium", "hard")[j % 3]))
                count += 1
        (root / "episodes" / f"part{f:05d}.yaml").write_text("\n".join(chunk), encoding="utf-8")
    return count


def parse_only(root: Path) -> float:
    loader = yaml.CSafeLoader if hasattr(yaml, "CSafeLoader") else yaml.SafeLoader
    t = time.perf_counter()
    for p in sorted(root.rglob("*.yaml")):
        yaml.load(p.read_text(encoding="utf-8"), Loader=loader)
    return time.perf_counter() - t


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sessions", type=int, default=10_000)
    ap.add_argument("--files", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    from benchpack.compiler import compile_pack

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "pack"
        root.mkdir()
        n = make_pack(root, args.sessions, args.files)
        size = sum(p.stat().st_size for p in root.rglob("*.yaml"))
        print(f"synthetic pack: {n} sessions in {len(list(root.rglob('*.yaml')))} files, "
              f"{size / 1e6:.1f} MB of YAML")
        parse, cold, warm = [], [], []
        for r in range(args.repeat):
            parse.append(parse_only(root))
            os.environ["BENCHPACK_CACHE_DIR"] = str(Path(tmp) / f"cache{r}")
            out = Path(tmp) / f"build{r}"
            t = time.perf_counter()
            res = compile_pack(root, out)
            cold.append(time.perf_counter() - t)
            if not res.ok:
                for d in res.diagnostics[:20]:
                    print(d.format(), file=sys.stderr)
                return 1
            t = time.perf_counter()
            res2 = compile_pack(root, out)
            warm.append(time.perf_counter() - t)
            assert res2.cached, "second compile should be a cache hit"
            assert (out / "plan.json").read_bytes() == res.plan_bytes
        p, c, w = (statistics.median(x) for x in (parse, cold, warm))
        print(f"parse only (libyaml CSafeLoader): {p:8.3f} s   (median of {args.repeat})")
        print(f"cold compile:                     {c:8.3f} s")
        print(f"warm recompile (cache hit):       {w:8.3f} s")
        print(f"cold ÷ parse = {c / p:5.2f}×   (target ≤ 3×)")
        print(f"warm ÷ cold  = {w / c:5.3f}×  (target ≤ 0.1×)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
