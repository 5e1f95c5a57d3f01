"""Tool specs of a Python tool module, read with `ast` (never imported): type mapping,
docstrings, and a located problem for everything an agent could not be given."""

from __future__ import annotations

import textwrap
from typing import Any

import pytest

from benchpack.specs import pack
from benchpack.specs.pytools import parse_docstring, read_tools


def tools(src: str) -> Any:
    return read_tools(textwrap.dedent(src), "tools/shop.py")


def schema_of(annotation: str, *, header: str = "") -> dict[str, Any]:
    res = tools(f"{header}\ndef f(x: {annotation}):\n    '''Do.'''\n")
    assert not res.problems, res.problems
    return res.tools[0].parameters["properties"]["x"]


def test_name_pattern_is_the_pack_languages() -> None:
    from benchpack.specs.pytools import TOOL_NAME_PATTERN

    assert TOOL_NAME_PATTERN == pack.TOOL_NAME_PATTERN


@pytest.mark.parametrize(("annotation", "schema"), [
    ("str", {"type": "string"}),
    ("int", {"type": "integer"}),
    ("float", {"type": "number"}),
    ("bool", {"type": "boolean"}),
    ("list", {"type": "array"}),
    ("dict", {"type": "object"}),
    ("list[str]", {"type": "array", "items": {"type": "string"}}),
    ("List[int]", {"type": "array", "items": {"type": "integer"}}),
    ("typing.List[int]", {"type": "array", "items": {"type": "integer"}}),
    ("list[list[float]]", {"type": "array", "items": {"type": "array",
                                                      "items": {"type": "number"}}}),
    ("dict[str, int]", {"type": "object", "additionalProperties": {"type": "integer"}}),
    ("Dict[str, list[str]]", {"type": "object", "additionalProperties": {
        "type": "array", "items": {"type": "string"}}}),
    ('Literal["no longer needed", "ordered by mistake"]',
     {"enum": ["no longer needed", "ordered by mistake"], "type": "string"}),
    ("Literal[1, 2, 3]", {"enum": [1, 2, 3], "type": "integer"}),
    ('Literal["a", 1]', {"enum": ["a", 1]}),
    ('Literal["取消", "退货"]', {"enum": ["取消", "退货"], "type": "string"}),
    ("str | None", {"anyOf": [{"type": "string"}, {"type": "null"}]}),
    ("None | int", {"anyOf": [{"type": "null"}, {"type": "integer"}]}),
    ("Optional[str]", {"anyOf": [{"type": "string"}, {"type": "null"}]}),
    ("typing.Optional[list[str]]", {"anyOf": [{"type": "array", "items": {"type": "string"}},
                                              {"type": "null"}]}),
    ("Union[int, str]", {"anyOf": [{"type": "integer"}, {"type": "string"}]}),
    ("int | str | None", {"anyOf": [{"type": "integer"}, {"type": "string"},
                                    {"type": "null"}]}),
    ("Optional[Optional[int]]", {"anyOf": [{"type": "integer"}, {"type": "null"}]}),
    ('"str"', {"type": "string"}),
    ('"list[int] | None"', {"anyOf": [{"type": "array", "items": {"type": "integer"}},
                                      {"type": "null"}]}),
    ('Annotated[int, "meta"]', {"type": "integer"}),
])
def test_type_mapping(annotation: str, schema: dict[str, Any]) -> None:
    assert schema_of(annotation) == schema


