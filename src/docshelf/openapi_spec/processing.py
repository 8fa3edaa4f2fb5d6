"""Turning a spec's source into a version: fetch (guarded), parse and validate (offload pool).

Runs in the `openapi.process` job's prepare step, with no transaction open. Every failure the
source can cause ends as an `Outcome` with GitBook's error code, never as an exception: a URL
the guard refuses, an error answer or a body over the cap is FETCH_ERROR, a deadline passed is
FETCH_TIMEOUT, anything about the document itself (syntax, size, depth, aliases, references,
validation, a parse past its time or memory) is PARSE_ERROR.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from docshelf.config import Settings
from docshelf.fetch import Fetcher, FetchTimeout
from docshelf.kit import offload
from docshelf.kit.errors import BadRequest
from docshelf.openapi_spec import parsing

# Files a spec may consist of, its entry point included, and their bytes together.
MAX_FILES = 20
MAX_TOTAL_BYTES = 20 * 1024 * 1024
PARSE_SECONDS = 60.0


@dataclass(frozen=True)
class Outcome:
    # Success: the content's digest and canonical bytes.
    digest: str | None = None
    data: bytes | None = None
    # Failure: GitBook's code, the errors to show and how many there were.
    error_code: str | None = None
    errors: list[dict[str, str]] = field(default_factory=list)
    error_count: int = 0


class _Failed(Exception):
    def __init__(self, code: str, message: str, error: str = "") -> None:
        super().__init__(message)
        self.outcome = Outcome(
            error_code=code,
            errors=[{"message": message, **({"code": error} if error else {})}],
            error_count=1,
        )


async def _fetch(fetcher: Fetcher, uri: str, entry: bool) -> bytes:
    what = "the specification" if entry else f"the referenced file {uri}"
    try:
        fetched = await fetcher.fetch(uri)
    except FetchTimeout as exc:
        raise _Failed("FETCH_TIMEOUT", f"Fetching {what}: {exc.message}") from None
    except BadRequest as exc:
        raise _Failed("FETCH_ERROR", f"Fetching {what}: {exc.message}") from None
    return fetched.body


async def _offloaded(fn: Any, *args: Any) -> Any:
    try:
        return await offload.run(fn, *args, seconds=PARSE_SECONDS, lane="parse")
    except parsing.ParseError as exc:
        raise _Failed("PARSE_ERROR", exc.message) from None
    except offload.OffloadTimeout:
        raise _Failed(
            "PARSE_ERROR", f"Parsing took longer than {PARSE_SECONDS:g} s and was stopped"
        ) from None
    except (offload.OffloadCrashed, MemoryError):
        raise _Failed("PARSE_ERROR", "Parsing needed more memory than allowed") from None


async def process(settings: Settings, source_url: str | None, source_text: str | None) -> Outcome:
    try:
        return await _process(settings, source_url, source_text)
    except _Failed as failed:
        return failed.outcome


async def _process(settings: Settings, source_url: str | None, source_text: str | None) -> Outcome:
    fetcher = Fetcher.from_settings(
        settings, max_bytes=parsing.MAX_SOURCE_BYTES, timeout=settings.openapi_fetch_timeout
    )
    if source_url is not None:
        entry: str | None = source_url
        data = await _fetch(fetcher, source_url, entry=True)
    else:
        entry = None
        data = (source_text or "").encode()
    total = len(data)
    document, refs, fmt = await _offloaded(parsing.parse_document, data, entry)
    # A text source has no location: its file is named after its format.
    entry_name = entry or f"openapi.{fmt}"
    files: dict[str, Any] = {entry_name: document}
    queue = list(refs)
    while queue:
        uri = queue.pop(0)
        if uri in files:
            continue
        if len(files) >= MAX_FILES:
            raise _Failed(
                "PARSE_ERROR", f"The specification refers to more than {MAX_FILES - 1} other files"
            )
        data = await _fetch(fetcher, uri, entry=False)
        total += len(data)
        if total > MAX_TOTAL_BYTES:
            raise _Failed(
                "PARSE_ERROR",
                f"The specification and its referenced files exceed {MAX_TOTAL_BYTES} bytes",
            )
        document, refs, _ = await _offloaded(parsing.parse_document, data, uri)
        files[uri] = document
        # Files already loaded or queued are skipped: reference cycles between files end here.
        queue.extend(ref for ref in refs if ref not in files and ref not in queue)
    result = await _offloaded(parsing.finish, files, entry_name)
    if isinstance(result[0], str):
        return Outcome(digest=result[0], data=result[1])
    errors, count = result
    return Outcome(error_code="PARSE_ERROR", errors=errors, error_count=count)
