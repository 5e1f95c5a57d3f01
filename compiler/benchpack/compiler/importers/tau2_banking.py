"""`bench import tau2 …/banking_knowledge -o PACK`: τ²-bench's banking_knowledge domain — its
knowledge base, its database and the tasks benchpack's rewrite of its toolset can run.

Written: the 698 documents (`documents/*.json`, `{id, title, content}`) as one JSONL knowledge
base, `knowledge/banking.jsonl` (order: below), with τ²'s top k (10) and, with --tau2,
τ²'s search tools (`KB_search`, `grep`: names, descriptions, parameters, first in the list) and
text answers filled to 10 at score 0 (without: `KB_search`, `KB_grep`, JSON); the retrieval
configuration a variable (`--var retrieval=…`), τ²'s names mapped to ours (`RETRIEVAL_NAMES`).
τ²'s tie order among equal scores (and so its score-0 fill) follows its directory listing,
which is the file system's: with --tau2 the documents are written in the order τ² loads them on
the importing machine, without it in file-name order.

The database (db.json, `{table: {data: {record id: record}}}`) becomes one service, `banking`,
every record carrying its id as `_id`; the agent's toolset (tau2_tools/banking.py) and the
customer's (banking_user.py) share it, as τ²'s two toolkits share one database. A task is
imported when every tool its gold actions use — τ²'s `call_discoverable_agent_tool` and
`give_discoverable_user_tool` name theirs in their arguments — is written; the others are
listed in IMPORT_REPORT.md with the tools they need. A task's `agent_data` patch becomes its
`initial_state.data`, with τ²'s per-task read-log allowlist (the gold's discoverable calls).
Each task's `user_tools` (the customer tools τ² offers its simulator: none in 16 tasks) is its
`user.tools`; with --tau2 the simulator prompt is τ²'s two texts, with and without tool
guidelines, chosen by it.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from . import ImportError_, ImportResult
from . import tau2_banking_texts as texts

RETRIEVAL_NAMES: dict[str, str | None] = {
    "no_knowledge": "none", "full_kb": "full", "golden_retrieval": "golden", "bm25": "bm25",
    "bm25_grep": "bm25_grep", "grep_only": "grep", "terminal_use": "shell",
    "terminal_use_write": None, "openai_embeddings": None, "openai_embeddings_grep": None,
    "qwen_embeddings": None, "qwen_embeddings_grep": None, "all_tools": None,
}
"""τ²'s retrieval variants → benchpack's configuration (None: not offered, see the report)."""
TOP_K = 10
"""τ²'s `PipelineSpec.top_k` / `GrepSpec.top_k` default."""


def read_documents(source: Path) -> list[dict[str, str]]:
    """τ²'s documents as `{id, title, text}`, in file-name order."""
    folder = source / "documents"
    if not folder.is_dir():
        raise ImportError_(str(folder), "not found",
                           "banking_knowledge keeps its knowledge base in documents/*.json "
                           "(take the domain folder from a full clone)")
    docs = []
    for path in sorted(folder.glob("*.json")):
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ImportError_(str(path), f"not a JSON document ({exc})") from None
        if not isinstance(raw, dict) or not all(isinstance(raw.get(k), str)
                                                for k in ("id", "content")):
            raise ImportError_(str(path), "a document has string `id` and `content`")
        docs.append({"id": raw["id"], "title": raw.get("title") or raw["id"],
                     "text": raw["content"]})
    if not docs:
        raise ImportError_(str(folder), "holds no documents/*.json")
    return docs


TABLES = ("users", "accounts", "debit_cards", "referrals", "credit_card_applications",
          "user_discoverable_tools", "user_discoverable_tool_calls", "verification_history",
          "credit_card_transaction_history", "cash_back_disputes",
          "bank_account_transaction_history", "credit_card_accounts", "agent_discoverable_tools",
          "task_config", "human_transfer_requests", "transaction_disputes", "credit_card_orders",
          "debit_card_orders", "credit_card_closure_reasons", "credit_card_account_flags",
          "credit_limit_increase_requests", "payment_history", "debit_card_disputes")
