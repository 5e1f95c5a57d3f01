"""Lints (W3xx): each one fires on a pack written to trigger it and stays silent on a near miss
(the same pack one small step away). `--strict` turns warnings into errors; `lint: {ignore}` on
a session or the pack silences them.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from benchpack.cli import cli
from benchpack.compiler import CODES, compile_pack, validate_pack

# Clean under --strict: one session per protocol, every lint one edit away.
BASE = """\
benchpack: 1
name: lints
personas:
  - id: mia
    profile: {role: Quilter preparing for a show}
    style: Q
services:
  - name: mail
    tables:
      inbox:
        key: id
        rows: [{id: M-1, subject: Entry form}]
        row_schema: {type: object, properties: {id: {type: string}, subject: {type: string}}}
    operations:
      - {name: send, kind: create, table: inbox, fields: [subject]}
event_streams:
  - name: log
    events:
      - {at: "2026-03-01T09:00:00", source: mail, action: receive, ref: E-1, text: Form arrived}
      - {at: "2026-03-01T10:00:00", source: mail, action: receive, ref: E-2, text: Form withdrawn, conflicts_with: E-1}
tools:
  - name: lookup
    description: Look up show rules
    parameters: {type: object, properties: {topic: {type: string, description: what to look up}}}
    impl: {kind: static, result: {rule: Quilts must be labelled}}
environments:
  - id: studio
    files: [{path: notes.md, content: "Mia wants to pay the entry fee by card, always."}]
    services: [mail]
    event_streams: [log]
    tools: [lookup]
episodes:
  - id: show
    persona: mia
    environment: studio
    sessions:
      - id: plan
        protocol: intent_tracking
        request: Help me get ready for the regional quilt show.
        hidden_intents:
          - text: The label must name the quilting technique used
          - text: Pay the entry fee by card
            scope: persistent
        checklist:
          - text: The answer mentions the quilt label
      - id: search
        protocol: staged_disclosure
        request: I need a frame for hand quilting.
        stages:
          - {when: {kind: mentions, about: hoop versus frame}, line: It has to fit a queen size quilt.}
          - {when: {kind: asks, about: budget}, line: I can spend about two hundred dollars.}
        graph:
          triples:
            - [Grace Frame, supports, king size quilts]
            - [Grace Frame, costs, 189 dollars]
      - id: dialogue
        protocol: trigger_rubric
        scenario:
          hidden_goal: Win a ribbon in the art quilt category
          anchors:
            - {id: deadline, text: Entries close on Friday}
            - {id: photo, text: The form needs a photo}
            - {id: binding, text: The binding is unfinished}
        triggers:
          - type: emergent
            turn: 2
            anchors: [deadline]
            rubric: {pass: Proposes a schedule that meets the Friday cutoff, partial: Notes timing, fail: Ignores timing}
          - type: critical
            turn: 5
            anchors: [photo, binding]
            rubric: {pass: Suggests photographing after finishing the binding, partial: One of them, fail: Neither}
          - type: recovery
            turn: 9
            rubric: {pass: Offers a packing checklist for the drop-off, partial: Generic tips, fail: Nothing}
        dialogue:
          - {turn: 1, user: I am entering my first show.}
          - {turn: 2, user: Entries close on Friday., discloses: [deadline]}
          - {turn: 3, user: Thanks.}
          - {turn: 4, user: The form needs a photo., discloses: [photo]}
          - {turn: 5, user: Also the binding is unfinished., discloses: [binding]}
          - {turn: 6, user: Ok.}
          - {turn: 7, user: Fine.}
          - {turn: 8, user: Good.}
          - {turn: 9, user: I think that is everything.}
      - id: inbox
        protocol: verified_outcome
        request: Reply to the show organiser.
        checklist:
          - text: A reply is sent
            rule: {tool: mail__send}
          - text: The reply is polite
            aspect: process
        verify: {pass_threshold: 0.5}
