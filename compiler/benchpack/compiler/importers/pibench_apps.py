"""π-Bench app tasks: the AppWorld apps they name as benchpack toolsets of our own, and the
grader checks we know as rules (issue 28).

- Apps. A task's `objectives.tools` names AppWorld tools `mcp_appworld_<app>__<operation>`.
  For the apps in `APPS` (Simple Note, Gmail, Todoist, Phone, Amazon) the importer copies our
  stateful toolset `pibench_tools/<app>.py` into the pack (`tools/pibench/<app>.py`), declares
  its service (tables empty: the release holds no AppWorld state; Amazon's catalogue starts
  with the products a task names, see `seed_products`) and offers it, under the same tool
  names (`prefix: mcp_appworld_<app>__`), in the persona's environment. They are not AppWorld:
  answers are shaped like the operations' names and the `objectives.tools` fields, not copied
  from AppWorld, and an operation a task does not name may be missing (`MISSING`).
- Grader checks. The grader scripts (`objectives.tools_evaluation_path`) are program code and
  not in the release data. Three were read and described in prose (peer-data
  pibench/GRADERS.md); their checks become rules here (`DOCUMENTED`), each binary key one
  checklist item. The other scripts' checks cannot be derived from what the release contains:
  they are listed as dropped, with that reason (`undocumented`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchpack.specs.release_ids import safe_id

TOOLS_DIR = Path(__file__).with_name("pibench_tools")

APPS: dict[str, dict[str, str]] = {
    "simple_note": {"notes": "note_id", "deleted": "note_id"},
    "gmail": {"drafts": "draft_id", "threads": "email_thread_id"},
    "todoist": {"projects": "project_id", "sections": "section_id", "tasks": "task_id",
                "labels": "label_id", "comments": "task_comment_id", "deleted": "id"},
    "phone": {"contacts": "phone_number", "texts": "text_message_id"},
    "amazon": {"products": "product_id", "cart": "product_id"},
}
"""App → its tables and their keys."""


def service_name(app: str, persona: str = "") -> str:
    """The service (and toolset) of `app`: one per pack, as tool names are the pack's; each
    episode runs on its own copy of the state, so personas do not share an account."""
    return app


def app_of(tool: str) -> tuple[str, str] | None:
    """(app, operation) of an AppWorld tool name, or None for another name."""
    m = re.fullmatch(r"mcp_appworld_([a-z0-9_]+?)__([a-z0-9_]+)", tool)
    return (m.group(1), m.group(2)) if m else None


def operations(app: str) -> set[str]:
    """The public functions of our toolset for `app` (read from its source, never imported)."""
    import ast

    tree = ast.parse((TOOLS_DIR / f"{app}.py").read_text(encoding="utf-8"))
    return {n.name for n in tree.body if isinstance(n, ast.FunctionDef)
            and not n.name.startswith("_")}


def seed_products(request: str) -> list[dict[str, Any]]:
    """Amazon: the products a task tells the agent to buy (`add 1 pair of <Name> to my cart`),
    with nothing else known about them (price, rating, stock null)."""
    names = re.findall(r"\badd (?:\d+|one|a|an) (?:pairs? of |units? of )?([A-Z][^.,;\n]*?)"
                       r" to (?:my|the) cart", request)
    return [{"product_id": f"product_{i}", "name": n.strip(), "price": None, "rating": None,
             "stock": None} for i, n in enumerate(dict.fromkeys(names), 1)]


def app_world(used: list[str], products: list[dict[str, Any]]
              ) -> tuple[dict[str, Any], dict[Path, bytes]]:
    """The services and toolsets of the apps `used` (one each: tool names are the pack's, and
    every episode runs on its own copy of the state), and the toolset files to write."""
    services, toolsets, files = [], [], {}
    seeded = [{**x, "product_id": f"product_{i}"} for i, x in enumerate(products, 1)]
    for app in used:
        rel = Path("tools") / "pibench" / f"{app}.py"
        files[rel] = (TOOLS_DIR / f"{app}.py").read_bytes()
        tables = {table: {"key": key,
                          "rows": seeded if (app, table) == ("amazon", "products") else []}
                  for table, key in APPS[app].items()}
        services.append({"name": service_name(app), "tables": tables})
        toolsets.append({"name": service_name(app), "module": rel.as_posix(),
                         "service": service_name(app), "prefix": f"mcp_appworld_{app}__"})
    return ({"services": services, "toolsets": toolsets} if used else {}), files


def app_env(user_id: str, used: set[str]) -> dict[str, Any]:
    """A persona's environment: the workspace and the apps its tasks use."""
    return {"id": safe_id(f"apps-{user_id}"),
            "description": f"π-Bench {user_id}: the apps its tasks use (benchpack's own "
                           "toolsets, not AppWorld)",
            "services": [service_name(a) for a in sorted(used)],
            "toolsets": [service_name(a) for a in sorted(used)]}


# --------------------------------------------------------------------------- documented checks


def _title(request: str) -> str | None:
    m = re.search(r'titled "([^"]+)"', request)
    return m.group(1) if m else None


