"""Who a visitor of a published site is: the claims of a visitor token signed with the site's key
(HS256 only, `exp` required, bounded clock skew and size) and their unsigned claims, each kept
only where the site's adaptive schema admits it. Also the adaptive schema's own validation:
a draft-07 JSON Schema in the form GitBook's `SiteAdaptiveJSONSchema` allows.

Pure functions: no database, no request. `published.resolve` and the site services call them."""

from __future__ import annotations

import functools
import json
import secrets
from collections.abc import Mapping
from typing import Any, Final

from docshelf.kit.errors import BadRequest

MAX_TOKEN_LENGTH: Final = 8192
MAX_UNSIGNED_LENGTH: Final = 8192
MAX_SCHEMA_LENGTH: Final = 16384
MAX_SCHEMA_DEPTH: Final = 12
CLOCK_SKEW_SECONDS: Final = 60
# Registered JWT claims say how the token is valid; every other key is a visitor claim.
_REGISTERED: Final = frozenset({"exp", "iat", "nbf", "iss", "aud", "sub", "jti"})

DEFAULT_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {},
    "additionalProperties": False,
}


def new_key() -> str:
    """A site's signing key: 256 bits from `secrets`, as text a customer's backend can paste."""
    return secrets.token_urlsafe(32)


# -- visitor tokens ------------------------------------------------------------------------------


def signed_claims(token: str, key: str | None) -> dict[str, Any] | None:
    """The claims of a valid visitor token, or None: wrong key, another algorithm, no `exp`,
    expired (beyond the skew), not yet valid, oversized or malformed all open nothing."""
    if key is None or not token or len(token) > MAX_TOKEN_LENGTH:
        return None
    import jwt  # PyJWT and cryptography load with the first visitor token, not at start

    try:
        payload = jwt.decode(
            token,
            key,
            algorithms=["HS256"],
            options={"require": ["exp"], "verify_aud": False},
            leeway=CLOCK_SKEW_SECONDS,
        )
    except (jwt.PyJWTError, ValueError, TypeError):
        return None
    if not isinstance(payload, dict):
        return None
    return {k: v for k, v in payload.items() if k not in _REGISTERED}


def expiry(token: str | None) -> int | None:
    """The `exp` of a visitor token `signed_claims` has accepted (read again without checking:
    it was checked), or None without one."""
    if not token:
        return None
    import jwt

    try:
        exp = jwt.decode(token, options={"verify_signature": False}).get("exp")
    except (jwt.PyJWTError, ValueError, TypeError):
        return None
    return int(exp) if isinstance(exp, int | float) else None


def unsigned_size_ok(claims: Mapping[str, Any]) -> bool:
    """Unsigned claims a visitor sends count only within bounds (depth first: serialising a
    deep value recurses)."""
    if _depth(claims, MAX_SCHEMA_DEPTH) > MAX_SCHEMA_DEPTH:
        return False
    return len(json.dumps(claims, separators=(",", ":"))) <= MAX_UNSIGNED_LENGTH


def _admitted(claims: Mapping[str, Any], properties: Mapping[str, Any]) -> dict[str, Any]:
    """The claims the schema declares, each whose value matches its claim schema."""
    out: dict[str, Any] = {}
    for name, value in claims.items():
        claim_schema = properties.get(name)
        if isinstance(claim_schema, Mapping) and _validator(claim_schema).is_valid(value):
            out[name] = value
    return out