"""


def warnings(root: Path, text: str, extra: dict[str, str] | None = None) -> list[tuple[str, str]]:
    """(code, JSON path) of every diagnostic of the pack; fails on errors."""
    (root / "pack.yaml").write_text(text, encoding="utf-8")
    for rel, content in (extra or {}).items():
        (root / rel).write_text(content, encoding="utf-8")
    result = validate_pack(root)
    assert not result.errors, [d.format() for d in result.errors]
    return [(d.code, d.json_path) for d in result.diagnostics]


def edit(*pairs: tuple[str, str]) -> str:
    text = BASE
    for old, new in pairs:
        assert old in text, old
        text = text.replace(old, new, 1)
    return text


def test_base_is_clean(tmp_path: Path) -> None:
    assert warnings(tmp_path, BASE) == []
    assert validate_pack(tmp_path, strict=True).plan is not None


PLAN = "$.episodes[0].sessions[0]"
SEARCH = "$.episodes[0].sessions[1]"
DIALOGUE = "$.episodes[0].sessions[2]"
INBOX = "$.episodes[0].sessions[3]"
INBOX_END = "        verify: {pass_threshold: 0.5}\n"
STATUS = """\
      - id: status
        protocol: instructed_user
        user:
          reason: You want to know whether the show organiser got your entry form.
          known: [You sent the form on Monday.]
        gold:
          actions: {gold}
        score:
          reward: [state, actions]
