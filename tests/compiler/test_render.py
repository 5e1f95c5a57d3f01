"""render: sandboxed Jinja with budgets; ordinary templates keep working."""

from __future__ import annotations

import pytest

from benchpack.compiler.render import (
    MAX_LOOP_STEPS,
    RenderError,
    check_syntax,
    needs_render,
    render,
)

CTX = {"vars": {"team": "Orion", "regions": ["north", "south"], "n": 3},
       "persona": {"name": "Ana", "facts": {"city": "Porto"}}}


@pytest.mark.parametrize(("template", "expected"), [
    ("plain text, {not a template}", "plain text, {not a template}"),
    ("{{ vars.team }} / {{ persona.facts.city }}", "Orion / Porto"),
    ("{% for r in vars.regions %}{{ loop.index }}.{{ r }}{% if not loop.last %}, {% endif %}"
     "{% endfor %}", "1.north, 2.south"),
    ("{% for r in [] %}x{% else %}none{% endfor %}", "none"),
    ("{{ vars.regions | join(' & ') | upper }}", "NORTH & SOUTH"),
    ("{{ vars.team ~ '-' ~ vars.n }}", "Orion-3"),
    ("{{ '%s has %d' | format(vars.team, vars.n) }}", "Orion has 3"),
    ("{{ '{:>5}'.format(vars.n) }}", "    3"),
    ("{% set ns = namespace(total=0) %}{% for i in range(4) %}{% set ns.total = ns.total + i %}"
     "{% endfor %}{{ ns.total }}", "6"),
    ("{% macro hi(who) %}hi {{ who }}{% endmacro %}{{ hi(persona.name) }}", "hi Ana"),
    ("{{ 'ab' * 3 }}|{{ 'x'.center(5) }}|{{ 'a-b' | replace('-', '+') }}", "ababab|  x  |a+b"),
    ("{# a comment #}kept", "kept"),
])
def test_ordinary_templates(template: str, expected: str) -> None:
    assert render(template, CTX) == expected


def test_plain_text_is_never_parsed() -> None:
    assert not needs_render("50% off {x}") and render("50% off {x} }}", {}) == "50% off {x} }}"
    assert needs_render("{{ x }}") and needs_render("{% if %}") and needs_render("{# c #}")


@pytest.mark.parametrize(("template", "code", "words"), [
    ("{{ ''.__class__.__mro__ }}", "E210", "unsafe"),
    ("{{ cycler.__init__.__globals__ }}", "E210", "unsafe"),
    ("{{ vars.__class__ }}", "E210", "unsafe"),
    ("{{ range(10**6) | list }}", "E210", "range()"),
    ("{% for i in range(10000) %}{% for j in range(10000) %}{% endfor %}{% endfor %}",
     "E210", f"{MAX_LOOP_STEPS:,} iterations"),
    ("{{ 'x' * 10**7 }}", "E210", "repetition"),
    ("{{ '%*d' % (10**8, 1) }}", "E210", "%-format width"),
    ("{{ '{:>{w}}'.format(1, w=10**8) }}", "E210", "format width"),
    ("{{ 'x'.ljust(10**8) }}", "E210", "ljust()"),
    ("{{ range(1000) | join('x' * 5000) }}", "E210", "join()"),
    ("{{ 'ab' | replace('', 'x' * 9000) | replace('', 'y' * 9000) }}", "E210", "replace()"),
    ("{% set ns = namespace(s='x' * 600000) %}{% set ns.s = ns.s ~ ns.s %}", "E210",
     "concatenation"),
    ("{{ 9 ** 999 }}", "E210", "power"),
    ("{{ lipsum(5) }}", "E209", "`lipsum` is undefined"),
    ("{{ 1 / 0 }}", "E208", "ZeroDivisionError"),
    ("{{ vars.team", "E208", "syntax"),
    ("{% include 'other.j2' %}", "E208", "no loader"),
])
def test_escapes_and_budgets_become_diagnostics(template: str, code: str, words: str) -> None:
    with pytest.raises(RenderError) as exc:
        render(template, CTX)
    assert exc.value.code == code and words in exc.value.message


