"""One typed-field reader for both sides' release importers (issue 30 item 2)."""

from __future__ import annotations

import pytest

from benchpack.specs.release_fields import need


class Bad(Exception):
    pass


def test_a_field_of_its_kind_comes_back_and_a_bool_is_no_int() -> None:
    assert need({"n": 3}, "n", int, "line 2", Bad, "a X file") == 3
    assert need({"n": True}, "n", (bool, int), "line 2", Bad, "a X file") is True
    with pytest.raises(Bad, match=r"^line 2: field `n` must be int, found true \(is this a X file\?\)$"):
        need({"n": True}, "n", int, "line 2", Bad, "a X file")


def test_missing_is_an_error_unless_optional_and_a_json_path_is_extended() -> None:
    assert need({}, "k", str, "r.json: $", Bad, "a τ² results file", optional=True,
                json_path=True) is None
    with pytest.raises(Bad, match=r"^r.json: \$.info.k: must be str or list, found null "):
        need({}, "k", (str, list), "r.json: $.info", Bad, "a τ² results file", json_path=True)
    with pytest.raises(Bad, match=r"^r.json:3: field `k` must be str"):  # a JSONL line, no path
        need({}, "k", str, "r.json:3", Bad, "a X file")
    with pytest.raises(Bad, match=r"found \"\\u00e9t\u00e9\"|found \"été\""):
        need({"k": "été"}, "k", int, "line 1", Bad, "a X file")
    assert need(None, "k", str, "line 1", Bad, "a X file", optional=True) is None
