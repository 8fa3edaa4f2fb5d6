"""Prometheus metrics (prometheus-client). With several API processes, `docshelf serve` sets
PROMETHEUS_MULTIPROC_DIR before any of them imports this module, and each scrape adds up every
process's files (the library's multiprocess mode); what lives in the database (jobs) is read at
scrape time, so it is right whichever process answers."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import REGISTRY, Collector
from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine

CONTENT_TYPE = CONTENT_TYPE_LATEST

REQUESTS = Counter(
    "docshelf_http_requests",
    "HTTP requests answered, by method, route template and status.",
    ("method", "route", "status"),
)
LATENCY = Histogram(
    "docshelf_http_request_duration_seconds",
    "Time from the request's arrival to the last byte handed to the server.",
    ("method", "route", "status"),
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0),
)
RATE_LIMITED = Counter("docshelf_rate_limit_refusals", "Requests refused with 429.")
BLOB_BYTES = Counter(
    "docshelf_blob_bytes", "Bytes handed to the blob store (put) or served from it (read).", ("op",)
)
LISTING_BUILDS = Counter(
    "docshelf_listing_builds",
    "Page listings built (not served from kept bytes), by what they started from: this "
    "process's pieces, the stored pieces of a large space, or every page.",
    ("start",),
)
POOL_IN_USE = Gauge(
    "docshelf_db_pool_connections_in_use",
    "Database connections checked out of the pools, summed over live processes (the few idle"
    " read connections each process keeps between reads included).",
    ("pool",),
    multiprocess_mode="livesum",
)
POOL_SIZE = Gauge(
    "docshelf_db_pool_size",
    "Configured pool size (kept connections), summed over live processes.",
    ("pool",),
    multiprocess_mode="livesum",
)

# Per (method, route, status): the two children, so a request does one dict look-up instead of
# two .labels() calls (each takes a lock and builds a tuple). Bounded: routes are templates.
_children: dict[tuple[str, str, int], tuple[Any, Any]] = {}


def observe_request(method: str, route: str, status: int, seconds: float) -> None:
    key = (method, route, status)
    pair = _children.get(key)
    if pair is None:
        label = str(status)
        pair = _children[key] = (
            REQUESTS.labels(method, route, label),
            LATENCY.labels(method, route, label),
        )
    pair[0].inc()
    pair[1].observe(seconds)


def watch_pools(engine: AsyncEngine) -> None:
    """Keep the pool gauges current through the pools' own checkout/checkin events."""
    engines = [("main", engine)]
    reader = getattr(engine, "reader", None)
    if reader is not None:
        engines.append(("reader", reader))
    for name, eng in engines:
        pool = eng.sync_engine.pool
        size = getattr(pool, "size", None)
        if callable(size):
            POOL_SIZE.labels(name).set(size())
        in_use = POOL_IN_USE.labels(name)
        event.listen(pool, "checkout", lambda *_a, g=in_use: g.inc())
        event.listen(pool, "checkin", lambda *_a, g=in_use: g.dec())


class _Rows(Collector):
    """Metrics read from the database for one scrape."""

    def __init__(self, families: Iterable[GaugeMetricFamily]) -> None:
        self.families = list(families)

    def collect(self) -> Iterable[GaugeMetricFamily]:
        return self.families


def exposition(job_counts: Iterable[tuple[str, str, bool, int]]) -> bytes:
    """The text format: every process's metrics, then the jobs (kind, status, whether an
    attempt failed, count)."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
        body = generate_latest(registry)
    else:
        body = generate_latest(REGISTRY)
    jobs = GaugeMetricFamily(
        "docshelf_jobs",
        "Jobs by kind and status: queued is the queue's depth, failed the jobs that gave up.",
        labels=("kind", "status"),
    )
    retrying = GaugeMetricFamily(
        "docshelf_jobs_retrying",
        "Queued jobs whose last attempt failed (waiting for their retry), by kind.",
        labels=("kind",),
    )
    totals: dict[tuple[str, str], int] = {}
    waiting: dict[str, int] = {}
    for kind, status, failed, count in job_counts:
        totals[kind, status] = totals.get((kind, status), 0) + count
        if failed and status == "queued":
            waiting[kind] = waiting.get(kind, 0) + count
    for labels, count in sorted(totals.items()):
        jobs.add_metric(labels, count)
    for kind, count in sorted(waiting.items()):
        retrying.add_metric((kind,), count)
    extra = CollectorRegistry()
    extra.register(_Rows([jobs, retrying]))
    return body + generate_latest(extra)
