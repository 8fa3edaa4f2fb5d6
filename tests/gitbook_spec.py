"""GitBook's published OpenAPI descriptions, fetched from the npm registry (package
`@gitbook/api`, file `package/spec/openapi.json`) at pinned versions and cached on disk."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
from functools import cache
from pathlib import Path
from typing import Any

import pytest

# 0.130.0 is the release closest to the spec; 0.202.0 adds operations (POST /orgs) that the
# 0.130 line dropped.
SCHEMA_VERSION = "0.130.0"
PATH_VERSIONS = ("0.130.0", "0.202.0")
# Custom fields are described up to 0.91.0 only (absent from 0.130.0 and 0.202.0): operations a
# later release lacks are taken from it, with the component schemas they name.
FALLBACK_VERSION = "0.91.0"
_METHODS = frozenset({"get", "put", "post", "patch", "delete"})
CACHE = (
    Path(os.environ.get("DOCSHELF_CACHE_DIR", Path(__file__).resolve().parent.parent / ".cache"))
    / "gitbook-api"
)


def _fetch(version: str, target: Path) -> None:
    npm = shutil.which("npm")
    if npm is None:
        raise RuntimeError("npm is not installed")
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [npm, "pack", f"@gitbook/api@{version}", "--pack-destination", tmp, "--silent"],
            check=True,
            capture_output=True,
            timeout=300,
        )
        (tgz,) = Path(tmp).glob("*.tgz")
        with tarfile.open(tgz) as tar:
            member = tar.extractfile("package/spec/openapi.json")
            assert member is not None
            data = member.read()
    json.loads(data)  # refuse to cache anything that is not JSON
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".partial")
    partial.write_bytes(data)
    partial.replace(target)


@cache
def load(version: str) -> dict[str, Any]:
    target = CACHE / version / "openapi.json"
    if not target.exists():
        try:
            _fetch(version, target)
        except (RuntimeError, subprocess.SubprocessError, OSError) as exc:
            if os.environ.get("CI") == "true":
                raise
            pytest.skip(f"GitBook's OpenAPI description {version} could not be fetched: {exc}")
    spec: dict[str, Any] = json.loads(target.read_text())
    _fix_errata(spec)
    if version != FALLBACK_VERSION:
        _add_fallback(spec, load(FALLBACK_VERSION))
    return spec


def _add_fallback(spec: dict[str, Any], old: dict[str, Any]) -> None:
    for path, ops in old["paths"].items():
        for method, op in ops.items():
            if method in _METHODS and operation(spec, method, path) is None:
                spec["paths"].setdefault(path, {})[method] = op
    for kind, items in old["components"].items():
        # The later release's definition wins where both have one.
        target = spec["components"].setdefault(kind, {})
        for name, item in items.items():
            target.setdefault(name, item)


def _fix_errata(spec: dict[str, Any]) -> None:
    """Typos in GitBook's descriptions that GitBook itself fixed in later releases."""
    # Names listed as required but never defined (0.130.0: Space `type`, Site `defaultSpace`)
    # describe nothing a client could read; later releases drop or define them.
    for schema in spec.get("components", {}).get("schemas", {}).values():
        if isinstance(schema, dict) and "properties" in schema and "required" in schema:
            schema["required"] = [r for r in schema["required"] if r in schema["properties"]]
    # A discriminator without a mapping makes validators look the value up as a schema name
    # ("document" for RevisionPage), which names nothing; oneOf alone tells the variants apart.
    for schema in spec.get("components", {}).get("schemas", {}).values():
        mapped = isinstance(schema, dict) and "mapping" in schema.get(
            "discriminator", {"mapping": 1}
        )
        if isinstance(schema, dict) and not mapped:
            del schema["discriminator"]
    # Document's "Empty" variant forbids additional properties, but RevisionPageDocument
    # composes Document with allOf, so no page without a body (every page of a listing) could
    # ever match it; GitBook's own listings send such pages. The variant means "no body".
    document = spec.get("components", {}).get("schemas", {}).get("Document")
    if isinstance(document, dict):
        for variant in document.get("oneOf", []):
            if variant.get("title") == "Empty":
                variant.pop("additionalProperties", None)
                variant["not"] = {"anyOf": [{"required": ["markdown"]}, {"required": ["document"]}]}
    domain_orgs = spec["paths"].get("/email-domains/{emailDomain}/orgs", {}).get("get")
    if domain_orgs is not None:
        schema = domain_orgs["responses"]["200"]["content"]["application/json"]["schema"]
        # "organizaitons" in 0.130.0; "organizations" from a later release on.
        schema["required"] = [
            "organizations" if r == "organizaitons" else r for r in schema.get("required", [])
        ]


def normalize(path: str) -> str:
    """`/v1/orgs/{organizationId}` and GitBook's `/orgs/{orgId}` compare equal."""
    path = path.removeprefix("/v1")
    return re.sub(r"\{[^}]+\}", "{}", path) or "/"


def operation(spec: dict[str, Any], method: str, path: str) -> dict[str, Any] | None:
    for candidate, ops in spec["paths"].items():
        if normalize(candidate) == normalize(path) and method.lower() in ops:
            op: dict[str, Any] = ops[method.lower()]
            return op
    return None
