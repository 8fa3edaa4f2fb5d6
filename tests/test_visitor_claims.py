"""Property tests of the adaptive-schema validator and of claim checking (site/visitor.py):
any JSON either passes or is a clean 400, never another error; a schema that passes admits
exactly the claims that match it; tokens open only with the right key, HS256 and a live `exp`."""

from __future__ import annotations

import time
from typing import Any

import jwt
from hypothesis import given, settings
from hypothesis import strategies as st

from docshelf.kit.errors import BadRequest
from docshelf.site import visitor

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=30,
)
names = st.text("abcxyz_", min_size=1, max_size=6)
scalar_claims = st.sampled_from(
    [
        {"type": "boolean", "description": "b"},
        {"type": "string", "description": "s"},
        {"type": "string", "enum": ["a", "b"], "description": "e"},
        {"type": "number", "description": "n"},
    ]
)
claim_schemas = scalar_claims | scalar_claims.map(
    lambda items: {"type": "array", "description": "a", "items": items}
)
schemas = st.builds(
    lambda props: {"type": "object", "properties": props, "additionalProperties": False},
    st.dictionaries(names.filter(lambda n: n != "unsigned"), claim_schemas, max_size=5),
)


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_any_json_is_accepted_or_a_clean_400(value: Any) -> None:
    try:
        visitor.check_schema(value)
    except BadRequest as exc:
        assert "'jsonSchema'" in exc.message


@settings(max_examples=200, deadline=None)
@given(schemas)
def test_gitbook_form_schemas_are_accepted(schema: dict[str, Any]) -> None:
    visitor.check_schema(schema)


def test_deep_nesting_is_refused_before_validation() -> None:
    deep: Any = "x"
    for _ in range(500):
        deep = {"a": deep}
    try:
        visitor.check_schema(deep)
    except BadRequest as exc:
        assert "levels deep" in exc.message or "characters" in exc.message
    else:
        raise AssertionError("a deep schema passed")


@settings(max_examples=200, deadline=None)
@given(schemas, st.dictionaries(names, json_values, max_size=6))
def test_claims_are_admitted_only_where_the_schema_matches(
    schema: dict[str, Any], claims: dict[str, Any]
) -> None:
    scope = visitor.visitor_scope(schema, claims, claims)
    kept = scope["visitor"]["claims"]
    assert kept["unsigned"] == {}  # the schema declares no unsigned claim
    for name, value in kept.items():
        if name == "unsigned":
            continue
        assert name in schema["properties"] and claims[name] == value


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(names, st.booleans(), max_size=4), st.integers(-10_000, 10_000))
def test_tokens_open_only_with_the_key_and_a_live_exp(claims: dict[str, Any], offset: int) -> None:
    key = visitor.new_key()
    exp = int(time.time()) + offset
    signed = jwt.encode({**claims, "exp": exp}, key, algorithm="HS256")
    got = visitor.signed_claims(signed, key)
    if offset > visitor.CLOCK_SKEW_SECONDS + 5:
        assert got == {k: v for k, v in claims.items()}
    elif offset < -visitor.CLOCK_SKEW_SECONDS - 5:
        assert got is None
    assert visitor.signed_claims(signed, visitor.new_key()) is None
    assert visitor.signed_claims(jwt.encode(claims, key, algorithm="HS256"), key) is None
    assert (
        visitor.signed_claims(jwt.encode({**claims, "exp": exp}, None, algorithm="none"), key)
        is None
    )
    assert visitor.signed_claims(signed + "x" * visitor.MAX_TOKEN_LENGTH, key) is None
