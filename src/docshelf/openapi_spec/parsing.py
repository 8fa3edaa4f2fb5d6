"""Pure parsing and validation of OpenAPI documents, run in the offload pool's `parse` lane.

Everything here is bounded before it is built: a document is at most MAX_SOURCE_BYTES, nested
at most MAX_DEPTH levels, and expands to at most MAX_NODES nodes once YAML aliases are followed.
YAML is read by kit/yamlbound.py: composed with counts of depth, nodes and aliases, and the
composed node graph measured (memoized, so a billion-laughs document costs its *written* size)
before any Python object is constructed from it. Nothing here touches the network: external
`$ref`s are reported to the caller, which fetches them through the guarded fetcher and hands
the files back; the validator's reference handlers only read those files.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import unquote, urldefrag, urljoin, urlsplit

import orjson

from docshelf.kit import yamlbound

MAX_SOURCE_BYTES = 10 * 1024 * 1024
MAX_DEPTH = 100
MAX_NODES = 1_000_000
MAX_ALIASES = 10_000
# Errors kept for the caller; the count goes on to COUNT_ERRORS_UP_TO.
MAX_REPORTED_ERRORS = 20
COUNT_ERRORS_UP_TO = 1000

# Keys whose values are data, never OpenAPI objects: a "$ref" inside them is not a reference.
_LITERAL_KEYS = frozenset({"example", "default", "enum", "const"})
# Keys whose values map names to objects: a child named "example" there is a schema.
_NAME_MAPS = frozenset({"properties", "patternProperties", "definitions", "$defs"})


class ParseError(Exception):
    """The document cannot be used; the message says why."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def parse_document(data: bytes, uri: str | None) -> tuple[dict[str, Any], list[str], str]:
    """(document, absolute URIs of the other files it refers to, "json" or "yaml"). `uri` is
    where the bytes came from, None for a text source (whose relative references name
    nothing)."""
    if len(data) > MAX_SOURCE_BYTES:
        raise ParseError(f"the document is larger than {MAX_SOURCE_BYTES} bytes")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ParseError("the document is not UTF-8 text") from None
    document: Any = None
    fmt = "yaml"
    if text.lstrip()[:1] in ("{", "["):
        try:
            document = orjson.loads(text)
            fmt = "json"
        except orjson.JSONDecodeError:
            document = None  # YAML is a superset of JSON; its parser says what is wrong
    if fmt == "yaml":
        document = _load_yaml(text)
    else:
        _check_depth(document)
    if not isinstance(document, dict):
        raise ParseError("the document is not an object (a mapping of fields)")
    return document, external_refs(document, uri), fmt


# -- YAML -------------------------------------------------------------------------------------

_YAML_BOUNDS = yamlbound.Bounds(
    text_chars=MAX_SOURCE_BYTES, depth=MAX_DEPTH, nodes=MAX_NODES, aliases=MAX_ALIASES
)


def _load_yaml(text: str) -> Any:
    try:
        document = yamlbound.load(text, _YAML_BOUNDS, empty="the document is empty")
    except yamlbound.YamlRefused as exc:
        raise ParseError(exc.message) from None
    return _plain(document)


_INT64 = 2**63


