"""Readiness and the metrics scrape. Both answer without a token and must stay cheap: readiness
is one indexed read and one tiny write, a scrape one grouped count."""

from __future__ import annotations

import ast
import asyncio
import functools
import hmac
import ipaddress
import logging
from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine

from docshelf.config import Settings
from docshelf.features import Features
from docshelf.kit import metrics
from docshelf.kit.db import unit_of_work
from docshelf.kit.errors import Forbidden, NotFound, ServiceUnavailable
from docshelf.kit.migrate import MIGRATIONS_DIR
from docshelf.ops import repository

log = logging.getLogger("docshelf.ops")

# A probe must answer before the orchestrator's own timeout; past this a check counts as failed.
CHECK_TIMEOUT = 2.0


@functools.cache
def migration_heads() -> frozenset[str]:
    """The revisions the code expects, read from the shipped migrations once per process: the
    revisions no other names as its parent. Read from the files' `revision` and `down_revision`
    assignments rather than through Alembic, which (with Mako and its Pygments plugin) would
    add ~8 MB to every API process for this one set."""
    revisions: set[str] = set()
    parents: set[str] = set()
    for path in (MIGRATIONS_DIR / "versions").glob("*.py"):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names = {t.id for t in targets if isinstance(t, ast.Name)}
                if not names & {"revision", "down_revision"}:
                    continue
                value = ast.literal_eval(node.value)
                if "revision" in names and isinstance(value, str):
                    revisions.add(value)
                if "down_revision" in names:
                    parents.update([value] if isinstance(value, str) else value or ())
    return frozenset(revisions - parents)


async def _database(engine: AsyncEngine) -> set[str]:
    async with unit_of_work(engine, write=False) as conn:
        return await repository.migration_revisions(conn)


async def readiness(engine: AsyncEngine, blobs: Any, features: Features) -> dict[str, Any]:
    failures: list[str] = []
    try:
        revisions = await asyncio.wait_for(_database(engine), CHECK_TIMEOUT)
    except Exception as exc:
        log.warning("readiness: database unreachable: %s", exc)
        failures.append("database unreachable")
    else:
        if revisions != migration_heads():
            failures.append(
                f"migrations not at head (database {sorted(revisions)}, "
                f"code {sorted(migration_heads())}); run `docshelf db upgrade`"
            )
    try:
        await asyncio.wait_for(blobs.probe_write(), CHECK_TIMEOUT)
    except Exception as exc:
        log.warning("readiness: blob store not writable: %s", exc)
        failures.append("blob store not writable")
    if failures:
        raise ServiceUnavailable("Not ready: " + "; ".join(failures))
    return {
        "status": "ready",
        "checks": {"database": "ok", "migrations": "ok", "blobs": "ok"},
        # Checked once at start (docshelf.features): a feature that is off is a fact about the
        # machine, not a failure a restart or a load balancer could route around.
        "features": features.readiness(),
    }


def _is_loopback(client: tuple[str, int] | None) -> bool:
    if client is None:
        return False
    try:
        return ipaddress.ip_address(client[0]).is_loopback
    except ValueError:
        return False


# A reverse proxy on the same host connects from loopback on behalf of anyone; these headers
# say it did, so such a request is never taken for a local one.
PROXY_HEADERS = ("forwarded", "x-forwarded-for", "x-real-ip", "x-forwarded-host")


def authorize_scrape(
    settings: Settings,
    client: tuple[str, int] | None,
    authorization: str | None,
    proxied: bool = False,
) -> None:
    """Loopback callers that no proxy forwarded, always; others with DOCSHELF_METRICS_TOKEN as
    a bearer token, if set."""
    if not settings.metrics_enabled:
        raise NotFound("Not found")
    if _is_loopback(client) and not proxied:
        return
    expected = settings.metrics_token
    if expected and authorization is not None:
        scheme, _, value = authorization.partition(" ")
        if scheme.lower() == "bearer" and hmac.compare_digest(
            value.strip().encode(), expected.encode()
        ):
            return
    raise Forbidden(
        "Metrics are served to loopback addresses (not through a proxy), or with the bearer "
        "token set in DOCSHELF_METRICS_TOKEN"
    )


async def scrape(engine: AsyncEngine) -> bytes:
    async with unit_of_work(engine, write=False) as conn:
        counts = await repository.job_counts(conn)
    return metrics.exposition(counts)
