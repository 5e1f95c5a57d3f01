"""What `bench import pibench` makes of every source field (the rows of IMPORT_REPORT.md, so
the report and the code cannot disagree), and the lints it silences with their reasons.

Fates: `mapped` (into the pack, used as π-Bench uses it), `mapped with loss` (used, but not as
π-Bench does: the difference is said), `kept as a comment` (in the pack's YAML for the reader,
not used by anything), `dropped`."""

from __future__ import annotations

FATES = ("mapped", "mapped with loss", "kept as a comment", "dropped")

LINT_IGNORED = {
    "W307": "some released checklist criteria bundle several requirements; they are π-Bench's "
            "own items, split them only knowing COMP then differs from the paper's",
    "W308": "π-Bench tasks without `objectives.checklist` are scored on PROC only (no COMP), "
            "as in the release",
}
"""Lint warnings about the release's own content, silenced in the pack with the reason."""

# (source field, fate, what became of it / why) — the rows of IMPORT_REPORT.md
FIELDS: list[tuple[str, str, str]] = [
    ("profile.yaml: schema_version", "dropped", "format version of the release (`v2` "
     "expected; another value is reported below)"),
    ("profile.yaml: user_id", "mapped", "persona id and the episode's persona"),
    ("profile.yaml: role", "mapped", "`personas[].profile.role`, verbatim (the simulated user's "
     "background, shown to the user simulator only)"),
    ("profile.yaml: preferences.language", "mapped", "`profile.language` and the sessions' "
     "`metadata.language`"),
    ("profile.yaml: preferences.verbosity", "mapped", "`profile.preferences` as "
     "`verbosity: <value>`, verbatim, shown to the user simulator; no `style:` (a style brings "
     "word bounds π-Bench does not state, so none are invented)"),
    ("profile.yaml: preferences (other keys)", "mapped", "`profile.preferences` as `key: value`"),
    ("profile.yaml: long_term_goals[]", "mapped", "`profile.long_term_goals`"),
    ("episode.yaml: schema_version", "dropped", "format version (see profile.yaml)"),
    ("episode.yaml: episode_id", "mapped", "episode id"),
    ("episode.yaml: user_id", "mapped", "checked against profile.yaml; the episode's persona"),
    ("episode.yaml: tasks[].task_id", "mapped", "session ids, in a dependency order stable on "
     "the file's order"),
    ("episode.yaml: tasks[].depends_on[]", "mapped", "session `depends_on`, exactly (unknown "
     "ids and cycles are errors)"),
    ("tools.yaml: tool_names[]", "kept as a comment", "listed in a comment of pack.yaml (the "
     "tools the tasks name are declared from `objectives.tools`, see below)"),
    ("task.yaml: schema_version", "dropped", "format version (see profile.yaml)"),
    ("task.yaml: task_id", "mapped", "session id (checked against the directory name)"),
    ("task.yaml: user_id", "mapped", "checked against the persona directory"),
    ("task.yaml: environment_id", "mapped with loss", "tag `environment_id:<id>`: π-Bench's "
     "AppWorld environment; the episode runs in benchpack's workspace, with the apps its tasks "
     "use as benchpack's own toolsets (environment `apps-<persona>`) when they use any"),
    ("task.yaml: title", "mapped", "session `title` (left out when empty)"),
    ("task.yaml: description", "mapped", "session `description` (left out when empty)"),
    ("task.yaml: task_type", "mapped", "`metadata.category` and tag `task_type:<type>`: both "
     "`--by category` and `--by task_type` group by it"),
    ("task.yaml: trigger.type", "mapped", "session `trigger` (`user` → a user message, the "
     "default)"),
    ("task.yaml: intent.initial_input", "mapped", "session `request`, verbatim"),
    ("task.yaml: intent.hidden_intent[].content", "mapped", "`hidden_intents[].text` (ids "
     "`i1`, `i2`, …), verbatim"),
    ("task.yaml: objectives.checklist[].criterion", "mapped", "`checklist[].text` (ids `c1`, "
     "`c2`, …), graded by the rubric judge as in π-Bench"),
    ("task.yaml: objectives.files_read[]", "mapped with loss", "`evidence.files` of every "
     "checklist item, so the judge sees their final content; π-Bench also shows them to its "
     "intent judge every turn, benchpack's intent judge sees the files the agent touched in "
     "that turn. A task with no checklist keeps them in a comment"),
    ("task.yaml: objectives.tools[].<tool> (Simple Note, Gmail, Todoist, Phone, Amazon)",
     "mapped with loss", "a tool of the same name from benchpack's own stateful toolset for "
     "the app (`tools/pibench/<app>.py`, in the persona's environment), not AppWorld: answers "
     "and business rules are ours; the apps start empty (no AppWorld state in the release) but "
     "for Amazon products the task names, with unknown price, rating and stock"),
    ("task.yaml: objectives.tools[].<tool> (other apps or operations)", "kept as a comment",
     "no toolset of ours has it: the comment over the session names it"),
    ("task.yaml: objectives.tools[].<tool>.call / .result", "kept as a comment", "in the "
     "comment over the session: they select fields of tool records for the grader script"),
    ("task.yaml: objectives.tools_evaluation_path (scripts GRADERS.md describes: Financier "
     "002, 017, 020)", "mapped with loss", "each binary check one checklist item `g1`, `g2`, … "
     "graded by a rule (sequence on one note id, exact-title pre-clean, content groups as "
     "substrings, static checks of the written file); the scripts' literals are known only "
     "from the description, so a check may be stricter or looser than the script's"),
    ("task.yaml: objectives.tools_evaluation_path (other scripts)", "kept as a comment",
     "the script is program code, not in the release data, and undescribed: its checks cannot "
     "be derived, so they are dropped (listed per task below); the checklist is scored"),
    ("task.yaml: metadata.difficulty", "mapped", "`metadata.difficulty` (a value other than "
     "easy/medium/hard becomes tag `difficulty:<value>`)"),
    ("task.yaml: metadata.<key> (other scalars and lists)", "mapped", "tags `<key>:<value>` "
     "(one per list item), so `--by <key>` groups by them"),
    ("tasks/<task_id>/<asset> (every other file)", "mapped", "copied byte for byte to "
     "`files/<persona>/<task_id>/`; placed in the workspace under the same relative path when "
     "the session starts"),
    ("(persona directory) name", "mapped", "`metadata.domain` of the episode: `--by domain` "
     "(or `--by persona`) gives π-Bench's per-persona columns"),
]

__all__ = ["FATES", "FIELDS", "LINT_IGNORED"]
