"""The adaptive-content condition language: a table of what it accepts and means, and properties
that hold for any input (nothing but ExpressionError escapes; bounds hold; printing round-trips)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from docshelf.kit.expressions import (
    MAX_DEPTH,
    MAX_LENGTH,
    Binary,
    ExpressionError,
    ListOf,
    Literal,
    Node,
    Not,
    Path,
    check,
    evaluate,
    holds,
    parse,
    render,
)

VISITOR = {
    "visitor": {
        "claims": {
            "plan": "pro",
            "seats": 12,
            "beta": True,
            "roles": ["admin", "writer"],
            "org": {"name": "Acme", "tier": 2},
            "unsigned": {"lang": "fr", "trial": False},
            "odd key": "yes",
        }
    }
}

TRUTH = [
    ('visitor.claims.plan == "pro"', True),
    ("visitor.claims.plan === 'pro'", True),
    ('visitor.claims.plan != "pro"', False),
    ("visitor.claims.seats > 10", True),
    ("visitor.claims.seats >= 12 && visitor.claims.seats <= 12", True),
    ("visitor.claims.seats < 3.5", False),
    ("visitor.claims.beta", True),
    ("!visitor.claims.beta", False),
    ("!!visitor.claims.beta", True),
    ("visitor.claims.missing", False),
    ("!visitor.claims.missing", True),
    ("visitor.claims.missing.deeper", False),
    ("visitor.claims.missing == null", False),  # undefined is not null, strictly
    ("visitor.claims.missing == visitor.claims.other", True),  # undefined is itself
    ('"admin" in visitor.claims.roles', True),
    ('"reader" in visitor.claims.roles', False),
    ('visitor.claims.plan in ["free", "pro"]', True),
    ('"tier" in visitor.claims.org', True),
    ('"x" in visitor.claims.plan', False),
    ("visitor.claims.org.tier == 2", True),
    ('visitor.claims["odd key"] == "yes"', True),
    ("visitor.claims.roles.length == 2", True),
    ('visitor.claims.unsigned.lang == "fr" || visitor.claims.unsigned.trial', True),
    ("visitor.claims.unsigned.trial || visitor.claims.missing", False),
    ("(visitor.claims.beta || false) && !(visitor.claims.seats < 10)", True),
    ("visitor.claims.beta == 1", False),  # no coercion between booleans and numbers
    ('visitor.claims.seats == "12"', False),
    ('visitor.claims.plan < "qa"', True),  # strings order by code point
    ("visitor.claims.plan < 3", False),  # mixed types never order
    ("1 == 1.0", True),
    ("0", False),
    ('""', False),
    ("[]", True),  # an empty list is truthy, as in JavaScript
    ("null || 'x' == 'x'", True),
    ("visitor.claims.roles == visitor.claims.roles", True),
    ('visitor.claims.roles == ["admin", "writer"]', False),  # lists compare by identity
    ("'a\\'b' == \"a'b\"", True),
    ('"\\u00e9" == "é"', True),
]


@pytest.mark.parametrize(("text", "expected"), TRUTH)
def test_meaning(text: str, expected: bool) -> None:
    assert evaluate(text, VISITOR) is expected


REFUSED = [
    ("", "The condition is empty"),
    ("   ", "The condition is empty"),
    ("visitor.claims.a ==", "Expected a value at character 20, found the end"),
    ("user.id == 1", "Unknown name 'user' at character 1; a condition starts from visitor"),
    ("visitor.claims.a = 1", "Unexpected character '=' at character 18"),
    ("1 < 2 < 3", "Comparisons do not chain: add parentheses at character 7"),
    ("(visitor.claims.a", "Expected ')' at character 18, found the end"),
    ("visitor.claims.a)", "Unexpected ')' at character 17"),
    ("visitor..a", "Expected a property name at character 9, found '.'"),
    ("visitor[1]", "Expected a quoted property name at character 9"),
    ("alert(1)", "Unknown name 'alert' at character 1; a condition starts from visitor"),
    ("visitor.claims.a + 1", "Unexpected character '+' at character 18"),
    ("'unterminated", 'Unexpected character "\'" at character 1'),
    ("1e999 == 1", "The number at character 1 is out of range"),
    ('"\\ud800" == "x"', "Lone surrogate escape in the string at character 1"),
    ('"\\u12" == "x"', "Bad \\u escape in the string at character 1"),
    ("x" * (MAX_LENGTH + 1), f"A condition is at most {MAX_LENGTH} characters"),
    (
        "(" * (MAX_DEPTH + 1) + "1" + ")" * (MAX_DEPTH + 1),
        f"The condition nests deeper than {MAX_DEPTH} levels",
    ),
    ("!" * (MAX_DEPTH + 1) + "true", f"The condition nests deeper than {MAX_DEPTH} levels"),
    (
        "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1),
        f"The condition nests deeper than {MAX_DEPTH} levels",
    ),
]


@pytest.mark.parametrize(("text", "message"), REFUSED)
def test_refusals_say_why(text: str, message: str) -> None:
    with pytest.raises(ExpressionError) as caught:
        check(text)
    assert str(caught.value) == message


def test_a_long_flat_condition_within_the_bounds_parses() -> None:
    clauses = " || ".join(f'visitor.claims.plan == "p{i}"' for i in range(30))
    assert len(clauses) <= MAX_LENGTH
    assert evaluate(clauses, VISITOR) is False
    assert evaluate(clauses + ' || visitor.claims.plan == "pro"', VISITOR) is True


# -- properties ------------------------------------------------------------------------------------

_CHARS = st.sampled_from(
    list("visitor.claims[]()'\"\\!&|=<>,0123456789 abcnulltruefalse_$-+eE\n\tu")
)


@given(st.text(_CHARS, max_size=200) | st.text(max_size=200))
@settings(max_examples=1500, deadline=None)
def test_any_text_parses_or_fails_cleanly(text: str) -> None:
    try:
        node = parse(text)
    except ExpressionError:
        return
    holds(node, VISITOR)  # and whatever parses evaluates without raising


_NAMES = st.sampled_from(
    ["plan", "seats", "beta", "roles", "org", "unsigned", "tier", "odd key", "length"]
)
_LITERALS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**40), 2**40),
    st.floats(allow_nan=False, allow_infinity=False, width=32).filter(lambda f: not f.is_integer()),
    st.text(max_size=8).filter(lambda s: not any(0xD800 <= ord(c) <= 0xDFFF for c in s)),
).map(Literal)
_PATHS = st.lists(_NAMES, max_size=4).map(lambda keys: Path("visitor", ("claims", *keys)))


def _trees(leaves: st.SearchStrategy[Node]) -> st.SearchStrategy[Node]:
    return st.recursive(
        leaves,
        lambda inner: st.one_of(
            inner.map(Not),
            st.lists(inner, max_size=3).map(lambda items: ListOf(tuple(items))),
            st.tuples(st.sampled_from(["&&", "||"]), inner, inner).map(lambda t: Binary(*t)),
            st.tuples(
                st.sampled_from(["===", "!==", "<", "<=", ">", ">=", "in"]), inner, inner
            ).map(lambda t: Binary(*t)),
        ),
        max_leaves=12,
    )


def _canonical(node: Node) -> Node:
    # `==` and `===` mean the same; the printer writes what it was given.
    if isinstance(node, Binary):
        return Binary(node.op, _canonical(node.left), _canonical(node.right))
    if isinstance(node, Not):
        return Not(_canonical(node.operand))
    if isinstance(node, ListOf):
        return ListOf(tuple(_canonical(i) for i in node.items))
    return node


@given(_trees(st.one_of(_LITERALS, _PATHS)))
@settings(max_examples=600, deadline=None)
def test_printing_round_trips_and_means_the_same(tree: Node) -> None:
    text = render(tree)
    try:
        parsed = parse(text)
    except ExpressionError as exc:
        # Only the bounds may refuse a generated tree.
        assert "at most" in str(exc) or "deeper" in str(exc) or "longer" in str(exc)
        return
    assert _canonical(parsed) == _canonical(tree)
    assert holds(parsed, VISITOR) == holds(tree, VISITOR)


@given(st.integers(1, 5000), st.sampled_from(["(", "!", "[", "!(", "(["]))
@settings(max_examples=200, deadline=None)
def test_nesting_is_bounded_whatever_the_shape(depth: int, opener: str) -> None:
    text = (opener * depth)[:MAX_LENGTH]
    with pytest.raises(ExpressionError):
        check(text)


def test_evaluation_is_data_not_code() -> None:
    scope: dict[str, Any] = {"visitor": {"claims": {"__class__": "x"}}}
    assert evaluate('visitor.claims.__class__ == "x"', scope) is True
    assert evaluate("visitor.__class__", {"visitor": {}}) is False


def test_not_binds_tighter_than_comparison_as_in_javascript() -> None:
    assert parse("!visitor.a == false") == Binary(
        "==", Not(Path("visitor", ("a",))), Literal(False)
    )
    assert evaluate("!visitor.claims.missing == true", VISITOR) is True
    assert evaluate('[visitor.claims.plan == "pro"] == [true]', VISITOR) is False