def _plain(value: Any) -> Any:
    """JSON values only: YAML's integer keys (`200:` under responses) become strings, times
    their ISO text, binary its base64; shared (aliased) objects become copies, which _measure
    has already bounded."""
    if isinstance(value, dict):
        return {_key(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_plain(v) for v in value]
    if isinstance(value, bool) or value is None or isinstance(value, str | float):
        return value
    if isinstance(value, int):
        return value if -_INT64 <= value < _INT64 else str(value)
    if isinstance(value, dt.date | dt.datetime):
        return value.isoformat()
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    return str(value)


def _key(key: Any) -> str:
    if isinstance(key, str):
        return key
    if isinstance(key, bool):
        return "true" if key else "false"
    if key is None:
        return "null"
    if isinstance(key, dt.date | dt.datetime):
        return key.isoformat()
    if isinstance(key, list | tuple | dict):
        raise ParseError("a mapping key is itself a collection")
    return str(key)


def _check_depth(document: Any) -> None:
    stack: list[tuple[Any, int]] = [(document, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise ParseError(f"nested deeper than {MAX_DEPTH} levels")
        if isinstance(value, dict):
            stack.extend((v, depth + 1) for v in value.values())
        elif isinstance(value, list):
            stack.extend((v, depth + 1) for v in value)


_one_line = yamlbound.one_line


# -- references -------------------------------------------------------------------------------


def _refs(document: Any) -> Iterator[str]:
    """Every `$ref` string of the document, skipping values that are data (examples...)."""
    stack: list[tuple[Any, str | None]] = [(document, None)]
    while stack:
        value, parent_key = stack.pop()
        if isinstance(value, dict):
            ref = value.get("$ref")
            if isinstance(ref, str):
                yield ref
            for key, child in value.items():
                if key in _LITERAL_KEYS and parent_key not in _NAME_MAPS:
                    continue
                stack.append((child, key))
        elif isinstance(value, list):
            stack.extend((child, parent_key) for child in value)


def _target_file(ref: str, base: str | None) -> str | None:
    """The absolute URI of the file a `$ref` names, None for the document itself."""
    file_part, _fragment = urldefrag(ref)
    if not file_part:
        return None
    if urlsplit(file_part).scheme:
        return file_part
    if base is None or not urlsplit(base).scheme:
        raise ParseError(
            f"$ref {ref!r} is relative, and a specification given as text has no location to "
            "resolve it against"
        )
    return urldefrag(urljoin(base, file_part))[0]


def external_refs(document: Any, base: str | None) -> list[str]:
    found: list[str] = []
    for ref in _refs(document):
        target = _target_file(ref, base)
        if target is not None and target != base and target not in found:
            found.append(target)
    return found


def _pointer(document: Any, fragment: str, ref: str) -> Any:
    if fragment in ("", "/"):
        return document
    if not fragment.startswith("/"):
        raise ParseError(f"$ref {ref!r}: only JSON pointers are supported after '#'")
    node = document
    for raw in fragment[1:].split("/"):
        part = unquote(raw).replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            raise ParseError(f"$ref {ref!r} points at nothing")
    return node


def check_refs(files: Mapping[str, Any]) -> None:
    """Every reference resolves within `files`, and none is a chain of references that leads
    back to itself (a schema may contain itself; a reference cannot *be* itself)."""
    for uri, document in files.items():
        for ref in _refs(document):
            where, current = uri, ref
            seen: set[tuple[str, str]] = set()
            while True:
                # A reference is relative to the file that holds it.
                target = _target_file(current, where if urlsplit(where).scheme else None)
                where = target or where
                if where not in files:
                    raise ParseError(f"$ref {ref!r} names a file that was not loaded")
                fragment = unquote(urldefrag(current)[1])
                if (where, fragment) in seen:
                    raise ParseError(f"$ref {ref!r} is circular: it leads back to itself")
                seen.add((where, fragment))
                node = _pointer(files[where], fragment, ref)
                if not (isinstance(node, dict) and isinstance(node.get("$ref"), str)):
                    break
                current = node["$ref"]


# -- validation -------------------------------------------------------------------------------


class _Files(dict[str, Any]):
    """Reference handlers for the validator, for every scheme: they serve the files already
    loaded and refuse anything else, so validation never opens a connection or a file."""

    def __init__(self, files: Mapping[str, Any]) -> None:
        super().__init__()
        self._files = files

    def __contains__(self, scheme: object) -> bool:
        return True

    def __getitem__(self, scheme: str) -> Any:
        return self._serve

    def _serve(self, uri: str) -> Any:
        document = self._files.get(urldefrag(uri)[0])
        if document is None:
            raise ParseError(f"$ref to {uri!r}, which was not loaded")
        return document


def _describe(error: Any) -> dict[str, str]:
    path = "/".join(
        str(p).replace("~", "~0").replace("/", "~1") for p in getattr(error, "path", ()) or ()
    )
    # The first line: the rest repeats the schema and the instance, which can be huge.
    message = _one_line(str(getattr(error, "message", error)).split("\n", 1)[0])
    return {"message": f"{message} (at /{path})" if path else message, "code": "INVALID"}


def validate(files: Mapping[str, Any], entry: str) -> tuple[list[dict[str, str]], int]:
    """The validator's errors (at most MAX_REPORTED_ERRORS) and how many there are (counted up to
    COUNT_ERRORS_UP_TO)."""
    # The validator and its JSON Schema stack (~25 MB) load in the process that parses specs,
    # not in every API process that imports this module.
    from openapi_spec_validator.shortcuts import get_validator_cls
    from openapi_spec_validator.validation.exceptions import ValidatorDetectError
    from referencing.exceptions import Unresolvable

    document = files[entry]
    try:
        cls = get_validator_cls(document)
    except ValidatorDetectError:
        return [
            {
                "message": "not an OpenAPI 3.x or Swagger 2.0 document (no 'openapi' or "
                "'swagger' version field that the validator knows)",
                "code": "UNKNOWN_VERSION",
            }
        ], 1
    bound = type(cls.__name__, (cls,), {"resolver_handlers": _Files(files)})
    errors: list[dict[str, str]] = []
    count = 0
    try:
        for error in bound(document, base_uri=entry).iter_errors():
            count += 1
            if len(errors) < MAX_REPORTED_ERRORS:
                errors.append(_describe(error))
            if count >= COUNT_ERRORS_UP_TO:
                break
    except ParseError:
        raise
    except RecursionError:
        raise ParseError("the references nest too deeply to validate") from None
    except Unresolvable as exc:
        # A reference inside data the reference check skips (a default, an example) that the
        # validator still follows: only files already loaded are served to it.
        raise ParseError(f"cannot validate: $ref {exc.ref!r} cannot be resolved") from None
    except Exception as exc:
        # The validator's own failures (an unresolvable reference it found, a value of a type it
        # did not expect) describe the document, not a bug of ours.
        raise ParseError(f"cannot validate: {_one_line(str(exc))}") from None
    return errors, count


def finish(files: dict[str, Any], entry: str) -> tuple[str, bytes] | tuple[list[Any], int]:
    """(digest, canonical content) of a valid filesystem, or (errors, count) of an invalid one."""
    check_refs(files)
    errors, count = validate(files, entry)
    if count:
        return errors, count
    content = {"entrypoint": entry, "files": files}
    data = orjson.dumps(content, option=orjson.OPT_SORT_KEYS)
    return hashlib.sha256(data).hexdigest(), data
