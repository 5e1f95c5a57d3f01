"""Tokenisation shared by every deterministic text match: the compiler's lints and the runtime's
rules simulators, rules judges and match graph grader. One module, so that what a lint says
leaks and what a judge counts as mentioned are the same thing, in every language.

Text is NFKC-normalised and case-folded (full-width `？`/`Ａ` become `?`/`a`). Scripts that put
spaces between words (Latin, Greek, Cyrillic, Hangul …) are split into *words* at anything that
is not a letter or digit. Scripts written without spaces between words (Han, kana, Thai, Lao,
Khmer, Myanmar) have nothing to split at, and a whole sentence would be one "word" that never
matches a reworded one. A run of them is cut into single characters instead (`words`), and for
set comparisons (`grams`) into the overlapping character bigrams of the run plus each ideograph
on its own: a Han character is a morpheme, so it counts by itself; a kana or Thai letter is a
sound, so only bigrams count for it (the CJK bigram scheme of Lucene's `CJKBigramFilter`). A run
continues across spaces (spacing between Chinese characters is an accident of typing, not a word
boundary) but stops at punctuation.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable

# Code points of scripts written without spaces between words. Katakana's middle dot (U+30FB)
# is punctuation and stays out.
_IDEOGRAPHS = ("\u2e80-\u2fdf\u3005-\u3007\u3021-\u3029\u3038-\u303b\u3400-\u4dbf"
               "\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003ffff")
_PHONETIC = ("\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u3031-\u3035\u3040-\u30fa\u30fc-\u30ff"
             "\u3100-\u312f\u31a0-\u31bf\u31f0-\u31ff")
_UNSEG = _IDEOGRAPHS + _PHONETIC
_TOKEN = re.compile(rf"(?P<run>[{_UNSEG}](?:\s*[{_UNSEG}])*)|(?P<word>[^\W_{_UNSEG}]+)")
_IDEOGRAPH = re.compile(rf"[{_IDEOGRAPHS}]")
_SPACE = re.compile(r"\s+")

STOP_IDEOGRAPHS = frozenset("的了是在和与及或也都就而之吗呢吧啊呀嗎們我你您他她它们这這那个個把被给給对對从從到为為以于於着著过過得地请請")
"""Chinese function characters: never a content unigram (they still count inside bigrams), as
`the`/`of`/`please` are never content words."""
_STOP_SPLIT = re.compile("[" + "".join(sorted(STOP_IDEOGRAPHS)) + "]")


def fold(text: str) -> str:
    """NFKC-normalised, case-folded `text`."""
    return unicodedata.normalize("NFKC", text).casefold()


def _pieces(text: str) -> list[tuple[str, bool]]:
    """(word or run, whether it is a run of an unsegmented script), in order."""
    out = []
    for m in _TOKEN.finditer(fold(text)):
        if m.group("run") is not None:
            out.append((_SPACE.sub("", m.group("run")), True))
        else:
            out.append((m.group("word"), False))
    return out


def words(text: str) -> list[str]:
    """The token sequence of `text`: words, and one token per character of unsegmented runs."""
    return _words(_pieces(text))


def _words(pieces: list[tuple[str, bool]]) -> list[str]:
    out: list[str] = []
    for piece, run in pieces:
        if run:
            out.extend(piece)
        else:
            out.append(piece)
    return out


def grams(text: str, keep: Callable[[str], bool] = lambda w: True,
          stop_ideographs: bool = True) -> set[str]:
    """The token set of `text` for overlap measures: the words `keep` accepts, and for each
    unsegmented run its character bigrams and its ideographs; a one-character run counts as
    itself. `STOP_IDEOGRAPHS` split runs and count for nothing, unless `stop_ideographs` is
    false."""
    return _grams(_pieces(text), keep, stop_ideographs)


def _grams(pieces: list[tuple[str, bool]], keep: Callable[[str], bool] = lambda w: True,
           stop_ideographs: bool = True) -> set[str]:
    out: set[str] = set()
    for piece, run in pieces:
        if not run:
            if keep(piece):
                out.add(piece)
            continue
        # a function character ends a word as surely as a space does
        parts = _STOP_SPLIT.split(piece) if stop_ideographs else [piece]
        for part in filter(None, parts):
            if len(part) == 1:
                out.add(part)
                continue
            out.update(part[i:i + 2] for i in range(len(part) - 1))
            out.update(c for c in part if _IDEOGRAPH.match(c))
    return out


def width(text: str) -> int:
    """How much `text` says, in letters: the length of its words joined by single spaces, a
    character of an unsegmented script counting two (two Chinese characters say about as much
    as a four-letter word). For spaced scripts this is the length of the normalised text."""
    pieces = _pieces(text)
    return sum(len(p) * (2 if run else 1) for p, run in pieces) + max(len(pieces) - 1, 0)


# --------------------------------------------------------------------------- leaks

LEAK_SHARE = 0.8
"""Share of a hidden text's content tokens a message must contain to give it away (the
compiler's leak lints use the same share)."""
LEAK_MIN_TOKENS = 3
VERBATIM_MIN = 6
"""Tokens (words, or characters of Chinese) a hidden text needs before its verbatim
appearance counts: "yes" inside a message gives nothing away."""