def visitor_scope(
    schema: Mapping[str, Any] | None,
    signed: Mapping[str, Any] | None,
    unsigned: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """The scope conditions are evaluated in: `{"visitor": {"claims": {..., "unsigned": {...}}}}`.

    Without an adaptive schema the signed claims count as signed and no unsigned claim counts
    (nothing says what they mean). With one, a claim counts only if the schema declares it and
    its value matches: a claim that does not is dropped, so a condition reading it is false."""
    signed = dict(signed or {})
    signed.pop("unsigned", None)  # only the visitor's own payload fills `unsigned`
    unsigned = dict(unsigned or {})
    if schema is None:
        return {"visitor": {"claims": {**signed, "unsigned": {}}}}
    properties = schema.get("properties", {})
    unsigned_schema = properties.get("unsigned", {})
    claims = _admitted(signed, {k: v for k, v in properties.items() if k != "unsigned"})
    claims["unsigned"] = _admitted(unsigned, unsigned_schema.get("properties", {}))
    return {"visitor": {"claims": claims}}


# -- the adaptive schema -------------------------------------------------------------------------

_SCALAR_CLAIMS: Final[list[dict[str, Any]]] = [
    {
        "type": "object",
        "properties": {"type": {"const": "boolean"}, "description": {"type": "string"}},
        "required": ["type", "description"],
        "additionalProperties": False,
    },
    {
        "type": "object",
        "properties": {
            "type": {"const": "string"},
            "description": {"type": "string"},
            "enum": {"type": "array", "items": {"type": "string"}, "minItems": 1},
        },
        "required": ["type", "description"],
        "additionalProperties": False,
    },
    {
        "type": "object",
        "properties": {"type": {"const": "number"}, "description": {"type": "string"}},
        "required": ["type", "description"],
        "additionalProperties": False,
    },
]

# GitBook's SiteAdaptiveJSONSchema as a draft-07 meta-schema: checked with jsonschema itself.
_FORM: Final[dict[str, Any]] = {
    "definitions": {
        "scalar": {"oneOf": _SCALAR_CLAIMS},
        "claim": {
            "oneOf": [
                *_SCALAR_CLAIMS,
                {
                    "type": "object",
                    "properties": {
                        "type": {"const": "array"},
                        "description": {"type": "string"},
                        "items": {"$ref": "#/definitions/scalar"},
                    },
                    "required": ["type", "description", "items"],
                    "additionalProperties": False,
                },
                {
                    "type": "object",
                    "properties": {
                        "type": {"const": "object"},
                        "description": {"type": "string"},
                        "properties": {
                            "type": "object",
                            "additionalProperties": {"$ref": "#/definitions/claim"},
                        },
                        "additionalProperties": {"const": False},
                    },
                    "required": ["type", "description", "properties", "additionalProperties"],
                    "additionalProperties": False,
                },
            ]
        },
    },
    "type": "object",
    "properties": {
        "$schema": {"const": "http://json-schema.org/draft-07/schema#"},
        "type": {"const": "object"},
        "properties": {
            "type": "object",
            "properties": {
                "unsigned": {
                    "type": "object",
                    "properties": {
                        "type": {"const": "object"},
                        "description": {"type": "string"},
                        "properties": {
                            "type": "object",
                            "additionalProperties": {"$ref": "#/definitions/claim"},
                        },
                        "additionalProperties": {"const": False},
                    },
                    "required": ["type", "properties", "additionalProperties"],
                    "additionalProperties": False,
                }
            },
            "additionalProperties": {"$ref": "#/definitions/claim"},
        },
        "additionalProperties": {"const": False},
    },
    "required": ["type", "properties", "additionalProperties"],
    "additionalProperties": False,
}


# jsonschema (with its referencing and format tables, ~3 MB) loads where a schema is checked
# or a claim admitted, not in every API process.
def _validator(schema: Mapping[str, Any]) -> Any:
    from jsonschema import Draft7Validator

    return Draft7Validator(schema)


@functools.cache
def _form_validator() -> Any:
    return _validator(_FORM)


def _depth(value: Any, limit: int) -> int:
    """Nesting depth of a JSON value, stopping once past `limit` (so it stays cheap)."""
    if limit < 0 or not isinstance(value, dict | list):
        return 0
    items = value.values() if isinstance(value, dict) else value
    return 1 + max((_depth(item, limit - 1) for item in items), default=0)


# GitBook's SiteAdaptiveJSONSchema admits this one text as the `unsigned` object's description.
UNSIGNED_DESCRIPTION: Final = "Unsigned claims of the site visitor."


def gitbook_form(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` as GitBook's SiteAdaptiveJSONSchema reads it: the `unsigned` claims object
    takes GitBook's one description (required there, and only that text; a schema may give
    another or none)."""
    unsigned = schema.get("properties", {}).get("unsigned")
    if not isinstance(unsigned, dict) or unsigned.get("description") == UNSIGNED_DESCRIPTION:
        return schema
    properties = {**schema["properties"], "unsigned": {**unsigned}}
    properties["unsigned"]["description"] = UNSIGNED_DESCRIPTION
    return {**schema, "properties": properties}


def check_schema(schema: Any) -> None:
    """A 400 unless `schema` is an adaptive schema GitBook would take."""
    if not isinstance(schema, dict):
        raise BadRequest("Invalid body field 'jsonSchema': must be an object")
    if len(json.dumps(schema, separators=(",", ":"))) > MAX_SCHEMA_LENGTH:
        raise BadRequest(
            f"Invalid body field 'jsonSchema': at most {MAX_SCHEMA_LENGTH} characters of JSON"
        )
    # Before jsonschema walks it: recursion in the validators is bounded by this depth.
    if _depth(schema, MAX_SCHEMA_DEPTH) > MAX_SCHEMA_DEPTH:
        raise BadRequest(
            f"Invalid body field 'jsonSchema': nested at most {MAX_SCHEMA_DEPTH} levels deep"
        )
    from jsonschema import Draft7Validator
    from jsonschema.exceptions import SchemaError

    try:
        Draft7Validator.check_schema(schema)
    except SchemaError as exc:
        raise BadRequest(
            f"Invalid body field 'jsonSchema': not a draft-07 JSON Schema ({exc.message[:200]})"
        ) from None
    error = next(iter(_form_validator().iter_errors(schema)), None)
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "(root)"
        raise BadRequest(
            f"Invalid body field 'jsonSchema': at {where[:200]}: claims are objects of "
            "GitBook's forms (boolean, string, enum, number, array or object, each with a "
            "description) and the schema an object with additionalProperties false"
        )