def test_postponed_annotations_are_read_the_same() -> None:
    assert schema_of("list[str] | None", header="from __future__ import annotations") == \
        {"anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}]}


def test_the_design_example() -> None:
    res = tools('''
        from typing import Literal
        from benchpack_tools import State, ToolError

        def cancel_pending_order(db: State, order_id: str, reason: Literal["no longer needed",
                                 "ordered by mistake"]) -> dict:
            """Cancel a pending order. Refunds go to the original payment method.

            Args:
                order_id: The order id, such as '#W0000000'.
                reason: Why the user cancels.
            """
            order = db.get("orders", order_id)
            return order

        def _helper(x):
            return x

        CONSTANT = 3
    ''')
    assert res.problems == []
    [tool] = res.tools
    assert tool.name == "cancel_pending_order" and tool.state_param == "db"
    assert tool.description == "Cancel a pending order. Refunds go to the original payment method."
    assert tool.parameters == {
        "type": "object",
        "properties": {
            "order_id": {"type": "string", "description": "The order id, such as '#W0000000'."},
            "reason": {"enum": ["no longer needed", "ordered by mistake"], "type": "string",
                       "description": "Why the user cancels."},
        },
        "required": ["order_id", "reason"],
        "additionalProperties": False,
    }
    assert (tool.line, tool.col, tool.is_async) == (5, 1, False)


def test_defaults_state_anywhere_keyword_only_and_async() -> None:
    res = tools('''
        import benchpack_tools

        async def search(query: str, db: benchpack_tools.State, limit: int = 10, *,
                         exact: bool = False, tag: str | None = None, since: str = NOW):
            """Search. 搜索订单。"""
    ''')
    assert res.problems == []
    [tool] = res.tools
    assert tool.is_async and tool.state_param == "db"
    assert tool.description == "Search. 搜索订单。"
    props = tool.parameters["properties"]
    assert list(props) == ["query", "limit", "exact", "tag", "since"]
    assert props["limit"] == {"type": "integer", "default": 10}
    assert props["exact"] == {"type": "boolean", "default": False}
    assert props["tag"] == {"anyOf": [{"type": "string"}, {"type": "null"}]}
    assert props["since"] == {"type": "string"}  # not a literal: no default shown
    assert tool.parameters["required"] == ["query"]


def test_a_tool_without_parameters_has_no_required_list() -> None:
    [tool] = tools('def ping(db: "State"):\n    """Ping."""\n').tools
    assert tool.state_param == "db"
    assert tool.parameters == {"type": "object", "properties": {},
                               "additionalProperties": False}


def test_docstring_google_style() -> None:
    doc = '''Find a user by name and zip code.

        Use this before any change to an account.

        Args:
            first_name (str): The first name,
                as the user spelled it.
            last_name: The last name.
            zip: The 5-digit zip code.

        Returns:
            user_id: the id (not a parameter).

        Raises:
            ToolError: when nobody matches.
        '''
    desc, params = parse_docstring(doc)
    assert desc == "Find a user by name and zip code.\n\nUse this before any change to an account."
    assert params == {"first_name": "The first name, as the user spelled it.",
                      "last_name": "The last name.", "zip": "The 5-digit zip code."}
    assert parse_docstring(None) == ("", {})
    assert parse_docstring("One line.") == ("One line.", {})
    assert parse_docstring("查询订单。\n\nArgs:\n    订单: 订单号。\n")[0] == "查询订单。"


def located(src: str) -> list[tuple[int, int, str]]:
    return [(p.line, p.col, p.message) for p in tools(src).problems]


def test_syntax_error_is_located() -> None:
    [(line, col, message)] = located("def f(x: str):\n    '''Do.'''\n    return (\n")
    assert line == 3 and col >= 1 and message.startswith("syntax error")
    assert "null bytes" in read_tools("a = 1\x00\n").problems[0].message


def test_every_unsupported_thing_is_located_and_all_are_reported() -> None:
    src = textwrap.dedent('''\
        def a(x):
            """Doc."""

        def b(*items: str):
            """Doc."""

        def c(**options: str):
            """Doc."""

        def d(when: datetime, n: set[int], m: dict[int, str]):
            """Doc."""

        def e(x: str, /, y: int):
            """Doc."""

        def f(x: str):
            pass

        def g(kind: Literal[len]):
            """Doc."""

        def h(db: State, other: State):
            """Doc."""

        def 取消订单(x: str):
            """Doc."""

        def i(x: list[State]):
            """Doc."""

        def j(x: "not valid("):
            """Doc."""
    ''')
    res = read_tools(src, "tools/shop.py")
    got = [(p.line, p.col, p.message) for p in res.problems]
    assert res.tools == []
    assert got == [
        (1, 7, "tool function `a`, parameter `x` has no type annotation"),
        (4, 8, "tool function `b`: `*items` cannot be described to an agent"),
        (7, 9, "tool function `c`: `**options` cannot be described to an agent"),
        (10, 13, "tool function `d`, parameter `when`: the type `datetime` cannot be given "
                 "to an agent as JSON"),
        (10, 26, "tool function `d`, parameter `n`: the type `set[int]` cannot be given to "
                 "an agent as JSON"),
        (10, 44, "tool function `d`, parameter `m`: dictionary keys must be `str` (JSON "
                 "object keys are strings)"),
        (13, 7, "tool function `e`: parameter `x` is positional-only (before `/`); agents "
                "pass arguments by name"),
        (16, 1, "tool function `f` has no docstring; the agent needs a description"),
        (19, 21, "tool function `g`, parameter `kind`: `Literal` values must be strings, "
                 "numbers, booleans or None"),
        (22, 18, "tool function `h`, parameter `other`: only one parameter may receive the "
                 "`State`"),
        (25, 1, "tool function `取消订单`: the name cannot be a tool name (ASCII letters, "
                "digits, `_` and `-`, at most 64 characters)"),
        (28, 15, "tool function `i`, parameter `x`: `State` can only annotate the parameter "
                 "that receives the state, not be part of a type"),
        (31, 10, "tool function `j`, parameter `x`: the annotation 'not valid(' is not a "
                 "valid type expression"),
    ]
    assert all(p.hint for p in res.problems)
    assert "supported: str, int" in res.problems[0].hint


def test_good_functions_survive_a_bad_neighbour() -> None:
    res = tools('''
        def good(x: str):
            """Good."""

        def bad(x: object):
            """Bad."""
    ''')
    assert [t.name for t in res.tools] == ["good"]
    assert [p.severity for p in res.problems] == ["error"]
    assert len(res.errors) == 1


def test_duplicates_undocumented_args_and_empty_modules() -> None:
    res = tools('''
        def f(x: str):
            """One.

            Args:
                y: Not a parameter.
            """

        def f(x: int):
            """Two."""
    ''')
    assert [(p.line, p.message, p.severity) for p in res.problems] == [
        (2, "tool function `f`: the docstring describes `y`, which is not a parameter",
         "warning"),
        (9, "tool function `f` is defined twice (first on line 2)", "error"),
    ]
    assert res.tools == []
    [empty] = read_tools("import os\n\ndef _private(x):\n    pass\n").problems
    assert "no public function" in empty.message


def test_never_executes_the_module(tmp_path: Any) -> None:
    marker = tmp_path / "ran"
    res = read_tools(f"open({str(marker)!r}, 'w').write('x')\n"
                     "def f(x: str):\n    '''Do.'''\n")
    assert [t.name for t in res.tools] == ["f"] and not marker.exists()