_STOP = frozenset({
    "the", "a", "an", "and", "or", "of", "to", "in", "on", "for", "with", "at", "by", "from",
    "is", "are", "be", "it", "this", "that", "my", "your", "our", "please", "i", "you", "we",
    "me"})


def _content(word: str) -> bool:
    return word not in _STOP and (len(word) > 2 or word.isdigit() or not word.isascii())


def leaks(secret: str, message: str) -> bool:
    """Whether `message` contains `secret` verbatim (after NFKC folding and re-spacing, so
    `我 想 订` matches `我想订`) or near-verbatim: ≥ `LEAK_SHARE` of its content tokens (words;
    Chinese character bigrams and ideographs) with at least `LEAK_MIN_TOKENS` of them."""
    s, m = words(secret), words(message)
    if not s or not m:
        return False
    if len(s) >= VERBATIM_MIN and " ".join(s) in " ".join(m):
        return True
    wanted: set[str] = grams(secret, _content)
    if len(wanted) < LEAK_MIN_TOKENS:
        return False
    return len(wanted & grams(message, _content)) / len(wanted) >= LEAK_SHARE


class LeakMatcher:
    """`leaks` over many (secret, message) pairs that repeat texts — every hidden intent of a
    session against each of its user messages, a store's worth when an old store is scanned:
    each text is tokenised once, not once per pair (10 s → see `reports/simulator.py`). The
    same decisions as `leaks` (a test compares them)."""

    def __init__(self) -> None:
        self._secrets: dict[str, tuple[str, int, frozenset[str]] | None] = {}
        self._messages: dict[str, tuple[str, list[tuple[str, bool]]] | None] = {}
        self._grams: dict[str, frozenset[str]] = {}

    def _secret(self, text: str) -> tuple[str, int, frozenset[str]] | None:
        if text not in self._secrets:
            pieces = _pieces(text)
            s = _words(pieces)
            self._secrets[text] = (" ".join(s), len(s), frozenset(_grams(pieces, _content))
                                   ) if s else None
        return self._secrets[text]

    def _message(self, text: str) -> tuple[str, list[tuple[str, bool]]] | None:
        if text not in self._messages:
            pieces = _pieces(text)
            m = _words(pieces)
            self._messages[text] = (" ".join(m), pieces) if m else None
        return self._messages[text]

    def _message_grams(self, text: str, pieces: list[tuple[str, bool]]) -> frozenset[str]:
        if text not in self._grams:  # only when no verbatim match settled it
            self._grams[text] = frozenset(_grams(pieces, _content))
        return self._grams[text]

    def forget_messages(self) -> None:
        """Drop the messages' tokens (a scan moving to the next session: a store's transcripts
        need not all sit in memory; the secrets, fewer and repeated, stay)."""
        self._messages.clear()
        self._grams.clear()

    def leaks(self, secret: str, message: str) -> bool:
        s, m = self._secret(secret), self._message(message)
        if s is None or m is None:
            return False
        joined, n, wanted = s
        if n >= VERBATIM_MIN and joined in m[0]:
            return True
        if len(wanted) < LEAK_MIN_TOKENS:
            return False
        return len(wanted & self._message_grams(message, m[1])) / len(wanted) >= LEAK_SHARE


__all__ = ["LEAK_MIN_TOKENS", "LEAK_SHARE", "STOP_IDEOGRAPHS", "VERBATIM_MIN", "LeakMatcher",
           "fold", "grams", "leaks", "width", "words"]


# Sentences end at `.!?` before whitespace, at full-width `。！？` (Chinese and Japanese put no
# space after them; after the closing quote when one follows) and at line breaks.
_SENTENCE_END = re.compile(
    r"(?<=[.!?])\s+|(?<=[。！？])(?![」』”’）])\s*|(?<=[。！？][」』”’）])\s*|\n+")
_LIST_MARKERS = "-*•> "
_CLOSERS = "*_)\"'”’）」』 "
_WORD = re.compile(r"[^\W_]")


def question_sentences(text: str) -> list[str]:
    """The sentences of `text` that ask something: they end with `?` or `？` (Markdown emphasis
    and closing quotes or brackets after it aside) and hold a word. Returned stripped of
    leading list markers. What the rules simulators answer, in every protocol."""
    out = []
    for part in _SENTENCE_END.split(text):
        s = part.strip().lstrip(_LIST_MARKERS).strip()
        bare = s.rstrip(_CLOSERS)
        if bare.endswith(("?", "？")) and _WORD.search(bare):
            out.append(s)
    return out
