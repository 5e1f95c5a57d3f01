"""`bench import tau2 DOMAIN_DIR -o PACK`: a τ²-bench domain folder (`tasks.json`, `db.json`,
`policy.md`) as a pack of `instructed_user` sessions over our own Python toolset.

With `tau2=` (the CLI's `--tau2 CHECKOUT`: what τ²'s own code says, `tau2_parity.py`) the pack
offers τ²'s own tool definitions and starts from τ²'s own loaded database, so its scores can be
compared with τ²'s; without, the tool descriptions are ours and the pack says it is not
comparable.

What becomes of each source field is decided in one place (`FIELDS`, the table of
IMPORT_REPORT.md) so the report and the code cannot disagree. Output is deterministic: the same
source gives byte-identical files (no dates, no absolute paths, source order kept)."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import yaml

from benchpack.specs.release_ids import tau2_session_id

from . import ImportError_, ImportResult
from . import tau2_dialogue as dialogue
from . import tau2_parity as parity
from . import tau2_solo as solo_
from . import tau2_state as st
from . import tau2_telecom as tc
from .tau2_fields import FIELDS

TOOLS_DIR = Path(__file__).with_name("tau2_tools")
# domains whose tools we implement ourselves (telecom needs user-side tools). τ²'s repository
# keeps airline's db.json out of its text snapshot, so an airline import needs the user's copy.
DOMAINS = {"retail": "retail.py", "mock": "mock.py", "airline": "airline.py",
           "telecom": "telecom.py"}
UNSUPPORTED: dict[str, str] = {}
"""Why a known τ² domain is not imported (said in the error)."""
# τ²'s default when a task names no reward basis
DEFAULT_BASIS = ["DB", "COMMUNICATE"]
BASIS = {"DB": "state", "ACTION": "actions", "COMMUNICATE": "communicate",
         "NL_ASSERTION": "assertions", "ENV_ASSERTION": "env_assertions"}

_KNOWN_TOP = {"id", "description", "user_scenario", "ticket", "initial_state",
              "evaluation_criteria", "annotations", "issues"}
_KNOWN_CRITERIA = {"actions", "communicate_info", "nl_assertions", "env_assertions",
                   "reward_basis"}


def _load_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ImportError_(str(path), "not found", "a τ² domain folder holds tasks.json, "
                           "db.json and policy.md") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ImportError_(str(path), f"not valid JSON ({exc})") from None


def _tables(db: Any, path: Path) -> dict[str, tuple[str, list[dict[str, Any]]]]:
    if not isinstance(db, dict) or not db:
        raise ImportError_(str(path), "expected an object of tables {name: {id: row}}")
    out: dict[str, tuple[str, list[dict[str, Any]]]] = {}
    for name, rows in db.items():
        if not isinstance(rows, dict) or not all(isinstance(r, dict) for r in rows.values()):
            raise ImportError_(str(path), f"table `{name}` is not an object of rows {{id: row}}")
        fields = [f for f in (next(iter(rows.values()), {}) or {}) if
                  all(r.get(f) == k for k, r in rows.items())]
        if not fields:
            raise ImportError_(str(path), f"no field of table `{name}` equals each row's id",
                               "every row must carry its own id, as τ²'s databases do")
        out[name] = (fields[0], list(rows.values()))
    return out


def _dump(value: Any) -> str:
    return yaml.safe_dump(value, allow_unicode=True, sort_keys=False, width=100,
                          default_flow_style=False)


def _indent(text: str, n: int) -> str:
    pad = " " * n
    return "".join(pad + line if line.strip() else line for line in text.splitlines(True))


def _comment(text: str, n: int) -> str:
    pad = " " * n
    return "".join(f"{pad}# {line}".rstrip() + "\n" for line in text.splitlines() or [""])


class _Task:
    """One τ² task mapped to a session (or the reason it cannot be)."""

    def __init__(self, raw: dict[str, Any], tools: set[str], splits: list[str] | None = None,
                 domain: str = "", user_tools: set[str] | None = None) -> None:
        self.raw = raw
        self.domain = domain
        self.user_tools = user_tools or set()
        self.id = str(raw.get("id"))
        self.sid = session_id(self.id)
        """The pack's id for it: τ²'s own when it is a valid id (telecom's, such as
        `[mms_issue]bad_wifi_calling[PERSONA:Easy]`, are not: tagged `tau2-id:<id>`)."""
        self.skip: str | None = None
        self.lossy: list[str] = []
        self.session: dict[str, Any] = {}
        self._map(tools)
        tags = sorted(f"split:{s}" for s in splits or ())
        if self.sid != self.id:
            tags.append(f"tau2-id:{self.id}")
        if self.session and tags:
            self.session["metadata"] = {"tags": tags}

    def _map(self, tools: set[str]) -> None:
        raw = self.raw
        unknown = sorted(set(raw) - _KNOWN_TOP)
        if unknown:
            self.lossy.append("unknown fields dropped: " + ", ".join(unknown))
        crit = raw.get("evaluation_criteria") or {}
        try:  # issue 24: τ²'s initial state and env assertions
            start = st.initial_state(raw, self.domain, bool(self.user_tools))
            env_asserts = st.env_assertions(crit, bool(self.user_tools))
        except st.Unsupported as exc:
            self.skip = str(exc)
            return
        unknown = sorted(set(crit) - _KNOWN_CRITERIA)
        if unknown:
            self.lossy.append("unknown evaluation fields dropped: " + ", ".join(unknown))
        actions = crit.get("actions")
        missing = sorted({a.get("name") for a in actions or []} - tools - self.user_tools)
        if missing:
            self.skip = ("its gold actions use tools this domain's toolset does not have: "
                         + ", ".join(map(str, missing)))
            return
        basis = crit.get("reward_basis") or DEFAULT_BASIS
        communicate = [str(c) for c in crit.get("communicate_info") or []]
        assertions = [str(c) for c in crit.get("nl_assertions") or []]
        reward: list[str] = []
        for b in basis:
            comp = BASIS.get(b)
            if comp is None:
                self.lossy.append(f"reward basis {b} dropped (not implemented)")
            elif comp in ("state", "actions") and actions is None:
                self.lossy.append(f"reward basis {b} dropped: the task has no gold actions")
            elif (comp == "communicate" and not communicate) or (
                    comp == "assertions" and not assertions) or (
                    comp == "env_assertions" and not env_asserts):
                pass  # nothing to check: τ² scores it 1, and so does leaving it out
            elif comp not in reward:
                reward.append(comp)
        for comp, have in (("assertions", assertions), ("communicate", communicate)):
            if have and comp not in reward:
                src = "nl_assertions" if comp == "assertions" else "communicate_info"
                self.lossy.append(f"{src} are not in the reward basis: kept out of the score")
        if env_asserts and "env_assertions" not in reward:
            self.lossy.append("env_assertions are not in the reward basis: kept out of the "
                              "score")
        if not reward:
            self.skip = "nothing left to score (reward basis: " + ", ".join(basis) + ")"
            return
        self.session = {"id": self.sid, "protocol": "instructed_user",
                        "user": self._user(), "gold": None, "score": None}
        if start is not None:
            self.session["initial_state"] = start
        if actions is not None:
            self.session["gold"] = {"actions": [self._action(i, a) for i, a in
                                                enumerate(actions)]}
        else:
            del self.session["gold"]
        score: dict[str, Any] = {"reward": reward}
        if "communicate" in reward:
            score["communicate"] = communicate
        if "assertions" in reward:
            score["assertions"] = assertions
        if "env_assertions" in reward:
            score["env_assertions"] = env_asserts
        self.session["score"] = score

    def _user(self) -> dict[str, Any]:
        scenario = self.raw.get("user_scenario") or {}
        ins = scenario.get("instructions")
        user: dict[str, Any] = {}
        extra: list[str] = []
        if isinstance(ins, dict):
            user["reason"] = str(ins.get("reason_for_call") or "").strip()
            if ins.get("known_info"):
                user["known"] = [str(ins["known_info"]).strip()]
            if ins.get("unknown_info"):
                user["unknown"] = [str(ins["unknown_info"]).strip()]
            text = str(ins.get("task_instructions") or "").strip()
            if text and text != ".":
                extra.append(text)
        else:
            user["reason"] = str(ins or "").strip()
        if scenario.get("persona"):
            extra.insert(0, f"Persona: {str(scenario['persona']).strip()}")
        if extra:
            user["instructions"] = extra
        if not user["reason"]:
            user["reason"] = str(self.raw.get("ticket") or "I need help.").strip()
            self.lossy.append("no reason for the call: the ticket (or a generic line) opens")
        return user

    def _action(self, i: int, a: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {"id": str(a.get("action_id") or f"a{i + 1}"),
                               "tool": str(a.get("name")), "args": a.get("arguments") or {}}
        if a.get("info"):
            out["info"] = str(a["info"])
        return out

    def comments(self) -> str:
        d = self.raw.get("description") or {}
        lines = [f"τ² task {self.id}"]
        for key in ("purpose", "relevant_policies", "notes"):
            if d.get(key):
                lines.append(f"{key}: {' '.join(str(d[key]).split())}")
        for issue in self.raw.get("issues") or []:
            lines.append(f"open τ² issue {issue.get('id')}: {' '.join(str(issue.get('title')).split())}")
        lines += [f"lossy: {x}" for x in self.lossy]
        return "\n".join(lines)


session_id = tau2_session_id
"""`runtime/imports/tau2.py` finds the sessions by the same ids (`specs.release_ids`)."""


def tool_names(module: Path) -> set[str]:
    import ast

    tree = ast.parse(module.read_text(encoding="utf-8"))
    return {n.name for n in tree.body if isinstance(n, ast.FunctionDef)
            and not n.name.startswith("_")}


def _gold_turn(t: _Task, solo: bool = False) -> list[dict[str, Any]]:
    s = t.session
    # the agent's own gold calls (the user makes `requestor: user` ones with its own tools;
    # in solo mode the agent makes them all)
    calls = solo_.gold_calls(s) if solo else [
        {"name": a["tool"], "args": a["args"]} for a in (s.get("gold") or {}).get(
            "actions", []) if a.get("requestor") != "user"]
    # the rules judge finds an assertion in what the agent said: stating each one lets the gold
    # agent check the environment end to end (it is a check of the pack, not an agent)
    said = ["Done.", *s["score"].get("communicate", []), *s["score"].get("assertions", [])]
    turn: dict[str, Any] = {"say": " ".join(said)}
    if calls:
        turn = {"tool_calls": calls, **turn}
    # a scripted agent's entry k answers user message k + 1, the prior conversation's included
    answered = {"say": "(answered in the prior conversation)"}
    return [*[answered] * st.history_turns(s), turn]


def _gold_user(t: _Task) -> dict[str, Any] | None:
    calls = [{"tool": a["tool"], "args": a["args"]} for a in
             (t.session.get("gold") or {}).get("actions", []) if a.get("requestor") == "user"]
    if not calls:
        return None
    return {"turns": [{"calls": calls, "say": "I did that on my side. Thanks!", "stop": "done"}]}


def _splits(source: Path, extract: dict[str, Any] | None) -> dict[str, list[str]]:
    """task id → the splits listing it (split_tasks.json, or τ²'s own loader)."""
    path = source / "split_tasks.json"
    raw = _load_json(path) if path.is_file() else (extract or {}).get("splits") or {}
    if not isinstance(raw, dict) or not all(isinstance(v, list) for v in raw.values()):
        raise ImportError_(str(path), "expected an object of splits {name: [task id, …]}")
    out: dict[str, list[str]] = {}
    for name, ids in raw.items():
        for i in ids:
            out.setdefault(str(i), []).append(str(name))
    return out


def import_pack(source: Path, out: Path, tau2: dict[str, Any] | None = None,
                fixes: list[str] | tuple[str, ...] = (), solo: bool = False) -> ImportResult:
    """`tau2`: the τ² driver's `extract` of this domain (parity import); `fixes`: recorded
    differences from τ² to switch on (`tau2_parity.FIXES`); `solo`: τ²'s solo mode
    (`tau2_solo.py`)."""
    source = Path(source)
    if not source.is_dir():
        raise ImportError_(str(source), "not a directory",
                           "give a τ² domain folder such as data/tau2/domains/retail")
    domain = source.name
    if solo:
        solo_.check(source, domain, tau2)
    if domain == "banking_knowledge":  # issue 24: its own importer (tau2_banking.py)
        if fixes:
            raise ImportError_(str(source), "--fix does not apply to banking_knowledge",
                               "import the folder without it")
        from .tau2_banking import import_banking
        return import_banking(source, out, tau2)
    if domain not in DOMAINS:
        why = UNSUPPORTED.get(domain)
        raise ImportError_(str(source), f"no toolset for the τ² domain `{domain}`",
                           (why + "; " if why else "") + "supported: "
                           + ", ".join(sorted(DOMAINS)) + "; the folder's name is the domain")
    fixes = parity.check_fixes(domain, fixes)
    telecom = domain == "telecom"  # TOML databases, a composed policy, tasks_small.json
    for name in () if telecom else ("tasks.json", "db.json", "policy.md"):
        if name == "db.json" and tau2 is not None:
            continue  # τ²'s own loaded database
        if not (source / name).is_file():
            hint = "a τ² domain folder holds tasks.json, db.json and policy.md"
            if name == "db.json":
                hint += ("; the database is a large file some copies of τ²'s repository leave "
                         "out: take data/tau2/domains/" + domain + "/db.json from a full clone")
            raise ImportError_(str(source / name), "not found", hint)
    tasks_path = tc.tasks_file(source) if telecom else source / "tasks.json"
    tasks_raw = _load_json(tasks_path)
    if not isinstance(tasks_raw, list) or not all(isinstance(t, dict) for t in tasks_raw):
        raise ImportError_(str(tasks_path), "expected a list of task objects")
    module = TOOLS_DIR / DOMAINS[domain]
    tools = tool_names(module) - st.helpers(module)
    user = _user_side(source, domain, tau2)
    if tau2 is not None:
        parity.check_extract(tau2, domain, sorted(tools))
        tables = _tables(tau2["db"], source / "db.json")
        # the agent's system prompt as τ²'s LLMAgent sends it: its instructions around the policy
        policy = str(tau2.get("agent_system_prompt") or tau2["policy"])
        theirs = {t["id"] for t in tau2.get("tasks") or []}
        ours = {str(t.get("id")) for t in tasks_raw}
        if theirs and theirs != ours:
            raise ImportError_(str(tasks_path), "its task ids are not those of the "
                               "τ² checkout's domain", "import the domain folder of that "
                               "checkout")
    elif telecom:
        tables = _tables(tc.agent_db(source / "db.toml"), source / "db.toml")
        policy = tc.policy(source)
    else:
        tables = _tables(_load_json(source / "db.json"), source / "db.json")
        policy = (source / "policy.md").read_text(encoding="utf-8")
    if solo:
        policy = solo_.policy(source, domain, tau2)
    splits = _splits(source, tau2)
    tasks = [_Task(t, tools, splits.get(str(t.get("id"))), domain,
                   user["tools"] if user else None) for t in tasks_raw]
    scenario = dialogue.scenarios(tau2)
    for t in tasks:
        if t.session:
            dialogue.session_fields(t.session, t.raw, scenario.get(t.id))
        if t.session and solo:
            t.skip = solo_.skip_reason(t.raw)
            if t.skip is None:
                solo_.apply(t.session, t.raw, tau2)
    ids = [t.id for t in tasks]
    sids = [t.sid for t in tasks]
    clash = sorted({i for i in sids if sids.count(i) > 1} - set(ids))
    if clash:
        raise ImportError_(str(tasks_path), "task ids that differ only in characters a pack "
                           "id cannot hold: " + ", ".join(clash))
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise ImportError_(str(tasks_path), "task ids used twice: " + ", ".join(dup))
    kept = [t for t in tasks if t.skip is None]

    out = Path(out)
    if out.exists() and any(out.iterdir()) and not (out / "IMPORT_REPORT.md").is_file():
        raise ImportError_(str(out), "exists and is not an imported pack",
                           "give a new or empty directory (re-importing over an import is fine)")
    for sub in ("data", "tools", "demo", "tau2"):
        if (out / sub).exists():
            shutil.rmtree(out / sub)  # a re-import replaces what an import wrote
    (out / "data").mkdir(parents=True, exist_ok=True)
    (out / "tools").mkdir(exist_ok=True)
    (out / "demo").mkdir(exist_ok=True)
    files: list[str] = []

    def write(rel: str, text: str) -> None:
        (out / rel).write_text(text, encoding="utf-8", newline="\n")
        files.append(rel)

    for name, (_, rows) in tables.items():
        write(f"data/{name}.json", json.dumps(rows, ensure_ascii=False, indent=1) + "\n")
    write(f"tools/{domain}.py", parity.toolset_source(
        module, tau2.get("pydantic") if tau2 is not None else None, fixes))
    if user:
        (out / "data" / "user").mkdir(exist_ok=True)
        for name, (_, rows) in user["tables"].items():
            write(f"data/user/{name}.json", json.dumps(rows, ensure_ascii=False, indent=1)
                  + "\n")
        write(f"tools/{domain}_user.py", parity.toolset_source(
            user["module"], tau2.get("pydantic") if tau2 is not None else None, ()))
        if user["specs"]:
            write(f"tools/{domain}_user.specs.json", user["specs"])
    prompts: dict[str, tuple[str, str]] = {}
    if tau2 is not None:
        write(f"tools/{domain}.specs.json", parity.specs_json(tau2))
        prompts = parity.prompt_files(tau2)
        (out / "tau2").mkdir(exist_ok=True)
        for rel, (text, _) in prompts.items():
            write(rel, text)
        write("tau2/user_system.j2", dialogue.user_template(tau2))
        write("tau2/assertions_judge.j2", dialogue.judge_template(tau2))
    diffs = parity.differences(domain, fixes)
    write("policy.md", policy)
    pack_text = _pack_yaml(domain, tables, tau2, sorted(tools), diffs,
                           bool(st.helpers(module)), user) + dialogue.pack_blocks(
        domain, tau2, dialogue.version(tau2), _telecom_wording(
            domain, dialogue.differences(tau2, diffs))
        + (solo_.differences(tau2) if solo else []), solo_.if_ended() if solo else None)
    if solo:
        pack_text = solo_.pack_text(pack_text, domain, tau2)
    write("pack.yaml", pack_text)
    write("tasks.yaml", _tasks_yaml(domain, kept))
    agent = {"sessions": {t.sid: _gold_turn(t, solo) for t in kept}}
    gold_user = {} if solo else {t.sid: _gold_user(t) for t in kept if _gold_user(t)}
    if gold_user:
        write("demo/gold_user.yaml", "# The gold user: each task's own gold actions "
              "(`requestor: user`), made with the user's\n# tools after the gold agent's turn "
              "(`bench run … --simulator scripted:demo/gold_user.yaml`; see\n# "
              "IMPORT_REPORT.md). Sessions it does not list get a user who says they are "
              "done.\n" + _dump({"sessions": gold_user}))
    write("demo/gold_agent.yaml", "# The gold agent: each task's gold actions in one turn, "
          "then the communicate strings and\n# assertions (`bench import tau2` wrote it; see "
          "IMPORT_REPORT.md). Run it to check the environment.\n" + _dump(agent))
    write("IMPORT_REPORT.md", _report(source, domain, tables, tasks, tau2, prompts, diffs,
                                      tasks_path.name, solo)
          + ("\n" + "\n".join(solo_.report(domain, tau2)) + "\n" if solo else ""))
    notes = [] if tau2 is not None and not diffs else [
        "not comparable with τ²-bench: " + ("our own tool descriptions (give --tau2 CHECKOUT "
                                           "for τ²'s)" if tau2 is None else
                                           ", ".join(d["id"] for d in diffs))]
    return ImportResult(out=out, files=files, sessions=len(kept),
                        dropped=[f"task {t.id}: {t.skip}" for t in tasks if t.skip],
                        notes=notes, differences=diffs)


def _telecom_wording(domain: str, differences: list[str]) -> list[str]:
    """telecom's databases are TOML files whose τ² defaults the importer fills in itself."""
    if domain != "telecom":
        return differences
    return [d.replace("the database is db.json as released (τ²'s models add default fields "
                      "when they load it)", "the databases are db.toml and user_db.toml with "
                      "τ²'s model defaults filled in by benchpack") for d in differences]


def _user_side(source: Path, domain: str, tau2: dict[str, Any] | None
               ) -> dict[str, Any] | None:
    """The user's own tools and database (τ²'s `user_tools`, `user_db.json`; with --tau2 the
    database as τ²'s models load it and τ²'s own definitions of the user's tools), when the
    domain has them: `{module, tools, tables, specs}`."""
    name = st.USER_TOOLSETS.get(domain)
    path = source / "user_db.json"
    if domain == "telecom":  # its user database is two objects, all defaults when absent
        path = source / "user_db.toml"
        db = tau2["user_db"] if tau2 is not None and tau2.get("user_db") else tc.user_db(path)
        module = TOOLS_DIR / st.USER_TOOLSETS["telecom"]
        return {"module": module, "tools": tool_names(module) - st.helpers(module),
                "tables": _tables(db, path), "specs": parity.specs_json(
                    {"tools": tau2["user_tools"]}) if tau2 and tau2.get("user_tools") else None}
    if name is None or not (path.is_file() or (tau2 or {}).get("user_db")):
        return None
    module = TOOLS_DIR / name
    db = tau2["user_db"] if tau2 is not None and tau2.get("user_db") else _load_json(path)
    specs = None
    if tau2 is not None and tau2.get("user_tools"):
        specs = parity.specs_json({"tools": tau2["user_tools"]})
    return {"module": module, "tools": tool_names(module) - st.helpers(module),
            "tables": _tables(db, path), "specs": specs}


def _pack_yaml(domain: str, tables: dict[str, tuple[str, list[dict[str, Any]]]],
               tau2: dict[str, Any] | None, tools: list[str], diffs: list[dict[str, str]],
               has_helpers: bool = False, user: dict[str, Any] | None = None) -> str:
    table_lines = "".join(f"      {name}: {{key: {key}, fixture: data/{name}.json}}\n"
                          for name, (key, _) in tables.items())
    if tau2 is None:
        description = (f"τ²-bench {domain}, NOT comparable with τ²'s scores: the tool "
                       "descriptions are benchpack's own (import with --tau2 CHECKOUT for "
                       "τ²'s).")
    elif diffs:
        description = (f"τ²-bench {domain}, NOT comparable with τ²'s scores: deliberate "
                       "differences " + ", ".join(d["id"] for d in diffs) + " (IMPORT_REPORT.md).")
    else:
        description = (f"τ²-bench {domain} with τ²'s own tool definitions, database and "
                       "policy (IMPORT_REPORT.md lists what τ²'s runner does that benchpack "
                       "does not yet).")
    options = "".join(f"    {k}: {str(v).lower()}\n" for k, v in parity.OPTIONS.items())
    hook = st.SYNCED.get(domain)
    if hook and user:  # both sides in one State, kept in step after every call (τ²'s sync)
        options += (f"    services: [{st.user_service(domain)}]\n"
                    f"    after_call: {hook}\n")
    if tau2 is not None:
        options = f"    specs: tools/{domain}.specs.json   # τ²'s own tool definitions\n" \
            + options
        wanted = parity.tool_order(tau2)
        if set(wanted) != set(tools):
            options += "    include: [" + ", ".join(wanted) + "]\n"
    if has_helpers and "include:" not in options:  # τ²'s non-tool helpers are no tools
        options += "    include: [" + ", ".join(tools) + "]\n"
    user_service = user_toolset = user_env = ""
    if user:
        svc = st.user_service(domain)
        user_service = (
            f"  - name: {svc}\n"
            f"    description: the user's own database (τ²'s "
            f"{'user_db.toml' if domain == 'telecom' else 'user_db.json'}, dual control).\n"
            "    tables:\n" + "".join(f"      {n}: {{key: {k}, fixture: data/user/{n}.json}}\n"
                                    for n, (k, _) in user["tables"].items()))
        user_toolset = (f"  - module: tools/{domain}_user.py   # the user's own tools\n"
                        f"    service: {svc}\n"
                        + (f"    specs: tools/{domain}_user.specs.json   # τ²'s own user tool "
                           "definitions\n" if user.get("specs") else "")
                        + "    include: [" + ", ".join(sorted(user["tools"])) + "]\n"
                        + "".join(f"    {k}: {str(v).lower()}\n"
                                  for k, v in parity.OPTIONS.items())
                        + (f"    services: [{domain}]\n    after_call: {hook}\n"
                           if hook else ""))
        user_env = f"    user_toolsets: [tools/{domain}_user.py]\n"
    return (
        f"# τ²-bench, domain `{domain}`, imported by `bench import tau2` (IMPORT_REPORT.md says\n"
        "# what became of every source field). Edit freely; re-importing overwrites the files.\n"
        "benchpack: 1\n"
        f"name: tau2-{domain}\n"
        f"description: {json.dumps(description, ensure_ascii=False)}\n"
        "personas:\n"
        "  - id: customer\n"
        f"    profile: {{role: a customer contacting {domain} customer service}}\n"
        "services:\n"
        f"  - name: {domain}\n"
        f"    description: τ²'s {domain} database ({'db.toml' if domain == 'telecom' else 'db.json'}), "
        "one table per top-level key.\n"
        "    tables:\n"
        f"{table_lines}"
        f"{user_service}"
        "toolsets:                    # our own implementation of τ²'s tools (runs with "
        "--allow-python)\n"
        f"  - module: tools/{domain}.py\n"
        f"    service: {domain}\n"
        f"{options}"
        f"{user_toolset}"
        "environments:\n"
        f"  - id: {domain}\n"
        "    builtin_tools: []\n"
        f"    toolsets: [tools/{domain}.py]\n"
        f"{user_env}"
        "    policy: {file: policy.md, literal: true}   # τ²'s policy.md, the agent's system "
        "prompt\n"
        "include: [tasks.yaml]        # one episode per τ² task\n")


def _tasks_yaml(domain: str, kept: list[_Task]) -> str:
    parts = ["# benchpack: literal\n"
             f"# The τ² tasks of `{domain}` (tasks.json, in source order), one episode each: "
             "every task\n# starts from the database as released, changed by its `initial_state` when it "
             "has one.\n", "episodes:\n"]
    for t in kept:
        episode = {"id": f"task-{t.sid}", "persona": "customer", "environment": domain,
                   "memory": "none", "sessions": [t.session]}
        parts.append(_comment(t.comments(), 2))
        parts.append(_indent(_dump([episode]), 2))
    return "".join(parts)


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def _report(source: Path, domain: str, tables: dict[str, tuple[str, list[dict[str, Any]]]],
            tasks: list[_Task], tau2: dict[str, Any] | None,
            prompts: dict[str, tuple[str, str]], diffs: list[dict[str, str]],
            tasks_name: str = "tasks.json", solo: bool = False) -> str:
    kept = [t for t in tasks if t.skip is None]
    lines = [f"# Import report: τ²-bench `{domain}`", "",
             f"`bench import tau2 {domain}` read these files of the domain folder "
             "(sha256, first 16 hex digits):", ""]
    for p in sorted(source.iterdir()):
        if p.is_file():
            lines.append(f"- `{p.name}` — {_sha(p)}")
    lines += ["", f"Tasks: {len(tasks)} in {tasks_name}, {len(kept)} imported, "
              f"{len(tasks) - len(kept)} not imported (listed below).",
              "Tables: " + ", ".join(f"`{n}` ({len(r)} rows, key `{k}`)"
                                     for n, (k, r) in tables.items()) + ".", "",
              "## Every source field", "", "| source field | what became of it | where / why |",
              "|---|---|---|"]
    lines += [f"| `{f}` | {fate} | {why} |" for f, fate, why in
              (solo_.fields(FIELDS) if solo else FIELDS)]
    lines += ["", *parity.report(domain, tau2, prompts, diffs)]
    lines += ["", "## Gold agent", "",
              "`demo/gold_agent.yaml` makes each task's gold actions in one turn and then says "
              "the `communicate` strings and the assertions verbatim, so that with the rules "
              "user and the rules judge every imported task should reach reward 1.0. It checks "
              "the environment; it is not a baseline agent.", "",
              "## Tasks not imported", ""]
    skipped = [t for t in tasks if t.skip]
    lines += [f"- `{t.id}`: {t.skip}" for t in skipped] or ["None."]
    lines += ["", "## Tasks imported with loss", ""]
    lossy = [t for t in kept if t.lossy]
    lines += [f"- `{t.id}`: " + "; ".join(t.lossy) for t in lossy] or ["None."]
    return "\n".join(lines) + "\n"
