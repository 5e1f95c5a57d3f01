"""Which sentences of an agent's reply the verified-outcome protocol treats as questions to the
user (answered by the simulator), in English and Chinese."""

from __future__ import annotations

import pytest

from benchpack.runtime.judges.intent import TurnEvidence
from benchpack.runtime.protocols.verified_outcome import questions_in


@pytest.mark.parametrize(("text", "want"), [
    ("I moved the file. Which folder should the copy go to? Thanks.",
     ["Which folder should the copy go to?"]),
    ("已经整理好了。请问您要哪一天的数据？另外需要图表吗？谢谢。",
     ["请问您要哪一天的数据？", "另外需要图表吗？"]),
    ("我可以继续吗？", ["我可以继续吗？"]),
    ("他说「要开会吗？」", ["他说「要开会吗？」"]),  # a quoted question still asks
    ("Done.", []),
    ("完成了。", []),
    ("???", []),  # no words: not a question
])
def test_questions_in_reply(text: str, want: list[str]) -> None:
    assert questions_in(TurnEvidence(turn=1, text=text)) == want


def test_ask_user_questions_win() -> None:
    ev = TurnEvidence(turn=1, text="要继续吗？", questions=["哪个文件？ "])
    assert questions_in(ev) == ["哪个文件？"]