def test_undefined_values_get_a_suggestion() -> None:
    with pytest.raises(RenderError) as exc:
        render("{{ vars.tem }}", CTX)
    assert (exc.value.message, exc.value.hint) == ("`vars.tem` is undefined",
                                                   "did you mean `vars.team`?")
    with pytest.raises(RenderError) as exc:
        render("{{ persona.facts.age }}", CTX)
    assert exc.value.hint == "`persona.facts` has `city`"
    with pytest.raises(RenderError) as exc:
        render("{{ person.name }}", CTX)
    assert (exc.value.message, exc.value.hint) == ("`person` is undefined",
                                                   "did you mean `persona`?")


def test_budgets_are_per_render() -> None:
    loop = "{% for i in range(9000) %}{% endfor %}ok"
    for _ in range(20):  # 180,000 iterations in total, under the budget each time
        assert render(loop, {}) == "ok"


def test_check_syntax_does_not_run_the_template() -> None:
    assert check_syntax("{{ undefined_name }} {{ 1 / 0 }}") is None
    problem = check_syntax("line 1\n{% if x %}")
    assert problem is not None and problem.code == "E208" and "template line 2" in problem.message


def test_output_is_cut_off_before_it_is_built() -> None:
    big = {"vars": {"b": "x" * 900_000}}
    assert len(render("{{ vars.b }}", big)) == 900_000
    with pytest.raises(RenderError) as exc:
        render("{{ vars.b }}" * 1000, big)  # streamed: stops after the second copy
    assert exc.value.code == "E210" and "template output" in exc.value.message


_S = {"vars": {"s": "x" * 1000, "l": ["ab"] * 10}}


@pytest.mark.parametrize("template", [
    "{% set l = [vars.s] * 999999 %}{{ l }}",
    "{% set l = [vars.s] * 999999 %}{{ l | tojson }}",
    "{% set l = [vars.s] * 999999 %}{{ l | pprint }}",
    "{% set l = [vars.s] * 999999 %}{{ l | join(',') }}",
    "{% set l = [vars.l] * 99999 %}{{ l | join(',') }}",
    "{% set l = [vars.s] * 999 %}{{ (l | batch(1) | list) * 999 }}",
    "{% set a = [vars.s] * 900 %}{% set b = [a, a, a, a, a, a, a, a, a, a] %}"
    "{% set c = [b, b, b, b, b, b, b, b, b, b] %}{% set d = [c, c, c, c, c, c, c, c, c, c] %}"
    "{{ d }}",
    "{% set a = [vars.s] * 900 %}{% set b = [a, a, a, a, a, a, a, a, a, a] %}"
    "{% set c = [b, b, b, b, b, b, b, b, b, b] %}{{ 'x' ~ c }}",
    "{% set a = [vars.s] * 900 %}{% set b = [a, a, a, a, a, a, a, a, a, a] %}"
    "{% set c = [b, b, b, b, b, b, b, b, b, b] %}{{ '%s' % (c,) }}{{ '{}'.format(c) }}",
    "{% set a = [vars.s] * 900 %}{% set b = [a, a, a, a, a, a, a, a, a, a] %}"
    "{% set c = [b, b, b, b, b, b, b, b, b, b] %}{{ c | string }}",
    *(f"{{% set a = [vars.s] * 900 %}}{{% set b = [a, a, a, a, a, a, a, a, a, a] %}}"
      f"{{% set c = [b, b, b, b, b, b, b, b, b, b] %}}{{{{ c | {f} | length }}}}"
      for f in ("tojson", "pprint", "join(',')", "sum(start=[])")),
])
def test_structures_are_budgeted_in_memory_not_only_output(template: str) -> None:
    """Lists are cheap (references); their text is not. Each payload is refused with E210 and
    a hint before the text is built: memory stays far below what the text would need."""
    import tracemalloc

    tracemalloc.start()
    try:
        with pytest.raises(RenderError) as exc:
            render(template, _S)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert exc.value.code == "E210" and exc.value.hint, exc.value.message
    assert peak < 200 * 2**20, peak


def test_small_structures_still_print() -> None:
    assert render("{{ vars.l[:2] }} {{ vars.l[:2] | tojson }} {{ [1, 2] * 2 }}", _S) == \
        "['ab', 'ab'] [\"ab\", \"ab\"] [1, 2, 1, 2]"