"""τ²'s `TransactionalDB` tables (db.json leaves some out: they start empty)."""
OWN_TABLES = ("unlocked_agent_tools", "read_log_allowlist")
"""What τ² keeps in its toolkit's memory, as tables here (tau2_tools/banking.py says why)."""
STATE_IGNORES = ("unlocked_agent_tools",)
"""Of `OWN_TABLES`, what the state check leaves out (`state_ignores`): τ²'s DB hash is its
`TransactionalDB`, and an agent's unlocks live outside it, so an extra unlock changes nothing
there. A gift to the user is in it (τ² writes `user_discoverable_tools`), and so is a logged
call (`agent_discoverable_tools`). `read_log_allowlist`, outside τ²'s hash too, stays
compared: only the task's `initial_state` writes it, so the gold replay and the agent's run
always agree on it."""
SERVICE = "banking"
META = {"call_discoverable_agent_tool": "agent", "unlock_discoverable_agent_tool": "agent",
        "give_discoverable_user_tool": "user", "call_discoverable_user_tool": "user"}
"""τ²'s tools that run a discoverable tool (named in their arguments) of one side."""


def read_db(path: Path) -> dict[str, list[dict[str, Any]]]:
    """db.json as the service's tables: every record with its record id as `_id`."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ImportError_(str(path), "not found", "banking_knowledge keeps its database in "
                           "db.json (take the domain folder from a full clone)") from None
    except (OSError, ValueError) as exc:
        raise ImportError_(str(path), f"not valid JSON ({exc})") from None
    if not isinstance(raw, dict):
        raise ImportError_(str(path), "expected an object of tables {name: {data: {id: row}}}")
    unknown = sorted(set(raw) - set(TABLES))
    if unknown:
        raise ImportError_(str(path), "tables τ²'s banking database does not have: "
                           + ", ".join(unknown))
    out: dict[str, list[dict[str, Any]]] = {}
    for table in TABLES + OWN_TABLES:
        data = (raw.get(table) or {}).get("data") or {}
        if not isinstance(data, dict) or not all(isinstance(r, dict) for r in data.values()):
            raise ImportError_(str(path), f"table `{table}`: `data` is not an object of records")
        out[table] = [{"_id": k, **r} for k, r in data.items()]
    return out


def _keys(module: str, name: str) -> set[str]:
    """The keys of the dict literal `name = {…}` in a tau2_tools module (read, not imported:
    a toolset module imports the worker's `benchpack_tools`)."""
    import ast

    from .tau2 import TOOLS_DIR

    tree = ast.parse((TOOLS_DIR / module).read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name
                                                for t in node.targets):
            assert isinstance(node.value, ast.Dict)
            return {str(ast.literal_eval(k)) for k in node.value.keys if k is not None}
    raise LookupError(f"{module} has no `{name}`")


def _tools() -> tuple[set[str], set[str], set[str], set[str]]:
    """(agent tools, user tools, agent discoverable, user discoverable) benchpack has written."""
    from .tau2 import TOOLS_DIR, tool_names

    return (tool_names(TOOLS_DIR / "banking.py"), tool_names(TOOLS_DIR / "banking_user.py"),
            _keys("banking_discoverable.py", "DISCOVERABLE"),
            _keys("banking_user.py", "_DISCOVERABLE"))


def _missing(task: dict[str, Any]) -> list[str]:
    """The tools a task's gold actions use that benchpack has not written."""
    agent, user, agent_disc, user_disc = _tools()
    missing = set()
    for a in (task.get("evaluation_criteria") or {}).get("actions") or []:
        name, args = str(a.get("name")), a.get("arguments") or {}
        side = META.get(name)
        if side == "agent":
            inner = str(args.get("agent_tool_name"))
            if inner not in agent_disc:
                missing.add(inner)
        elif side == "user":
            inner = str(args.get("discoverable_tool_name"))
            if inner not in user_disc:
                missing.add(inner)
        elif name not in agent | user:
            missing.add(name)
    return sorted(missing)


def _why_skipped(task: dict[str, Any]) -> str | None:
    missing = _missing(task)
    if missing:
        return "uses tools not yet written: " + ", ".join(missing)
    init = task.get("initial_state") or {}
    if (init.get("initialization_data") or {}).get("user_data"):
        return "its initialization_data changes a user database banking_knowledge does not have"
    for key in ("initialization_actions", "message_history"):
        if init.get(key):
            return f"its initial_state has {key} (none in τ²'s release; not mapped yet)"
    return None


def _initial_state(task: dict[str, Any]) -> dict[str, Any] | None:
    """τ²'s agent_data patch (`{table: {data: {id: fields}}}`) as the service's rows, and the
    task's read-log allowlist (τ² derives it from the gold's discoverable calls)."""
    data = ((task.get("initial_state") or {}).get("initialization_data") or {}).get(
        "agent_data") or {}
    patch: dict[str, Any] = {}
    for table, part in data.items():
        if table not in TABLES:
            raise ImportError_(f"task {task.get('id')}", f"its initialization_data names the "
                               f"table `{table}`, which τ²'s banking database does not have")
        rows = (part or {}).get("data") or {}
        if rows:
            patch[table] = rows
    allow = sorted({str((a.get("arguments") or {}).get("agent_tool_name"))
                    for a in (task.get("evaluation_criteria") or {}).get("actions") or []
                    if a.get("name") == "call_discoverable_agent_tool"})
    if allow:
        patch["read_log_allowlist"] = {n: {} for n in allow}
    return {"data": {SERVICE: patch}} if patch else None


def import_banking(source: Path, out: Path, tau2: dict[str, Any] | None = None
                   ) -> ImportResult:
    """`tau2`: the driver's `extract` of the domain (τ²'s texts: tau2_banking_texts.py)."""
    from . import tau2 as base
    from . import tau2_dialogue as dialogue
    from . import tau2_parity as parity

    docs = read_documents(source)
    if tau2 is not None:
        docs = texts.in_tau2_order(docs, tau2)
    tasks = read_tasks(source)
    tables = read_db(source / "db.json")
    agent, user, _, _ = _tools()
    if tau2 is not None:
        parity.check_extract(tau2, "banking_knowledge", sorted(agent))
        theirs = {t["id"] for t in tau2.get("tasks") or []}
        if theirs and theirs != {str(t.get("id")) for t in tasks}:
            raise ImportError_(str(source), "its task ids are not those of the τ² checkout's "
                               "domain", "import the domain folder of that checkout")
    scenario = dialogue.scenarios(tau2)
    # each task's own user tools (τ²'s `user_tools`): what the extract says τ² offers, or
    # without --tau2 the task's list where it is not all of the customer's tools
    offered = dialogue.task_user_tools(tau2) if tau2 is not None else {
        str(r.get("id")): [str(n) for n in r["user_tools"]] for r in tasks
        if isinstance(r.get("user_tools"), list) and set(r["user_tools"]) != set(user)}
    kept, dropped = [], []
    for raw in tasks:
        why = _why_skipped(raw)
        if why is None:
            # τ²'s initial state here is patches of the shared database: mapped below
            t = base._Task({**raw, "initial_state": None}, agent, domain="banking_knowledge",
                           user_tools=user)
            why = t.skip
        if why is not None:
            dropped.append((str(raw.get("id")), why))
            continue
        start = _initial_state(raw)
        if start is not None:
            t.session["initial_state"] = start
        dialogue.session_fields(t.session, raw, scenario.get(t.id), offered.get(t.id))
        if raw.get("required_documents"):  # what `--var retrieval=golden` shows (ids)
            t.session["required_documents"] = [str(d) for d in raw["required_documents"]]
            t.lossy = [x.replace("required_documents, ", "") for x in t.lossy]
        kept.append(t)
    out.mkdir(parents=True, exist_ok=True)
    for sub in ("data", "tools", "demo"):
        (out / sub).mkdir(exist_ok=True)
    files: list[str] = []

    def write(rel: str, text: str) -> None:
        (out / rel).write_text(text, encoding="utf-8", newline="\n")
        files.append(rel)

    (out / "knowledge").mkdir(exist_ok=True)
    write("knowledge/banking.jsonl", "".join(json.dumps(d, ensure_ascii=False) + "\n"
                                             for d in docs))
    for name, rows in tables.items():
        write(f"data/{name}.json", json.dumps(rows, ensure_ascii=False, indent=1) + "\n")
    from .tau2_parity import toolset_source

    pydantic = tau2.get("pydantic") if tau2 is not None else None
    differences, if_vars = differences_of(tau2)
    for mod in ("banking.py", "banking_user.py"):
        text = toolset_source(base.TOOLS_DIR / mod, pydantic, ())
        if tau2 is not None and mod == "banking.py":
            text = texts.with_catalog(text, texts.catalog(tau2, _keys(
                "banking_discoverable.py", "CATALOG")))
        write(f"tools/{mod}", text)
    if tau2 is not None:
        write("tools/banking.specs.json", parity.specs_json(tau2))
        write("tools/banking_user.specs.json", parity.specs_json(
            {"tools": tau2.get("user_tools") or []}))
        write("policy.md", texts.policy_template(tau2, RETRIEVAL_NAMES))
        (out / "tau2").mkdir(exist_ok=True)
        write("tau2/user_system.j2", dialogue.user_template(tau2))
        write("tau2/assertions_judge.j2", dialogue.judge_template(tau2))
    order = parity.tool_order(tau2) if tau2 is not None else sorted(agent)
    user_order = [t["name"] for t in tau2.get("user_tools") or []] if tau2 is not None \
        else sorted(user)
    write("pack.yaml", _pack_yaml(len(docs), sorted(tables), order, user_order, tau2 is not None,
                                  texts.knowledge_tools(tau2) if tau2 is not None else None)
          + dialogue.pack_blocks("banking_knowledge", tau2, dialogue.version(tau2),
                                 differences, if_vars=if_vars))
    write("tasks.yaml", base._tasks_yaml("banking_knowledge", kept).replace(
        "environment: banking_knowledge", "environment: bank"))
    turns = {t.sid: _gold_turns(t.session) for t in kept}
    agent_gold = {"sessions": {sid: a for sid, (a, _) in turns.items()}}
    user_gold = {sid: {"turns": u} for sid, (_, u) in turns.items() if u}
    write("demo/gold_agent.yaml", "# The gold agent: each task's gold actions (the agent's) in "
          "one turn (`bench import tau2`\n# wrote it; see IMPORT_REPORT.md). Run it to check "
          "the environment.\n" + base._dump(agent_gold))
    if user_gold:
        write("demo/gold_user.yaml", "# The gold user: each task's `requestor: user` gold "
              "actions, made with the customer's\n# tools after the gold agent's turn.\n"
              + base._dump({"sessions": user_gold}))
    scans = no_deposit_scans(tau2) if tau2 is not None else None
    write("IMPORT_REPORT.md", _report(source, docs, tasks, kept, dropped,
                                      all_differences(differences, if_vars),
                                      [scans] if scans else []))
    return ImportResult(out=out, files=files, sessions=len(kept),
                        dropped=[f"task {i}: {why}" for i, why in dropped], notes=[
        f"{len(docs)} documents imported as the knowledge base `banking`; {len(kept)} of "
        f"{len(tasks)} tasks"
        + (" (IMPORT_REPORT.md says why each other one is not)" if dropped else "")
        + "; differences from τ²-bench: " + ", ".join(
            d.split(":")[0] for d in all_differences(differences, if_vars))])


def _gold_turns(session: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The gold agent's entries and the gold user's turns: the gold actions in their order,
    each run of one side's calls a turn of that side (the customer deposits a check before the
    agent closes the account it went into: one turn each would reverse them)."""
    runs: list[tuple[str, list[dict[str, Any]]]] = []
    for a in (session.get("gold") or {}).get("actions", []):
        side = "user" if a.get("requestor") == "user" else "agent"
        if not runs or runs[-1][0] != side:
            runs.append((side, []))
        runs[-1][1].append(a)
    if runs and runs[0][0] == "user":
        runs.insert(0, ("agent", []))  # the agent answers the opening message first
    agent: list[dict[str, Any]] = []
    user: list[dict[str, Any]] = []
    for side, calls in runs:
        if side == "agent":
            turn: dict[str, Any] = {"say": "Done."}
            if calls:
                turn = {"tool_calls": [{"name": a["tool"], "args": a["args"]} for a in calls],
                        **turn}
            agent.append(turn)
        else:
            user.append({"calls": [{"tool": a["tool"], "args": a["args"]} for a in calls],
                         "say": "I did that on my side."})
    # the rules judge finds an assertion in what the agent said: the gold agent states them
    score = session.get("score") or {}
    agent[-1]["say"] = " ".join(["Done.", *score.get("communicate", []),
                                 *score.get("assertions", [])])
    if not user:
        return agent, []
    if runs[-1][0] == "agent":
        user.append({"say": "Thanks, that is all.", "stop": "done"})
    else:
        user[-1]["stop"] = "done"
    return agent, user


KB_TOOLS = ("    tools: {search: KB_search, grep: KB_grep}   # τ²'s names; `grep` is a built-in "
            "here\n")
"""Without --tau2: benchpack's descriptions and JSON results (`search-results`)."""
OWN_TEXTS = [
    "own-descriptions: the tool descriptions are benchpack's own (import with --tau2 CHECKOUT "
    "for τ²'s)",
    "no-policy: τ²'s per-retrieval agent prompt is not composed (import with --tau2 CHECKOUT)",
]
SEARCH_RESULTS = (
    "search-results: a search returns JSON `[{id, title, score, content}]` of the documents "
    "sharing a token with the query (τ² answers in text and fills its top 10 with score-0 "
    "documents); τ²'s `grep` tool is `KB_grep`; the search tools' descriptions are "
    "benchpack's (only with --var retrieval=bm25, grep, bm25_grep; import with --tau2 CHECKOUT "
    "for τ²'s)")
DIFFERENCES = [
    "no-deposit-scans: `get_atm_deposit_images_8473` shows no images for any deposit (τ²'s code "
    "holds scans for three transaction ids that are in none of the release's data)",
]
KB_IN_PROMPT = (
    "kb-in-prompt: with --var retrieval=full or golden the agent gets τ²'s no_knowledge prompt "
    "with the documents (all, or the task's) appended in benchpack's layout; τ²'s full_kb and "
    "golden_retrieval prompts place them inside the policy, in theirs")
SHELL_TOOLS = (
    "shell-tools: with --var retrieval=shell the agent gets benchpack's shell built-ins (`shell`, "
    "`read_file`, `grep`, `list_files`) over the documents as workspace files; τ²'s "
    "terminal_use offers its one `shell` tool over its own sandbox (not checked against τ²)")
KB_IN_PROMPT_TAU2 = (
    "kb-in-prompt: with --var retrieval=golden the agent gets τ²'s no_knowledge prompt with the "
    "task's documents appended in benchpack's layout; τ²'s golden_retrieval prompt places them "
    "inside the policy, in its (`full` is τ²'s full_kb prompt itself)")
"""What makes a run of the pack differ from τ²'s (written into `origin.differences`)."""
TIMING_NOTE = ("A KB_search answer ends with τ²'s `[Timing: retrieval=…ms, reranking=…ms, "
               "total=…ms]` line holding benchpack's own measured milliseconds: a figure that "
               "varies from call to call in τ² as well, so not counted as a difference; the "
               "rest of every answer is τ²'s text (`bench parity tau2-retrieval`).")
"""With --tau2 (IMPORT_REPORT.md)."""


def differences_of(tau2: dict[str, Any] | None
                   ) -> tuple[list[str], dict[str, dict[str, list[str]]]]:
    """`origin.differences`, and `origin.if_vars`: those that hold only for some values of
    `--var retrieval` (a run with bm25 and τ²'s texts is not labelled by the golden prompt's
    layout)."""
    if tau2 is None:
        by_value = {"full": [KB_IN_PROMPT], "golden": [KB_IN_PROMPT],
                    **{v: [SEARCH_RESULTS] for v in ("bm25", "grep", "bm25_grep")},
                    "shell": [SHELL_TOOLS]}
        return OWN_TEXTS + DIFFERENCES, {"retrieval": by_value}
    return [d for d in DIFFERENCES if not (d.startswith("no-deposit-scans")
                                           and no_deposit_scans(tau2) is not None)], \
        {"retrieval": {"golden": [KB_IN_PROMPT_TAU2], "shell": [SHELL_TOOLS]}}


def no_deposit_scans(tau2: dict[str, Any]) -> str | None:
    """IMPORT_REPORT.md's line when τ²'s own tool, asked at import about every ATM deposit a
    task starts with (the driver's `deposit_scans`), showed a scan of none: then its scans
    cannot show in a run (one adds transactions only under generated ids) and
    `no-deposit-scans` is no difference of this import. None otherwise (a driver without the
    check, or a scan shown)."""
    scans = tau2.get("deposit_scans")
    if not isinstance(scans, dict) or scans.get("with_scans") != [] \
            or not isinstance(scans.get("checked"), int):
        return None
    return (f"`get_atm_deposit_images_8473`: τ²'s own tool, asked at import about each of the "
            f"{scans['checked']} ATM deposit(s) in the {scans.get('states')} starting state(s) "
            "that hold any (the database's and the tasks'), showed a scan of none, as "
            "benchpack's toolset; a run adds transactions only under generated `txn_…` ids, "
            "so the scans τ²'s code holds for three other ids cannot show (no difference).")


def all_differences(differences: list[str], if_vars: dict[str, dict[str, list[str]]]
                    ) -> list[str]:
    """Every difference some build of the pack can have, once each (IMPORT_REPORT.md)."""
    out = list(differences)
    for d in (d for by_value in if_vars.values() for ds in by_value.values() for d in ds):
        if d not in out:
            out.append(d)
    return out


def tau2_variants() -> list[str]:
    """The τ² retrieval variants whose agent prompts an import asks τ²'s driver for."""
    from .tau2_banking_texts import variants

    return variants(RETRIEVAL_NAMES)


def read_tasks(source: Path) -> list[dict[str, Any]]:
    """The tasks τ² runs: `tasks/task_*.json` in name order (its `get_tasks`), else
    tasks.json (the release's tasks.json differs from them in 13 tasks, 4 of them gold)."""
    folder = source / "tasks"
    paths = sorted(folder.glob("task_*.json")) if folder.is_dir() else []
    tasks: list[Any] = []
    for path in paths or [source / "tasks.json"]:
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ImportError_(str(path), f"cannot read the tasks ({exc})") from None
        tasks += [raw] if paths else raw if isinstance(raw, list) else [None]
        if not all(isinstance(t, dict) for t in tasks):
            raise ImportError_(str(path), "expected a task object" if paths else
                               "expected a list of task objects")
    return tasks


def _pack_yaml(n: int, tables: list[str], agent: list[str], user: list[str],
               theirs: bool = False, kb_tools: str | None = None) -> str:
    """`theirs`: τ²'s texts were read (`specs:` files, `policy.md`); `kb_tools`: the
    knowledge base's `tools:` and `results:` lines as τ² offers and answers them."""
    table_lines = "".join(f"      {t}: {{key: _id, fixture: data/{t}.json}}\n" for t in tables)
    specs = "    specs: tools/banking.specs.json   # τ²'s own tool definitions\n" if theirs \
        else ""
    user_specs = ("    specs: tools/banking_user.specs.json   # τ²'s own user tool "
                  "definitions\n") if theirs else ""
    policy = ("    policy: {file: policy.md}   # τ²'s agent system prompt for each retrieval "
              "variant (Jinja)\n") if theirs else ""
    # τ²'s full_kb prompt holds every document itself
    in_policy = "    in_policy: [full]   # policy.md's `full` branch is τ²'s full_kb prompt\n" \
        if theirs else ""
    description = ("τ²-bench banking_knowledge with τ²'s own tool definitions and agent prompts; "
                   "differences in origin.differences (IMPORT_REPORT.md)." if theirs else
                   "τ²-bench banking_knowledge, NOT comparable with τ²'s scores: the tool "
                   "descriptions are benchpack's own (import with --tau2 CHECKOUT for τ²'s).")
    ignores = ", ".join(f"{SERVICE}.{t}" for t in STATE_IGNORES)
    return f"""\
# τ²-bench, domain `banking_knowledge`, imported by `bench import tau2`: its knowledge base
# ({n} documents), its database, our own rewrite of its toolset and its tasks (one whose gold
# used a tool not written would be left out: IMPORT_REPORT.md would list it).
#
#   bench compile PACK -o build/ --var retrieval=bm25_grep
#   (none | full | golden | bm25 | grep | bm25_grep | shell; τ²'s embeddings variants need
#   an embedding model and are not offered)
benchpack: 1
name: tau2-banking-knowledge
description: {json.dumps(description, ensure_ascii=False)}
vars:
  retrieval: bm25
personas:
  - id: customer
    profile: {{role: a customer contacting Rho-Bank customer service}}
knowledge:
  - name: banking
    description: Rho-Bank's internal and customer-facing documentation
    file: knowledge/banking.jsonl
    retrieval: "{{{{ vars.retrieval }}}}"
    top_k: {TOP_K}
{in_policy}{kb_tools or KB_TOOLS}services:
  - name: {SERVICE}
    description: τ²'s banking database (db.json), every record's id as `_id`; the agent's and
      the customer's tools share it, as in τ².
    tables:
{table_lines}toolsets:                    # our own implementation of τ²'s tools (runs with --allow-python)
  - module: tools/banking.py
    service: {SERVICE}
{specs}    include: [{", ".join(agent)}]
    check_arguments: false      # τ² checks no argument, keeps what a failing call changed
    atomic: false
    plain_errors: true
  - module: tools/banking_user.py   # the customer's own tools
    service: {SERVICE}
{user_specs}    include: [{", ".join(user)}]
    check_arguments: false      # τ² checks no argument, keeps what a failing call changed
    atomic: false
    plain_errors: true
environments:
  - id: bank
    description: Rho-Bank's customer support desk.
    builtin_tools: []
    knowledge: [banking]
    toolsets: [tools/banking.py]
    user_toolsets: [tools/banking_user.py]
    state_ignores: [{ignores}]   # τ² keeps unlocks in memory, outside its DB hash
{policy}include: [tasks.yaml]        # one episode per imported τ² task
"""


def _report(source: Path, docs: list[dict[str, str]], tasks: list[dict[str, Any]],
            kept: list[Any], dropped: list[tuple[str, str]], differences: list[str],
            checked: tuple[str, ...] | list[str] = ()) -> str:
    reasons: Counter[str] = Counter()
    for _, why in dropped:
        for name in why.split(": ", 1)[-1].split(", ") if why.startswith("uses") else [why]:
            reasons[name] += 1
    lines = [
        "# Import report: τ²-bench banking_knowledge", "",
        f"Source: `{source}`", "",
        f"- documents imported: {len(docs)} (knowledge base `banking`, "
        "`knowledge/banking.jsonl`, "
        + ("file-name order)" if any(d.startswith("own-descriptions") for d in differences)
           else "in the order τ² loads them here: its directory listing)"),
        f"- tasks imported: {len(kept)} of {len(tasks)}", "",
        "## Differences from τ²", "",
        *(["τ²'s own texts were read from the checkout with τ²'s Python: the tool definitions "
           "(`tools/banking*.specs.json`), what an unlock or a hand-over shows of each "
           "discoverable tool (`CATALOG` in `tools/banking.py`), the agent's system prompt of "
           "each retrieval variant (`policy.md`, its branch chosen by `--var retrieval`), the "
           "simulator's and judge's prompts (`tau2/`). What still differs:", ""]
          if not any(d.startswith("own-descriptions") for d in differences) else []),
        *[f"- {d}" for d in differences], "",
        *(["Checked at import, and not a difference:", "", *[f"- {c}" for c in checked], ""]
          if checked else []),
        "## Tasks not imported", "",
        *[f"- `{i}`: {why}" for i, why in dropped], *([] if dropped else ["None."]), "",
        *(["Tools the skipped tasks need (tasks each):", "", "| tool | tasks |", "|---|---|",
           *[f"| {k} | {v} |" for k, v in reasons.most_common()], ""] if reasons else []),
        "## Gold agent", "",
        "`demo/gold_agent.yaml` makes each task's agent-side gold actions in one turn; "
        "`demo/gold_user.yaml` makes the `requestor: user` ones after it with the customer's "
        "tools. Both should reach 1.0 on every imported task (`bench run … --agent "
        "scripted:demo/gold_agent.yaml --simulator scripted:demo/gold_user.yaml --judge rules "
        "--allow-python`).", "",
        "## Retrieval configurations", "",
        "| τ² variant | benchpack `--var retrieval=` |", "|---|---|",
        *[f"| `{k}` | {f'`{v}`' if v else 'not offered (embedding model or write shell)'} |"
          for k, v in RETRIEVAL_NAMES.items()], "",
        "Ties among equal scores keep the documents' order (τ²'s follow its directory "
        "listing, which depends on the file system); "
        + ("`golden` prompt text is benchpack's layout (`full` is τ²'s full_kb prompt)"
           if not any(d.startswith("own-descriptions") for d in differences) else
           "`full`/`golden` prompt text is benchpack's layout")
        + (". Search answers are τ²'s text, its top 10 filled at score 0, under τ²'s tool "
           "names and definitions (its `grep` takes the built-in's name). " + TIMING_NOTE
           if not any(d.startswith("own-descriptions") for d in differences) else
           "; search answers are JSON `[{id, title, score, content}]` of the documents "
           "sharing a token with the query (τ²'s are text, filled to 10 with score-0 "
           "documents), and τ²'s `grep` tool is `KB_grep`."), "",
    ]
    return "\n".join(lines)
