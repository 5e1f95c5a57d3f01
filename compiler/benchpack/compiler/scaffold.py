"""`bench init`: a commented starter pack that compiles cleanly."""

from __future__ import annotations

import os
from pathlib import Path

PACK_YAML = """\
# yaml-language-server: $schema={schema_dir}/pack.schema.json
#
# A benchpack task pack. Edit it, then run:
#   bench validate {name}        # every mistake, located: file:line:col
#   bench compile {name} -o build/
#   bench graph {name}           # the sessions and their dependencies
benchpack: 1
name: {name}
version: 0.1.0
description: A starter pack - one persona, one episode, two dependent sessions.

metadata:
  domain: pharmacy
  language: en

defaults:
  repeats: 1
  limits:
    max_turns: 8            # user turns before a session ends with `turn_budget`

vars:
  pharmacy: Riverside Community Pharmacy

# Other YAML files merged into this pack (globs allowed).
include:
  - episodes/*.yaml

personas:
  - id: dana
    name: Dana Okafor
    profile:
      role: Community pharmacist and shift lead at {{{{ vars.pharmacy }}}}.
      routines:
        - Reviews refill requests every morning before opening.
      preferences:
        - Wants the highest-risk item first, then the rest.
        - Keeps patient notes short and scannable.
      constraints:
        - Never shares patient details outside the care team.
    style: P                 # terse and precise (see the 24 styles in the README)

services:
  - name: todo
    description: Dana's shift to-do list.
    tables:
      tasks:
        key: id
        id_prefix: T-
        row_schema:
          type: object
          properties:
            id: {{type: string}}
            title: {{type: string}}
            due: {{type: string}}
            done: {{type: boolean}}
        rows:
          - {{id: T-1, title: Restock insulin fridge, due: "09:00", done: false}}
    operations:
      - {{name: list, kind: list, table: tasks, filter_fields: [done]}}
      - {{name: create, kind: create, table: tasks, fields: [title, due], required: [title]}}
      - {{name: update, kind: update, table: tasks, fields: [title, due, done]}}

environments:
  - id: pharmacy
    description: The pharmacy's shared workspace.
    files:
      - path: notes/refills.md
        source: files/refills.md
    services: [todo]
"""

EPISODE_YAML = """\
# yaml-language-server: $schema={schema_dir}/fragment.schema.json
episodes:
  - id: monday
    persona: dana
    environment: pharmacy
    memory: carry_over       # later sessions see earlier ones
    sessions:
      - id: refill-triage
        title: Triage the morning refill queue
        protocol: intent_tracking
        metadata: {{category: triage, difficulty: easy}}
        request: Can you go through notes/refills.md and tell me what needs attention today?
        hidden_intents:      # what Dana wants but does not say
          - text: Flag the warfarin refill because the patient's INR check is overdue.
          - text: Put the most urgent refill first in the answer.
            scope: persistent
            evidence: [notes/refills.md]
        checklist:
          - text: The answer identifies the overdue INR check for the warfarin patient.
          - text: A to-do item is created for the warfarin follow-up.
            rule:
              tool: todo__create
              where:
                args.title: {{contains: warfarin}}

      - id: handover
        title: Write the shift handover
        protocol: intent_tracking
        depends_on: [refill-triage]
        request: Draft my handover note for the evening shift.
        hidden_intents:
          - text: Mention that the warfarin follow-up is still open on the to-do list.
          - text: Keep the note under 120 words.
        checklist:
          - text: The handover mentions the open warfarin follow-up.
          - text: The handover note is under 120 words.
"""

REFILLS_MD = """\
# Refill queue

| patient | drug | last refill | notes |
|---------|------|-------------|-------|
| A. Mensah | warfarin 5 mg | 28 days ago | INR check was due last week |
| J. Park | metformin 500 mg | 30 days ago | - |
| L. Costa | salbutamol inhaler | 45 days ago | asked about a spacer |

House rule: the most urgent item goes first.
"""


def init_pack(directory: str | Path, name: str | None = None, *, force: bool = False) -> list[Path]:
    """Write a starter pack into `directory`; returns the files written."""
    root = Path(directory)
    name = name or root.resolve().name.lower().replace(" ", "-") or "my-pack"
    name = "".join(c if c.isalnum() or c in "-_" else "-" for c in name).strip("-_") or "my-pack"
    if not name[0].isalnum():
        name = "pack-" + name
    files = {
        root / "pack.yaml": PACK_YAML,
        root / "episodes" / "monday.yaml": EPISODE_YAML,
        root / "files" / "refills.md": REFILLS_MD,
    }
    existing = [p for p in files if p.exists()]
    if existing and not force:
        raise FileExistsError(", ".join(str(p) for p in existing))
    written = []
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        body = text
        if path.suffix == ".yaml":
            body = text.format(name=name.lower(), schema_dir=_schema_dir(path.parent))
        path.write_text(body, encoding="utf-8")
        written.append(path)
    return written


def _schema_dir(root: Path) -> str:
    """Where editors find the schemas: the repository's `schemas/` when the pack lives in a
    benchpack checkout, else the published URL."""
    here = Path(__file__).resolve()
    for parent in here.parents:
        cand = parent / "schemas" / "pack.schema.json"
        if cand.exists():
            if not root.resolve().is_relative_to(parent):
                break  # a pack outside the checkout must not point into it
            return os.path.relpath(cand.parent, root.resolve()).replace(os.sep, "/")
    return "https://benchpack.dev/schemas"
