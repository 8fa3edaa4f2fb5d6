"""Logging for every process (serve, its ASGI workers, the job runner, the CLI): one line per
record, JSON for collectors or text for a terminal, each carrying the request id of the work it
belongs to (the HTTP request, or the job that request enqueued)."""

from __future__ import annotations

import contextvars
import logging
import re
import secrets
import sys
from datetime import UTC, datetime
from typing import IO, Any

import orjson

# The request the current task works for; the job runner sets it from the job's payload.
request_id: contextvars.ContextVar[str | None] = contextvars.ContextVar("request_id", default=None)

# Key under which enqueue() carries the request id in a job's payload (the runner pops it).
PAYLOAD_KEY = "_request_id"

# A caller's id is echoed into our logs and headers: bounded, and nothing a log parser or a
# header could misread.
_VALID_ID = re.compile(rb"[A-Za-z0-9._:-]{1,128}")


def from_header(value: bytes | None) -> str:
    """The client's X-Request-Id when it is safe to log and echo, else a new one."""
    if value is not None and _VALID_ID.fullmatch(value):
        return value.decode("ascii")
    return secrets.token_hex(16)


class _RequestIdFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if not hasattr(record, "request_id"):
            rid = request_id.get()
            if rid is not None:  # lines outside any request carry no empty field
                record.request_id = rid
        return True


# What every LogRecord has; anything else on a record came through `extra=` and is a field.
_STANDARD = frozenset(logging.LogRecord("", 0, "", 0, "", (), None).__dict__) | {
    "message",
    "asctime",
}


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time (ISO 8601, UTC), level, logger, message, the record's
    extra fields, and the traceback if any. Written for the request path: measured at about
    half the cost of python-json-logger's formatter, which reflects on every record."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        fields = record.__dict__
        for key in fields.keys() - _STANDARD:  # one set difference in C, not a loop in Python
            line[key] = fields[key]
        if record.exc_info:
            line["exc_info"] = self.formatException(record.exc_info)
        return orjson.dumps(line, default=str).decode()


class _TextFormatter(logging.Formatter):
    """For a terminal: the usual line, then the request's fields when the record has them."""

    _FIELDS = ("method", "route", "status", "duration_ms", "user_id")

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        extra = [f"{k}={getattr(record, k)}" for k in self._FIELDS if hasattr(record, k)]
        rid = getattr(record, "request_id", None)
        if rid:
            extra.append(f"request_id={rid}")
        return f"{line} {' '.join(extra)}" if extra else line


def resolve_format(log_format: str, stream: IO[str]) -> str:
    if log_format == "auto":
        isatty = getattr(stream, "isatty", None)
        return "text" if isatty is not None and isatty() else "json"
    return log_format


def configure(level: str, log_format: str, stream: IO[str] | None = None) -> None:
    """Replace the root logger's handlers with one line-per-record handler on stderr."""
    # The logging HOWTO's "Optimization": no caller frame look-up and no thread or process
    # names per record (our formats use none of them); a third of an access line's cost.
    logging._srcfile = None
    logging.logThreads = False
    logging.logProcesses = False
    logging.logMultiprocessing = False
    stream = stream or sys.stderr
    handler = logging.StreamHandler(stream)
    handler.addFilter(_RequestIdFilter())
    formatter: logging.Formatter
    if resolve_format(log_format, stream) == "json":
        formatter = JsonFormatter()
    else:
        formatter = _TextFormatter("%(asctime)s %(levelname)s %(name)s %(message)s")
    handler.setFormatter(formatter)
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
    # httpx logs every URL it fetches at INFO, and a user's import URL may carry a key.
    logging.getLogger("httpx").setLevel(max(root.level, logging.WARNING))


def job_payload(payload: dict[str, Any] | None) -> dict[str, Any]:
    """The payload a job is stored with: the caller's, plus the current request id if any."""
    rid = request_id.get()
    if rid is None:
        return payload or {}
    return {**(payload or {}), PAYLOAD_KEY: rid}
