"""Unsegmented scripts (Chinese, Japanese, Thai) in every deterministic text match: the shared
tokeniser (`benchpack.specs.text`), the rules stage simulator and the match graph grader, end to
end on a Chinese staged-disclosure pack (`tests/fixtures/staged_zh`).

Before the shared tokeniser, a Chinese sentence was one "word": no stage of the Chinese pack was
ever judged met (five pushes, an empty graph) and 5 of the 20 reworded Chinese triples below were
matched, against 20 of the 20 English ones.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import pytest

from benchpack.runtime.graders.graph import Triple, match_coverage
from benchpack.runtime.judges.intent import coverage, tokens
from benchpack.runtime.judges.staged import StageView, question_sentences, rules_verdict
from benchpack.specs.plan import PlanStage
from benchpack.specs.text import grams, width, words
from conftest import bench_run

CASE = Path(__file__).resolve().parents[1] / "fixtures" / "staged_zh"

# --------------------------------------------------------------------------- the tokeniser


def test_words_split_unsegmented_runs_into_characters() -> None:
    assert words("Opening_Hours: 7:30! 蕨杯 咖啡馆，约150兆") == [
        "opening", "hours", "7", "30", "蕨", "杯", "咖", "啡", "馆", "约", "150", "兆"]
    assert words("ＷｉＦｉ　８０") == ["wifi", "80"]  # full-width forms fold to ASCII
    assert words("café Москва 서울 카페") == ["café", "москва", "서울", "카페"]  # spaced scripts


def test_grams_bigrams_and_ideographs_stop_characters_split() -> None:
    # 的 is a function character: neither a unigram nor part of a bigram
    assert grams("临湖镇的咖啡馆") == {"临", "湖", "镇", "临湖", "湖镇", "咖", "啡", "馆", "咖啡",
                                     "啡馆"}
    # kana and Thai letters are sounds: bigrams only; kanji count alone
    assert grams("東京に行きたい") == {"東", "京", "行", "東京", "京に", "に行", "行き", "きた",
                                     "たい"}
    assert grams("ร้านกาแฟ") == {"ร้", "้า", "าน", "นก", "กา", "าแ", "แฟ"}
    assert grams("上海") != grams("海上")  # same characters, another word
    assert (width("上海"), width("店"), width("paris")) == (4, 2, 5)


# --------------------------------------------------------------------------- the rules simulator


def _view(kind: str, about: str, reply: str, work: str = "") -> StageView:
    stage = PlanStage(id="st2", kind=kind, about=about, line="好的。")
    return StageView(turn=1, stages=[stage], current=0, disclosed=(), reply=reply, work=work)


@pytest.mark.parametrize(("kind", "about", "reply", "met"), [
    ("mentions", "临湖镇的咖啡馆", "临湖镇有两家适合远程办公的咖啡馆：蕨杯咖啡馆和磨坊咖啡馆。", True),
    ("milestone", "网速兆比特", "蕨杯咖啡馆每秒80兆比特，网速很快。", True),
    ("asks", "咖啡预算", "两家都开得早。你每天喝咖啡的预算是多少？", True),
    ("asks", "咖啡预算", "两家都开得早。你每天喝咖啡的预算是多少。", False),  # no question
    ("mentions", "東京の喫茶店", "東京には良い喫茶店がたくさんあります。", True),
    ("mentions", "ร้านกาแฟในเชียงใหม่", "ในเชียงใหม่มีร้านกาแฟดีๆหลายร้าน", True),
    # adversarial: "Done.", echoing the user, an unrelated answer
    ("mentions", "临湖镇的咖啡馆", "好的，完成了。", False),
    ("mentions", "临湖镇的咖啡馆", "我下个月要在临湖镇住一段时间，白天需要找个地方办公。", False),
    ("mentions", "网速兆比特", "临湖镇有两家咖啡馆。", False),
    ("asks", "咖啡预算", "你喜欢上午还是下午工作？", False),
])
def test_rules_verdicts_in_unsegmented_scripts(kind: str, about: str, reply: str,
                                               met: bool) -> None:
    assert rules_verdict(_view(kind, about, reply)).met is met


def test_chinese_question_sentences_need_no_spaces() -> None:
    assert question_sentences("七点开门。预算是多少？还有别的要求吗？好的。") == [
        "预算是多少？", "还有别的要求吗？"]
    assert question_sentences("Open at 7. Budget? Fine.") == ["Budget?"]


def test_token_overlap_english_is_unchanged() -> None:
    assert tokens("The wifi speed, in Mbps!") == {"wifi", "speed", "mbps"}
    assert coverage("wifi speed Mbps", "Wifi is 80 Mbps at Ferncup.") == pytest.approx(2 / 3)


# --------------------------------------------------------------------------- the match grader

# (ground truth, the same fact reworded as agents do: case, punctuation, spacing, full-width
# forms, plural, extra qualifiers); the Chinese rows mirror the English ones.
EN = [
    (("Ferncup Café", "wifi speed", "80 Mbps"), ("ferncup café", "Wifi-Speed", "80 mbps.")),
    (("Mill Room", "opens at", "7:30"), ("The Mill Room", "opens at", "7:30 on weekdays")),
    (("Harbour Beans", "located near", "ferry pier"), ("Harbour Beans", "located near",
                                                       "the Verrin ferry pier")),
    (("Isaac Newton", "born in", "Woolsthorpe"), ("Isaac  Newton", "born in",
                                                  "Woolsthorpe, England")),
    (("Marie Curie", "won", "Nobel Prize in Physics"), ("Marie Curie", "won",
                                                        "the 1903 Nobel Prize in Physics")),
    (("Python", "created by", "Guido van Rossum"), ("python", "created_by", "Guido van Rossum")),
    (("Mutation", "role in evolution", "source of genetic variation"),
     ("Mutation", "role in evolution", "ultimate source of all new genetic variation")),
    (("Natural Selection", "first articulated by", "Charles Darwin"),
     ("natural selection", "First articulated by", "Charles Darwin and Alfred Wallace")),
    (("Genetic Drift", "special cases", "bottleneck effect"),
     ("Genetic drift", "special case", "Bottleneck effects")),
    (("Gene Flow", "example", "Neanderthal DNA"), ("Gene flow (migration)", "example",
                                                   "Neanderthal DNA in modern humans")),
    (("Mount Everest", "height", "8849 m"), ("Mount Everest", "Height:", "8849 m")),
    (("Amazon River", "flows through", "Brazil"), ("The Amazon river", "flows through",
                                                   "Brazil and Peru")),
    (("Paris", "capital of", "France"), ('"Paris"', "capital of", "France.")),
    (("Tokyo Tower", "completed in", "1958"), ("Tokyo Tower", "completed in", "December 1958")),
    (("Great Wall", "length", "21196 km"), ("Great Wall", "length", "about 21196 km")),
    (("Ferncup Café", "coffee price", "3.20 euros"), ("Ferncup Café", "coffee price",
                                                      "3.20 euro")),
    (("Mill Room", "power sockets", "every table"), ("Mill Room", "power sockets",
                                                     "at every table")),
    (("Harbour Beans", "noise level", "loud at lunch"), ("Harbour Beans", "Noise-Level",
                                                         "Loud at lunch!")),
    (("Shakespeare", "wrote", "Hamlet"), ("William Shakespeare", "wrote", "Hamlet")),
    (("Verrin", "lake", "Lake Verrin"), ("Verrin", "lake", "lake  verrin")),
]
ZH = [
    (("蕨杯咖啡馆", "网速", "80兆比特每秒"), ("蕨杯 咖啡馆", "网速：", "８０兆比特每秒。")),
    (("磨坊咖啡馆", "开门时间", "七点半"), ("磨坊咖啡馆", "开门时间", "工作日七点半")),
    (("港口豆咖啡馆", "位于", "渡轮码头旁"), ("港口豆咖啡馆", "位于", "临湖镇渡轮码头旁")),
    (("牛顿", "出生于", "伍尔索普"), ("艾萨克·牛顿", "出生于", "英格兰伍尔索普")),
    (("居里夫人", "获得", "诺贝尔物理学奖"), ("居里夫人", "获得", "1903年诺贝尔物理学奖")),
    (("Python", "创建者", "吉多·范罗苏姆"), ("python", "创建者", "吉多·范罗苏姆")),
    (("突变", "在进化中的作用", "遗传变异的来源"), ("突变", "在进化中的作用", "遗传变异的最终来源")),
    (("自然选择", "最早提出者", "达尔文"), ("自然选择", "最早提出者", "达尔文和华莱士")),
    (("遗传漂变", "特例", "瓶颈效应"), ("遗传漂变", "特例：", "瓶颈效应、奠基者效应")),
    (("基因流", "例子", "尼安德特人DNA"), ("基因流（迁移）", "例子", "现代人携带的尼安德特人DNA")),
    (("珠穆朗玛峰", "高度", "8849米"), ("珠穆朗玛峰", "高度：", "8849 米")),
    (("亚马逊河", "流经", "巴西"), ("亚马逊河", "流经", "巴西和秘鲁")),
    (("巴黎", "首都", "法国"), ("“巴黎”", "首都", "法国。")),
    (("东京塔", "建成于", "1958年"), ("东京塔", "建成于", "1958年12月")),
    (("长城", "长度", "21196公里"), ("长城", "长度", "约21196公里")),
    (("蕨杯咖啡馆", "咖啡价格", "3.20欧元"), ("蕨杯咖啡馆", "咖啡价格", "3.20 欧元")),
    (("磨坊咖啡馆", "电源插座", "每张桌子"), ("磨坊咖啡馆", "电源插座", "每张桌子都有")),
    (("港口豆咖啡馆", "噪音", "午餐时很吵"), ("港口豆咖啡馆", "噪音：", "午餐时很吵！")),
    (("莎士比亚", "创作", "哈姆雷特"), ("威廉·莎士比亚", "创作", "《哈姆雷特》")),
    (("临湖镇", "湖泊", "临湖"), ("临湖镇", "湖泊", "临 湖")),
]


def _matched(pairs: list[tuple[tuple[str, str, str], tuple[str, str, str]]]) -> int:
    gt = [Triple(*g) for g, _ in pairs]
    pred = [Triple(*p) for _, p in pairs]
    cov = match_coverage(gt, pred)
    # each reworded triple covers its own ground truth, and nothing else
    assert all(c.support in ((), (i,)) for i, c in enumerate(cov)), cov
    return sum(1 for c in cov if c.covered)


def test_reworded_chinese_triples_match_at_the_english_rate() -> None:
    assert _matched(EN) == 20
    assert _matched(ZH) == 20


@pytest.mark.parametrize(("gt", "pred"), [
    (("磨坊咖啡馆", "开门时间", "七点半"), ("磨坊咖啡馆", "开门时间", "八点半")),  # another value
    (("蕨杯咖啡馆", "咖啡价格", "3.20欧元"), ("蕨杯咖啡馆", "咖啡价格", "4.50欧元")),
    (("公司", "总部", "上海"), ("公司", "总部", "海上")),  # same characters, another place
    (("居里夫人", "获得", "诺贝尔物理学奖"), ("居里", "获得", "诺贝尔物理学奖")),  # less specific
    (("東京タワー", "完成", "1958年"), ("東京", "完成", "1958年")),
])
def test_wrong_chinese_and_japanese_triples_stay_unmatched(gt: tuple[str, str, str],
                                                           pred: tuple[str, str, str]) -> None:
    assert match_coverage([Triple(*gt)], [Triple(*pred)])[0].covered is False


# --------------------------------------------------------------------------- end to end


@pytest.fixture(scope="module")
def plan_dir(compiled: Callable[..., Path]) -> Path:
    return compiled(CASE, clean=True)


def _run(plan: Path, tmp_path: Path, agent: Path) -> duckdb.DuckDBPyConnection:
    db, summary = bench_run(plan, tmp_path, agent=f"scripted:{agent}", run_id="r",
                            simulator="rules", judge="rules")
    assert summary.errors == 0 and summary.finished == 1
    return duckdb.connect(str(db), read_only=True)


def _one(con: duckdb.DuckDBPyConnection, sql: str) -> tuple[Any, ...]:
    row = con.execute(sql).fetchone()
    assert row is not None
    return row


def test_chinese_staged_disclosure_end_to_end(plan_dir: Path, tmp_path: Path) -> None:
    con = _run(plan_dir, tmp_path, CASE / "agent.yaml")
    events = con.execute("SELECT turn, stage_id, event FROM stage_events ORDER BY rowid").fetchall()
    assert events == [(2, "st2", "disclosed"), (3, "st3", "disclosed"), (4, "st4", "disclosed"),
                      (5, "st5", "disclosed"), (6, None, "done")]
    # GT 0, 1, 3 direct; 2 and 4 subsumption; 5 (七点半 vs 八点) uncovered: 5/6 both ways
    assert _one(con, "SELECT stages_disclosed, kg_status, recall, precision FROM sessions") == (
        4, "ok", pytest.approx(5 / 6), pytest.approx(5 / 6))
    assert con.execute("SELECT idx, coverage FROM triples WHERE side = 'ground_truth' "
                       "ORDER BY idx").fetchall() == [
        (0, "direct"), (1, "direct"), (2, "subsumption"), (3, "direct"), (4, "subsumption"),
        (5, None)]
    con.close()


def test_chinese_agent_saying_only_done_meets_no_stage(plan_dir: Path, tmp_path: Path) -> None:
    agent = tmp_path / "done.yaml"
    agent.write_text("sessions:\n  find-cafe:\n" + "    - say: 好的，完成了。\n" * 30,
                     encoding="utf-8")
    con = _run(plan_dir, tmp_path, agent)
    assert _one(con, "SELECT stages_disclosed, recall FROM sessions") == (0, 0.0)
    assert {e for (e,) in con.execute("SELECT DISTINCT event FROM stage_events").fetchall()} == {
        "pushed"}
    con.close()