def _note_rules(request: str, persona: str) -> list[dict[str, Any]]:
    """Financier_task_002_simple_note.py (GRADERS.md §1): safe pre-clean, create → add →
    update on one note id, and seven groups of required content, substring tests on the
    final note. The groups' strings are those GRADERS.md names (the script's own literals may
    differ in case or spelling)."""
    t = _title(request)
    if t is None:
        return []
    exact = f"^{re.escape(t)}$"
    svc = service_name("simple_note", persona)
    note = {"state": f"{svc}.notes"}

    def has(*words: str) -> dict[str, Any]:
        return {"all": [{**note, "where": {"title": {"regex": exact},
                                           "content": {"contains": w}}} for w in words]}

    return [
        {"text": "Grader check (pre-clean): every deleted note is one that an exact-title "
                 f"search for “{t}” returned, and none other",
         "rule": {"all": [
             {"state": f"{svc}.deleted", "where": {"exact_title_search": False},
              "exists": False},
             # RE2 has no lookahead: "no deleted note of another title" as a query
             {"state": f"{svc}.deleted",
              "query": f"length([?title != `{json.dumps(t)}`])", "equals": 0}]}},
        {"text": f"Grader check (workflow): the note “{t}” is created, then content is added "
                 "to that same note, then that note is updated",
         "rule": {**note, "where": {"title": {"regex": exact},
                                    "history": {"regex": r"^create(,\w+)*,add(,\w+)*,update"}},
                  "exists": True}},
        {"text": "Grader check (content): the four section headings",
         "rule": has("Meet-up and Travel", "Must-Bring Items", "Weather and Risk Notes",
                     "Pre-Departure Confirmations")},
        {"text": "Grader check (content): the meeting details (Saturday, 07:20, North Parking "
                 "Lot, 90)", "rule": has("Saturday", "07:20", "North Parking Lot", "90")},
        {"text": "Grader check (content): the five must-bring items",
         "rule": has("headlamp", "rain jacket", "2L", "ID card", "power bank")},
        {"text": "Grader check (content): the weather and timing cautions (after dark, windy, "
                 "18:00, rain)", "rule": has("after dark", "windy", "18:00", "rain")},
        {"text": "Grader check (content): the cooler-first instruction",
         "rule": has("cooler", "first")},
        {"text": "Grader check (content): the carpool, ice and stove-fuel items",
         "rule": has("carpool", "ice", "stove fuel")},
        {"text": "Grader check (content): the Friday 21:00 deadline with confirmation wording",
         "rule": {"all": [has("Friday 21:00"), {"any": [has("confirm"), has("completed"),
                                                        has("locked by")]}]}},
    ]


def _file_rules(path: str, checks: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    return [{"text": f"Grader check (static, {path}): {text}",
             "rule": rule if "not" in rule else {"file": path, **rule}} for text, rule in checks]


def _pipeline_017(request: str, persona: str) -> list[dict[str, Any]]:
    """Financier_task_017.py (GRADERS.md §2): three static checks of the written script."""
    return _file_rules("risk_correlation_pipeline.py", [
        ("volatility is annualised by the square root of 250 or 252 trading days",
         {"regex": r"sqrt\(\s*25[02]\s*\)|25[02]\s*\*\*\s*0?\.5"}),
        ("the zip library is imported (the input data comes zipped)",
         {"regex": r"(?m)^\s*(import zipfile|from zipfile import)"}),
        ("a Spark reader chain loads the CSV",
         {"regex": r"spark\.read\b[\s\S]*?\.csv\(|\.format\(\s*[\"']csv[\"']\s*\)"}),
    ])


def _pipeline_020(request: str, persona: str) -> list[dict[str, Any]]:
    """Financier_task_020.py (GRADERS.md §3): seven static checks of the written script."""
    return _file_rules("Data_Pipeline.py", [
        # the script's own column spellings are not described: Treasury's CSV names them
        # "1 Mo", "2 Mo", "3 Mo"; quoted names like "1M" or "3 Month" count too
        ("the short tenors (1-, 2- and 3-month columns) are not used",
         {"not": {"file": "Data_Pipeline.py",
                  "regex": r"[\"'][123]\s*(?:Mo|M|Month|-month)s?[\"']"}}),
        ("duplicates are removed (drop_duplicates)", {"contains": "drop_duplicates"}),
        ("missing values are forward-filled (ffill)", {"regex": r"ffill|fillna\([^)]*method\s*=\s*[\"']ffill"}),
        ("network requests set an explicit timeout=", {"regex": r"timeout\s*="}),
        ("values are coerced to numeric (to_numeric or astype(float))",
         {"regex": r"to_numeric|astype\(\s*float"}),
        ("whole columns are not dropped on NaN (no dropna(axis=1…))",
         {"not": {"file": "Data_Pipeline.py", "regex": r"dropna\([^)]*axis\s*=\s*(1|[\"']columns)"}}),
        ("no backward-fill and no interpolation",
         {"not": {"file": "Data_Pipeline.py", "regex": r"bfill|backfill|interpolate\("}}),
    ])


DOCUMENTED: dict[str, Callable[[str, str], list[dict[str, Any]]]] = {
    "data/Financier/scripts/Financier_task_002_simple_note.py": _note_rules,
    "data/Financier/scripts/Financier_task_017.py": _pipeline_017,
    "data/Financier/scripts/Financier_task_020.py": _pipeline_020,
}
"""Grader scripts whose checks we know (GRADERS.md), by `tools_evaluation_path`."""


def grader_rules(path: str, request: str, persona: str
                 ) -> tuple[list[dict[str, Any]], str | None]:
    """(checklist items, why dropped or None) for a task's grader script of `persona`."""
    build = DOCUMENTED.get(path)
    if build is None:
        return [], ("its binary checks are not in the release (the script is program code, "
                    "and no description of it is at hand), so none can be derived")
    items = build(request, persona)
    if not items:
        return [], "the request does not name what the documented checks test"
    return items, None


__all__ = ["APPS", "DOCUMENTED", "TOOLS_DIR", "app_env", "app_of", "app_world", "grader_rules", "operations",
           "seed_products", "service_name"]
