"""The one settings object. Every process (serve, worker, CLI) builds it the same way."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="DOCSHELF_", extra="ignore")

    host: str = "127.0.0.1"
    port: int = 8000
    data_dir: Path = Path("./data")
    # Empty means SQLite inside data_dir.
    database_url: str = ""
    base_url: str = ""
    # Where published sites are served (their `urls.published`); empty means base_url.
    public_url: str = ""
    # Which custom hostnames sites may take (`PATCH …/sites/{id}` with `hostname`): a comma list
    # of `pattern` or `organizationId=pattern`, a pattern being a hostname, `*.domain` (any name
    # under it) or `*` (any). Empty: none. Only the operator knows which names point here and
    # which organization owns them; first come, first served would let one organization take
    # another's domain.
    custom_hostnames: str = ""
    # Pool size for PostgreSQL; SQLite uses a small pool of its own (one writer anyway).
    db_pool_size: int = 20
    max_body_bytes: int = Field(default=8 * 1024 * 1024, ge=1024)
    # A git push's pack (git-receive-pack): its files may hold up to 5 MiB each.
    git_push_max_bytes: int = Field(default=32 * 1024 * 1024, ge=1024)
    # Requests per token per window. 0 disables rate limiting.
    rate_limit: int = Field(default=1200, ge=0)
    rate_limit_window: int = Field(default=60, ge=1, le=3600)
    # Empty: each API process counts in memory and enforces its share of the limit,
    # ceil(rate_limit / rate_limit_processes). A Redis URL (redis://, rediss://, unix://): every
    # process counts in that Redis against one exact budget, and falls back to its share while
    # the Redis is unreachable.
    rate_limit_redis_url: str = ""
    # Requests without a token (the published reader, published look-ups, SSO posts) per client
    # address per window, so no visitor can take the readers' share of the event loop; the
    # same window, store and per-process share as the token limit. 0 disables it.
    anonymous_rate_limit: int = Field(default=1200, ge=0)
    # API processes sharing the limit, across every host. 0 means DOCSHELF_WORKERS.
    rate_limit_processes: int = Field(default=0, ge=0, le=10_000)
    # GET/HEAD requests an API process begins per turn of its event loop (kit/admission.py);
    # the others begin in later turns, so that a write under a heavy read load is answered
    # in milliseconds, not seconds (benchmarks/RESULTS.md: 1 served the mix best). 0: no bound.
    reads_per_turn: int = Field(default=1, ge=0, le=10_000)
    # ... and works on at most this many at once (0: no bound). SQLite's reads never yield, so
    # only PostgreSQL's reach it.
    reads_in_flight: int = Field(default=4, ge=0, le=10_000)
    # Run the job runner inside `serve`; turn off when `docshelf worker` runs separately.
    run_jobs_in_server: bool = True
    # Seconds a write waits for a lock (SQLite's write lock, a PostgreSQL row lock) or for a
    # pooled connection before it answers 503 with Retry-After instead of waiting on.
    lock_timeout: float = Field(default=5.0, gt=0, le=600)
    # Worker processes for heavy work off the event loop (kit/offload.py) and the memory each
    # may use (MB); conversions past that fail cleanly instead of swapping the host.
    offload_workers: int = Field(default=1, ge=1, le=64)
    offload_memory_mb: int = Field(default=1024, ge=128)
    # Per-process caches (MB each): content objects (content/tree/objects.py), presented page
    # listings (content/service.py) and what is derived from markdown texts (document/markdown.py,
    # two memos: a third and two thirds of it). Together they bound most of what an API
    # process holds beyond its code (~110 MB at start); a 10,000-page space's index and records
    # are ~10 MB, its listing 6.3 MB, the memos of 1,000 rendered pages ~8 MB
    # (benchmarks/memory.py).
    object_cache_mb: int = Field(default=32, ge=1)
    listing_cache_mb: int = Field(default=16, ge=1)
    # The per-page pieces of each space's latest listing (content/listing/pieces.py), from which the
    # first listing of a new revision is built: ~4.7 MB for 10,000 pages (5.4 as estimated
    # against this budget). 0 keeps none.
    listing_pieces_mb: int = Field(default=8, ge=0)
    # Spaces of at least this many pages keep their listing pieces in the database too
    # (listing_snapshots, written by a job as main moves): a process lists them from there
    # instead of reading and encoding every page (~100-180 ms for 10,000).
    listing_snapshot_pages: int = Field(default=2000, ge=1)
    markdown_memo_mb: int = Field(default=48, ge=3)
    # The published reader's rendered page bodies and whole answers, each bounded by bytes.
    reader_cache_mb: int = Field(default=16, ge=1)
    server: str = "granian"
    workers: int = 1
    log_level: str = "info"
    # "json" (one object per line, for collectors), "text" (for a terminal), or "auto": text
    # when stderr is a terminal, JSON otherwise.
    log_format: Literal["auto", "json", "text"] = "auto"
    # One log line per request (logger docshelf.access, level info).
    access_log: bool = True
    # /metrics answers loopback callers; with a token, also others sending it as a bearer token.
    metrics_enabled: bool = True
    metrics_token: str = ""
    # Comma-separated host names or IP addresses that URL fetching may reach even though they
    # are private/loopback (e.g. "127.0.0.1" for tests, an intranet docs host). Empty: none.
    fetch_allowed_hosts: str = ""
    # A webhook delivery (one POST, redirects included) gives up after this many seconds.
    webhook_timeout: float = Field(default=10, gt=0, le=60)
    # A Git Sync's whole exchange with its remote (every request of one sync, answers read)
    # is stopped after this many seconds: under the sync job's own limit (240 s), which also
    # covers building the space's history before and applying a pull after.
    gitsync_timeout: float = Field(default=180, gt=0, le=200)
    # Events older than this many days leave the audit log (a scheduled job prunes them).
    audit_retention_days: int = Field(default=365, ge=1, le=36500)
    # OpenAPI specs with a URL source are fetched again this often (hours), and every fetch of
    # a spec or of a file it refers to gives up after openapi_fetch_timeout seconds.
    openapi_refresh_hours: float = Field(default=6, gt=0, le=24 * 365)
    openapi_fetch_timeout: float = Field(default=20, gt=0, le=300)
    # Where file bytes live: "local" (a directory) or "s3" (any S3-compatible service).
    blob_storage: str = "local"
    # Empty means <data_dir>/blobs.
    blob_dir: Path | None = None
    s3_bucket: str = ""
    # Prepended to every object name, so one bucket can hold several installs.
    s3_prefix: str = ""
    # Empty means AWS itself; set it for MinIO and other S3-compatible services.
    s3_endpoint_url: str = ""
    s3_region: str = "us-east-1"
    # Both empty: the standard AWS credential chain (environment, ~/.aws, instance role).
    s3_access_key_id: str = ""
    s3_secret_access_key: str = ""

    # How long an SSO login's browser session lasts (hours).
    sso_session_hours: int = Field(default=12, ge=1, le=24 * 30)

    @property
    def resolved_database_url(self) -> str:
        if self.database_url:
            return self.database_url
        return f"sqlite+aiosqlite:///{(self.data_dir / 'docshelf.db').resolve()}"

    @property
    def is_sqlite(self) -> bool:
        return self.resolved_database_url.startswith("sqlite")

    @property
    def resolved_base_url(self) -> str:
        if self.base_url:
            return self.base_url.rstrip("/")
        return f"http://{self.host}:{self.port}"

    @property
    def resolved_public_url(self) -> str:
        return self.public_url.rstrip("/") if self.public_url else self.resolved_base_url

    @property
    def resolved_rate_limit_processes(self) -> int:
        return self.rate_limit_processes or max(self.workers, 1)

    @field_validator("rate_limit_redis_url")
    @classmethod
    def _redis_url(cls, value: str) -> str:
        if value and not value.startswith(("redis://", "rediss://", "unix://")):
            raise ValueError("must start with redis://, rediss:// or unix://")
        return value


@lru_cache
def get_settings() -> Settings:
    return Settings()