"""
STATUS_AT = "$.episodes[0].sessions[4]"

REQUEST = "request: Help me get ready for the regional quilt show."
# code -> (edit that triggers it, expected JSON path, near-miss edit that must stay clean)
CASES: dict[str, list[tuple[tuple[tuple[str, str], ...], str, tuple[tuple[str, str], ...]]]] = {
    "W301": [
        (((REQUEST, "request: Get me ready for the show; the label must name the quilting "
                    "technique used."),),
         f"{PLAN}.hidden_intents[0].text",
         ((REQUEST, "request: Help me write the label for the quilt show."),)),
        ((("- {turn: 1, user: I am entering my first show.}",
           "- {turn: 1, user: I want to win a ribbon in the art quilt category.}"),),
         f"{DIALOGUE}.scenario.hidden_goal",
         (("- {turn: 1, user: I am entering my first show.}",
           "- {turn: 1, user: I hope the art quilt does well.}"),)),
    ],
    "W302": [
        ((("line: I can spend about two hundred dollars.", "line: It has to fit a queen size quilt."),),
         f"{SEARCH}.stages[1].line",
         (("line: I can spend about two hundred dollars.", "line: It should also fold away."),)),
    ],
    "W303": [
        ((("- {turn: 1, user: I am entering my first show.}",
           "- {turn: 1, user: Propose a schedule that meets the Friday cutoff.}"),),
         f"{DIALOGUE}.triggers[0].rubric.pass",
         # said after the trigger's turn: the assistant already had to infer it
         (("- {turn: 3, user: Thanks.}",
           "- {turn: 3, user: Propose a schedule that meets the Friday cutoff.}"),)),
    ],
    "W304": [
        ((("line: It has to fit a queen size quilt.",
           "line: I read that the Grace Frame supports king size quilts."),),
         f"{SEARCH}.stages[0].line",  # the line that gives the fact away, not the graph
         (("line: It has to fit a queen size quilt.", "line: I read about the Grace Frame."),)),
        # Chinese has no spaces between words: head and tail stated verbatim inside a sentence
        ((("- [Grace Frame, costs, 189 dollars]", "- [格蕾丝绣架, 价格, 一百八十九美元]"),
          ("line: I can spend about two hundred dollars.", "line: 听说格蕾丝绣架只要一百八十九美元。")),
         f"{SEARCH}.stages[1].line",
         (("- [Grace Frame, costs, 189 dollars]", "- [格蕾丝绣架, 价格, 一百八十九美元]"),
          ("line: I can spend about two hundred dollars.", "line: 听说格蕾丝绣架不太贵。"))),
    ],
    "W305": [
        ((("- {turn: 4, user: The form needs a photo., discloses: [photo]}",
           "- {turn: 4, user: The form needs a photo and a deadline., discloses: [photo, deadline]}"),),
         f"{DIALOGUE}.dialogue[3].discloses",
         (("- {id: deadline, text: Entries close on Friday}",
           "- {id: deadline, text: Entries close on Friday, primary: false}"),
          ("- {turn: 4, user: The form needs a photo., discloses: [photo]}",
           "- {turn: 4, user: The form needs a photo and a deadline., discloses: [photo, deadline]}"))),
    ],
    "W306": [
        ((("type: emergent\n            turn: 2", "type: emergent\n            turn: 4"),),
         f"{DIALOGUE}.triggers[0].turn",
         (("type: emergent\n            turn: 2", "type: emergent\n            turn: 3"),)),
    ],
    "W307": [
        ((("- text: The answer mentions the quilt label",
           "- text: The answer mentions the quilt label and also lists the entry deadline"),),
         f"{PLAN}.checklist[0].text",
         (("- text: The answer mentions the quilt label",
           "- text: The answer mentions the label and the deadline of the show"),)),
        ((("- text: The reply is polite", "- text: The reply is polite, and also confirms the fee"),),
         f"{INBOX}.checklist[1].text",
         # graded by a rule, not by a judge reading the sentence
         (("- text: A reply is sent", "- text: A reply is sent and also logged"),)),
    ],
    "W308": [
        ((("          - text: The label must name the quilting technique used\n"
           "          - text: Pay the entry fee by card\n            scope: persistent\n", ""),
          ("        hidden_intents:\n", "")),
         PLAN,
         (("          - text: The label must name the quilting technique used\n", ""),)),
    ],
    "W309": [
        ((("Mia wants to pay the entry fee by card, always.", "Mia likes tidy labels."),),
         f"{PLAN}.hidden_intents[1]",
         (("Mia wants to pay the entry fee by card, always.", "Mia likes tidy labels."),
          ("scope: persistent\n", "scope: persistent\n            evidence: [notes.md]\n"))),
    ],
    "W310": [
        ((("          - type: recovery\n            turn: 9\n"
           "            rubric: {pass: Offers a packing checklist for the drop-off, partial: Generic tips, fail: Nothing}\n", ""),),
         f"{DIALOGUE}.triggers",
         (("          - type: recovery\n            turn: 9\n",
           "          - type: recovery\n            turn: 8\n"),)),
    ],
    "W311": [
        ((("style: Q", "style: P+E"),), "$.personas[0].style", (("style: Q", "style: E+Q"),)),
    ],
    "W322": [
        # terse Q (5–25 words) told to write at length: the simulator gets both
        ((("style: Q", "style: {code: Q, directives: [Writes verbose long-winded messages]}"),),
         "$.personas[0].style.directives[0]",
         (("style: Q", "style: {code: Q, max_words: 80, directives: [Writes verbose "
           "long-winded messages]}"),)),
        # π-Bench's `verbosity: high` as a directive on a terse style (issue 28)
        ((("style: Q", "style: {code: Q, directives: ['Verbosity preference: high.']}"),),
         "$.personas[0].style.directives[0]",
         (("style: Q", "style: {code: E+Q, directives: ['Verbosity preference: high.']}"),)),
        # explicit word counts outside the bounds, and Chinese
        ((("style: Q", "style: {code: E+Q, directives: [Keeps to 5-10 words]}"),),
         "$.personas[0].style.directives[0]",
         (("style: Q", "style: {code: E+Q, directives: [Keeps to 50-60 words]}"),)),
        ((("style: Q", "style: {code: E+Q, directives: [说话简短]}"),),
         "$.personas[0].style.directives[0]",
         (("style: Q", "style: {code: Q, directives: [说话简短]}"),)),
    ],
    "W312": [
        ((("    tools: [lookup]\n", ""),), "$.tools[0]",
         (("    tools: [lookup]\n", ""), ("      - id: inbox\n", "      - id: inbox\n        tools: [lookup]\n"))),
    ],
    "W314": [
        ((("{topic: {type: string, description: what to look up}}", "{topic: {type: string, desciption: what to look up}}"),),
         "$.tools[0].parameters.properties.topic.desciption",
         (("{topic: {type: string, description: what to look up}}", "{topic: {type: string, x-note: what to look up}}"),)),
    ],
    "W318": [
        ((("verify: {pass_threshold: 0.5}",
           "verify: {pass_threshold: 0.5, caps: [{when: {tool: mail__send}, reason: No mail}]}"),),
         f"{INBOX}.verify.caps[0].when",
         # a cap on some calls only (here: the wrong subject) leaves a correct agent a way
         (("verify: {pass_threshold: 0.5}",
           "verify: {pass_threshold: 0.5, caps: [{when: {tool: mail__send, where: "
           "{args.subject: {contains: Press}}}, reason: No press mail}]}"),)),
        ((("verify: {pass_threshold: 0.5}",
           "verify: {pass_threshold: 0.5, caps: [{when: {tool: 'mail__*'}, reason: No mail}]}"),
          ("rule: {tool: mail__send}", "rule: {all: [{tool: mail__send, count: {min: 1}}]}")),
         f"{INBOX}.verify.caps[0].when",
         # (the polite item made an outcome: a checklist of guards alone would be W320)
         (("rule: {tool: mail__send}", "rule: {tool: mail__send, exists: false}"),
          ("verify: {pass_threshold: 0.5}",
           "verify: {pass_threshold: 0.5, caps: [{when: {tool: 'mail__*'}, reason: No mail}]}"),
          ("            aspect: process\n", ""))),
    ],
    # issue 25: the only outcome item holds when nothing happens (no reply sent), so the gate
    # leaves every agent at 0; a judged outcome item beside it is left to the judge
    "W320": [
        ((("rule: {tool: mail__send}", "rule: {tool: mail__send, exists: false}"),),
         f"{INBOX}.checklist[0]",
         (("rule: {tool: mail__send}", "rule: {tool: mail__send, exists: false}"),
          ("            aspect: process\n", ""))),
    ],
    # issue 25: a τ²-style reward an agent doing nothing earns (no gold action, so the state
    # stays right and every gold action is "made"); one read it must make is enough to fix it
    "W321": [
        (((INBOX_END, INBOX_END + STATUS.format(gold="[]")),), f"{STATUS_AT}.score.reward",
         ((INBOX_END, INBOX_END + STATUS.format(
             gold="\n            - {tool: lookup, args: {topic: labels}}")),)),
    ],
    "W315": [
        ((("conflicts_with: E-1", "conflicts_with: E-9"),), "$.event_streams[0].events[1].conflicts_with",
         (("conflicts_with: E-1", "conflicts_with: M-1"),)),  # a service row counts too
    ],
    "W316": [
        ((("- {turn: 5, user: Also the binding is unfinished., discloses: [binding]}",
           "- {turn: 5, user: Also the binding is unfinished.}"),
          ("- {turn: 6, user: Ok.}", "- {turn: 6, user: The binding is unfinished., discloses: [binding]}")),
         f"{DIALOGUE}.triggers[1].anchors",
         (("- {turn: 4, user: The form needs a photo., discloses: [photo]}",
           "- {turn: 4, user: The binding is unfinished., discloses: [binding]}"),
          ("- {turn: 5, user: Also the binding is unfinished., discloses: [binding]}",
           "- {turn: 5, user: The form needs a photo., discloses: [photo]}"))),
    ],
    "W317": [
        ((("anchors: [photo, binding]", "anchors: [photo]"),), f"{DIALOGUE}.triggers[1].anchors",
         (("anchors: [photo, binding]", "anchors: [binding, photo]"),)),
        ((("            anchors: [deadline]\n", ""),), f"{DIALOGUE}.triggers[0].anchors",
         # the base's recovery trigger has no anchors either, and needs none
         (("type: recovery", "type: recovery"),)),
    ],
}


# lints about files other than the pack's YAML, tested where such files are built
ELSEWHERE = {"W319": "tests/compiler/test_toolsets.py",  # a python tool module's docstring
             "W340": "tests/runtime/test_knowledge.py",  # golden retrieval, no documents
             "W341": "tests/test_diagnostics.py"}  # user tools need Python toolset files


def test_every_lint_has_a_case() -> None:
    lints = {c for c, (severity, _) in CODES.items() if severity == "warning"}
    assert lints == set(CASES) | set(ELSEWHERE)
    root = Path(__file__).resolve().parents[1]
    for code, where in ELSEWHERE.items():
        assert f"test_{code.lower()}_" in (root / where).read_text(encoding="utf-8"), code


@pytest.mark.parametrize(("code", "i"), [(c, i) for c, cases in CASES.items()
                                          for i in range(len(cases))])
def test_lint_fires_and_near_miss_is_silent(tmp_path: Path, code: str, i: int) -> None:
    trigger, where, near_miss = CASES[code][i]
    found = warnings(tmp_path, edit(*trigger))
    assert (code, where) in found, found
    assert [c for c, _ in found] == [code], found  # nothing else fires
    assert warnings(tmp_path, edit(*near_miss)) == []


def test_strict_promotes_warnings_to_errors(tmp_path: Path) -> None:
    (tmp_path / "pack.yaml").write_text(edit(("style: Q", "style: P+E")), encoding="utf-8")
    assert validate_pack(tmp_path).plan is not None
    assert validate_pack(tmp_path, strict=True).plan is None
    assert compile_pack(tmp_path, tmp_path / "out", strict=True).plan_bytes is None
    assert not (tmp_path / "out").exists()
    runner = CliRunner()
    relaxed = runner.invoke(cli, ["compile", str(tmp_path), "-o", str(tmp_path / "o1")])
    assert relaxed.exit_code == 0 and "W311" in relaxed.output
    strict = runner.invoke(cli, ["compile", str(tmp_path), "-o", str(tmp_path / "o2"), "--strict"])
    assert strict.exit_code == 1 and "errors under --strict" in strict.output
    assert runner.invoke(cli, ["validate", str(tmp_path), "--strict"]).exit_code == 1


def test_session_ignore_silences_only_that_session(tmp_path: Path) -> None:
    leak = ("request: I need a frame for hand quilting.",
            "request: I need a frame for hand quilting that can fit a queen size quilt.")
    assert ("W302", f"{SEARCH}.stages[0].line") in warnings(tmp_path, edit(leak))
    silenced = edit(leak, ("      - id: search\n", "      - id: search\n        lint: {ignore: [W302]}\n"))
    assert warnings(tmp_path, silenced) == []
    other = edit(leak, ("      - id: plan\n", "      - id: plan\n        lint: {ignore: [W302]}\n"))
    assert [c for c, _ in warnings(tmp_path, other)] == ["W302"]


def test_pack_ignore_silences_every_kind_of_lint(tmp_path: Path) -> None:
    noisy = edit(("style: Q", "style: P+E"),                        # W311, on a persona
                 ("conflicts_with: E-1", "conflicts_with: E-9"),    # W315, on a stream
                 ("description: what to look up", "desciption: what to look up"),  # W314
                 ("    tools: [lookup]\n", ""),                     # W312
                 ("anchors: [photo, binding]", "anchors: [photo]"))  # W317, in a session
    assert sorted(c for c, _ in warnings(tmp_path, noisy)) == ["W311", "W312", "W314", "W315",
                                                                 "W317"]
    quiet = noisy.replace("name: lints\n", "name: lints\nlint: {ignore: [W311, W312, W314, W315, W317]}\n")
    assert warnings(tmp_path, quiet) == []


def test_unknown_code_in_ignore_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "pack.yaml").write_text(BASE.replace("name: lints\n", "name: lints\nlint: {ignore: [W313]}\n"))
    (d,) = validate_pack(tmp_path).diagnostics
    assert (d.code, d.json_path, d.line) == ("E104", "$.lint.ignore[0]", 3)
    assert d.message == "`W313` is not a lint code"
