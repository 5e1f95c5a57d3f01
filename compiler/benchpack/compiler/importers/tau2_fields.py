"""What `bench import tau2` makes of every τ² source field (`FIELDS`): the table of each
pack's IMPORT_REPORT.md, kept apart from the importer (`tau2.py`) that follows it."""

from __future__ import annotations

FIELDS: list[tuple[str, str, str]] = [
    # (source field, fate, where / why)
    ("db.json", "mapped", "one table per top-level key (`data/<table>.json`, rows in source "
     "order; the key field is the one equal to each row's dictionary key) of the service "
     "`<domain>`; with --tau2 the rows are τ²'s loaded database (`model_dump()`: every field "
     "its models default, numbers as they load), else db.json as released"),
    ("policy.md", "mapped", "`policy.md`, the environment's `policy:` (literal: braces are kept); "
     "with --tau2 it is the whole system prompt of τ²'s agent (its instructions around the "
     "policy), as τ²'s code renders it"),
    ("policy_solo.md", "dropped", "used by `--solo` (τ²'s solo mode: an agent without a user)"),
    ("split_tasks.json", "mapped", "each session's `metadata.tags` `split:<name>` for every "
     "split listing it (`bench report … --by split`; a task in several splits shows as e.g. "
     "`base, train`)"),
    ("db.toml, user_db.toml (telecom)", "mapped", "telecom's databases, loaded as τ²'s models "
     "load them (`tau2_telecom.py`: defaults filled in, float fields as floats, dates printed as "
     "τ² prints them); the user's `device` and `surroundings` become one-row tables keyed `id`; "
     "both toolsets hold both services (`services:`) and run `sync_sides` (τ²'s `sync_tools`) "
     "as their `after_call`"),
    ("main_policy.md, tech_support_manual.md (telecom)", "mapped", "`policy.md`, composed as "
     "τ²'s telecom environment does (`<main_policy>` … `<tech_support_policy>`)"),
    ("tasks_small.json (telecom)", "mapped", "the tasks when the folder has no tasks.json (τ²'s "
     "full set, read instead when present)"),
    ("tasks[].id", "mapped", "session id (and episode `task-<id>`); an id a pack id cannot hold "
     "(telecom's `[mms_issue]…[PERSONA:Easy]`) has its other characters made `-` and the session "
     "the tag `tau2-id:<id>`"),
    ("tasks[].description.purpose", "mapped with loss", "a YAML comment above the session "
     "(for people; not used by simulators or scores)"),
    ("tasks[].description.relevant_policies", "mapped with loss", "a YAML comment above the "
     "session"),
    ("tasks[].description.notes", "mapped with loss", "a YAML comment above the session"),
    ("tasks[].user_scenario", "mapped", "with --tau2: `user.text`, the scenario exactly as "
     "τ²'s simulator prompt holds it (`str(user_scenario)`), which the chat simulator reads; "
     "the structured fields below stay for the rules simulator"),
    ("tasks[].user_scenario.persona", "mapped with loss", "a plain-text `user.instructions` "
     "entry `Persona: …` (the LLM simulator follows it; the rules simulator ignores plain text)"),
    ("tasks[].user_scenario.instructions (text)", "mapped", "`user.reason` (mock tasks give one "
     "text: the user opens with it)"),
    ("tasks[].user_scenario.instructions.reason_for_call", "mapped", "`user.reason`"),
    ("tasks[].user_scenario.instructions.known_info", "mapped", "`user.known` (one item)"),
    ("tasks[].user_scenario.instructions.unknown_info", "mapped", "`user.unknown` (one item; "
     "none when null)"),
    ("tasks[].user_scenario.instructions.task_instructions", "mapped with loss", "a plain-text "
     "`user.instructions` entry: the LLM simulator follows it, the rules simulator cannot "
     "(it follows only structured `if`/`after_turn` instructions); a lone '.' is left out"),
    ("tasks[].user_scenario.instructions.domain", "dropped", "always the imported domain (the "
     "pack's name says it)"),
    ("tasks[].ticket", "dropped", "the solo-mode task text (used by `--solo`); the user "
     "simulator is given the scenario instead"),
    ("user_db.json", "mapped", "the user's own database (dual control): the service "
     "`<domain>_user`, one table per top-level key (`data/user/<table>.json`), whose tools "
     "(`tools/<domain>_user.py`, our own, as the environment's `user_toolsets`) only the "
     "simulated user gets; domains without user tools ignore it"),
    ("tasks[].initial_state", "mapped", "`initial_state`, applied as τ²'s `set_state`: "
     "`initialization_data` → `data` (agent_data patches the domain's service, user_data the "
     "user's; rows merged key by key), `initialization_actions` → `actions` (`env_type` "
     "assistant → `side: agent`; τ²'s non-tool helpers run by name), `message_history` → "
     "`history` (the agent's history and turn 0 of the transcript, its tool calls replayed; "
     "`turn_idx` dropped). The gold agent's first entries answer the history's user messages"),
    ("tasks[].evaluation_criteria.actions", "mapped", "`gold.actions` (`action_id` → `id`, "
     "`name` → `tool`, `arguments` → `args`, `info` → `info`, `compare_args` → `compare`, "
     "`requestor` → `requestor`), each `match: tau2` (τ²'s comparison: the `compare` keys or "
     "the keys of the agent's call); null → no `state`/`actions` component (no gold final "
     "state exists)"),
    ("tasks[].evaluation_criteria.communicate_info", "mapped", "`score.communicate`, checked "
     "as τ² does (`communicate_match: tau2`)"),
    ("tasks[].evaluation_criteria.nl_assertions", "mapped", "`score.assertions`, judged as τ² "
     "does (`assertions_judge: tau2`: one call, τ²'s prompt with --tau2)"),
    ("tasks[].evaluation_criteria.env_assertions", "mapped", "`score.env_assertions` "
     "(`func_name` → `function`, `arguments` → `args`, `env_type` → `side`, `assert_value` → "
     "`expect`): our toolsets' predicate functions (`HELPERS`, not offered as tools) over the "
     "final state. Where τ²'s raises for a missing row (its evaluation then fails), ours "
     "does not hold"),
    ("tasks[].evaluation_criteria.reward_basis", "mapped", "`score.reward`: DB → state, ACTION → "
     "actions, COMMUNICATE → communicate, NL_ASSERTION → assertions, ENV_ASSERTION → "
     "env_assertions; missing → τ²'s default [DB, COMMUNICATE]; a component with nothing to "
     "check (no communicate_info, no nl_assertions, no env_assertions) is left out, as τ² "
     "scores it 1; the state check covers the user's database too, as τ²'s does"),
    ("tasks[].annotations", "dropped", "curation metadata, not used to run or score"),
    ("tasks[].issues", "mapped with loss", "a YAML comment above the session naming each open "
     "issue (its title); the linked simulation files are not imported"),
]
