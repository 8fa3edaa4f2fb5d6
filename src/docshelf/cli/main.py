"""The `docshelf` console script. Commands call services inside one unit of work each; they
act on the database the settings (DOCSHELF_* variables and flags) name, exactly as `serve`."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import click
from sqlalchemy.ext.asyncio import AsyncConnection

from docshelf.config import Settings, get_settings
from docshelf.kit import logs
from docshelf.kit.db import create_engine, unit_of_work
from docshelf.kit.errors import DocshelfError
from docshelf.kit.migrate import upgrade

T = TypeVar("T")


def _settings(data_dir: Path | None = None) -> Settings:
    settings = get_settings()
    if data_dir is not None:
        settings = settings.model_copy(update={"data_dir": data_dir})
        get_settings.cache_clear()
        os.environ["DOCSHELF_DATA_DIR"] = str(data_dir)
    return settings


def _migrate(settings: Settings) -> None:
    """Every command that opens the database creates what is missing privately first."""
    from docshelf import datadir

    datadir.prepare(settings)
    upgrade(settings)


def _in_transaction(settings: Settings, work: Callable[[AsyncConnection], Awaitable[T]]) -> T:
    from docshelf import wiring  # noqa: F401 - services announce to their signals' receivers

    async def run() -> T:
        engine = create_engine(settings)
        try:
            async with unit_of_work(engine) as conn:
                return await work(conn)
        finally:
            await engine.dispose()

    try:
        return asyncio.run(run())
    except DocshelfError as exc:
        raise click.ClickException(exc.message) from exc


@click.group()
@click.option(
    "--data-dir",
    type=click.Path(path_type=Path),
    default=None,
    envvar="DOCSHELF_DATA_DIR",
    help="Data directory (SQLite database, blobs, admin token).",
)
@click.pass_context
def main(ctx: click.Context, data_dir: Path | None) -> None:
    """Docshelf: a self-hosted docs platform with a GitBook-compatible API."""
    ctx.obj = _settings(data_dir)


@main.command()
@click.option("--host", envvar="DOCSHELF_HOST", default=None)
@click.option("--port", envvar="DOCSHELF_PORT", type=int, default=None)
@click.option(
    "--data-dir", type=click.Path(path_type=Path), envvar="DOCSHELF_DATA_DIR", default=None
)
@click.pass_obj
def serve(settings: Settings, host: str | None, port: int | None, data_dir: Path | None) -> None:
    """Migrate, bootstrap an admin on first start, and serve the API."""
    if settings.workers > 1 or os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        _multiprocess_metrics()
    from docshelf.cli.serve import run_server

    updates: dict[str, Any] = {}
    if host:
        updates["host"] = host
    if port:
        updates["port"] = port
    if data_dir:
        updates["data_dir"] = data_dir
    if updates:
        settings = settings.model_copy(update=updates)
        for key, value in updates.items():
            os.environ[f"DOCSHELF_{key.upper()}"] = str(value)
        get_settings.cache_clear()
    run_server(settings)


def _multiprocess_metrics() -> None:
    """Several API processes: prometheus-client's multiprocess mode, whose value files live in a
    fresh directory named before any process imports the library (it reads it on import)."""
    import atexit
    import shutil
    import tempfile

    given = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if given:
        # The operator's directory: the library's value files (*.db) of earlier processes are
        # removed, since they would still count; nothing else in it is touched.
        path = Path(given)
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
        for stale in path.glob("*.db"):
            stale.unlink(missing_ok=True)
    else:
        path = Path(tempfile.mkdtemp(prefix="docshelf-metrics-"))
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(path)
        atexit.register(shutil.rmtree, path, ignore_errors=True)


@main.command()
@click.pass_obj
def worker(settings: Settings) -> None:
    """Run the job runner on its own (set DOCSHELF_RUN_JOBS_IN_SERVER=false on the API)."""
    from docshelf.cli.worker import run_worker

    logs.configure(settings.log_level, settings.log_format)
    _migrate(settings)
    run_worker(settings)


@main.group()
def jobs() -> None:
    """Background jobs."""


@jobs.command("run-now")
@click.argument("kind")
@click.pass_obj
def jobs_run_now(settings: Settings, kind: str) -> None:
    """Make the queued jobs of KIND due now, for the running worker to take: a scheduled
    sweep (maintenance.purge, openapi.refresh...), or space.purge to remove deleted spaces
    before their 7 days are over."""
    from docshelf import tasks  # noqa: F401 - registers every job kind
    from docshelf.worker import registry
    from docshelf.worker.queue import make_due

    if registry.kind_of(kind) is None:
        raise click.ClickException(
            f"No job kind {kind!r}; the kinds are: {', '.join(registry.kinds())}"
        )
    scheduled = any(s.kind == kind for s in registry.schedules())
    _migrate(settings)
    dedupe = registry.schedule_key(kind) if scheduled else None
    moved = _in_transaction(settings, lambda conn: make_due(conn, kind, dedupe))
    click.echo(f"{moved} {kind} job{'' if moved == 1 else 's'} due now")


@main.group()
def db() -> None:
    """Database maintenance."""


@db.command("upgrade")
@click.pass_obj
def db_upgrade(settings: Settings) -> None:
    """Apply pending migrations."""
    _migrate(settings)
    click.echo("Database is up to date.")


@main.group()
def user() -> None:
    """Users."""


@user.command("create")
@click.option("--email", required=True)
@click.option("--name", default=None)
@click.pass_obj
def user_create(settings: Settings, email: str, name: str | None) -> None:
    """Create a user."""
    from docshelf.user.service import create_user

    _migrate(settings)
    user_id = _in_transaction(settings, lambda conn: create_user(conn, email=email, name=name))
    click.echo(user_id)


@main.group()
def org() -> None:
    """Organizations."""


@org.command("create")
@click.option("--title", required=True)
@click.option("--owner", required=True, help="E-mail of the user who becomes its admin.")
@click.pass_obj
def org_create(settings: Settings, title: str, owner: str) -> None:
    """Create an organization owned by an existing user."""
    from pydantic import ValidationError

    from docshelf.organization.schemas import CreateOrganization
    from docshelf.organization.service import create_organization
    from docshelf.user.service import require_by_email

    try:
        body = CreateOrganization(title=title)
    except ValidationError as exc:
        raise click.ClickException(f"Invalid title: {exc.errors()[0]['msg']}") from exc
    _migrate(settings)

    async def work(conn: AsyncConnection) -> str:
        return await create_organization(conn, await require_by_email(conn, owner), body)

    click.echo(_in_transaction(settings, work))


@org.command("verify-domain")
@click.argument("org_id")
@click.argument("domain")
@click.pass_obj
def org_verify_domain(settings: Settings, org_id: str, domain: str) -> None:
    """Vouch that the organization owns an e-mail DOMAIN it lists: its SSO logins may then
    reach existing accounts at that domain (see README, "Single sign-on")."""
    from docshelf.organization.service import verify_email_domain

    _migrate(settings)
    _in_transaction(settings, lambda conn: verify_email_domain(conn, org_id, domain))
    click.echo(f"{domain.strip().lower()} is verified for organization {org_id}.")


@org.command("unverify-domain")
@click.argument("org_id")
@click.argument("domain")
@click.pass_obj
def org_unverify_domain(settings: Settings, org_id: str, domain: str) -> None:
    """Withdraw a domain's verification; identities already linked stay linked."""
    from docshelf.organization.service import unverify_email_domain

    _migrate(settings)
    _in_transaction(settings, lambda conn: unverify_email_domain(conn, org_id, domain))
    click.echo(f"{domain.strip().lower()} is no longer verified for organization {org_id}.")


@main.group()
def token() -> None:
    """API tokens."""


@token.command("create")
@click.option("--user", "email", required=True, help="E-mail of the token's user.")
@click.pass_obj
def token_create(settings: Settings, email: str) -> None:
    """Create an API token; it is printed once, alone on the last line."""
    from docshelf.auth.service import create_token
    from docshelf.user.service import require_by_email

    _migrate(settings)

    async def work(conn: AsyncConnection) -> str:
        return await create_token(conn, await require_by_email(conn, email))

    value = _in_transaction(settings, work)
    click.echo(f"API token for {email.strip().lower()} (shown once; store it now):")
    click.echo(value)


@token.command("revoke")
@click.argument("value")
@click.pass_obj
def token_revoke(settings: Settings, value: str) -> None:
    """Revoke an API token at once."""
    from docshelf.auth.service import revoke_token

    _migrate(settings)
    _in_transaction(settings, lambda conn: revoke_token(conn, value.strip()))
    click.echo("Token revoked.")


@main.command("import")
@click.argument("space_id")
@click.argument("source")
@click.option(
    "--as",
    "email",
    default=None,
    help="E-mail of the user recorded as the revision's author (default: none).",
)
@click.pass_obj
def import_command(settings: Settings, space_id: str, source: str, email: str | None) -> None:
    """Import SOURCE into a space's main content as one new revision.

    SOURCE is a local folder or .zip of markdown files and images (structured by SUMMARY.md, or
    by folders and README.md files), a .md or .html file, or an http(s) URL of one of those
    (fetched through the guarded fetcher)."""
    from docshelf.blobs import open_blob_store
    from docshelf.imports import cli as import_cli
    from docshelf.imports import service as import_service
    from docshelf.user.service import require_by_email

    _migrate(settings)
    store = open_blob_store(settings)
    try:
        if import_cli.is_url(source):
            imported = asyncio.run(import_cli.load_url(settings, source))
        else:
            imported = import_cli.load_local(source)
    except DocshelfError as exc:
        raise click.ClickException(exc.message) from exc
    counts = import_service.report(imported)["skippedCounts"]
    click.echo(f"Detected: {imported.detected}")
    click.echo(
        f"{len(imported.pages)} pages and {len(imported.files)} files to import: "
        f"{imported.imported} of {imported.total} resources; "
        + ", ".join(f"{n} {kind}" for kind, n in counts.items())
    )
    for skipped in imported.skipped:
        click.echo(f"{skipped.kind} {skipped.path}: {skipped.reason}")

    with click.progressbar(length=len(imported.pages), label="Importing pages") as bar:

        async def work(conn: AsyncConnection) -> str:
            await import_cli.require_importable(conn, space_id)
            author = await require_by_email(conn, email) if email else None
            return await import_service.apply(
                conn, space_id, imported, store=store, author_id=author, progress=bar.update
            )

        revision = _in_transaction(settings, work)
    click.echo(f"Imported into revision {revision}")


@main.command()
@click.argument("path", type=click.Path(path_type=Path))
@click.pass_obj
def backup(settings: Settings, path: Path) -> None:
    """Copy the database and the file bytes to PATH (a new or empty directory), with a
    manifest of SHA-256 checksums; safe while the server runs."""
    from docshelf.ops.backup import BackupError
    from docshelf.ops.backup import backup as run_backup

    try:
        done = run_backup(settings, path)
    except BackupError as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(f"Backed up the {done.engine} database and {done.blobs} blobs to {path}")


@main.command()
@click.argument("path", type=click.Path(path_type=Path, exists=True, file_okay=False))
@click.pass_obj
def restore(settings: Settings, path: Path) -> None:
    """Restore a backup from PATH into an empty data directory or database (checksums are
    verified first); `docshelf serve` then migrates it if it is older."""
    from docshelf.ops.backup import BackupError
    from docshelf.ops.backup import restore as run_restore

    try:
        done = run_restore(settings, path)
    except BackupError as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(f"Restored the {done.engine} database and {done.blobs} blobs from {path}")


@main.command()
@click.option("--port", envvar="DOCSHELF_PORT", type=int, default=None)
@click.option("--timeout", type=float, default=3.0, show_default=True)
@click.pass_obj
def healthcheck(settings: Settings, port: int | None, timeout: float) -> None:
    """Exit 0 if the server on this machine answers /healthz (the container's HEALTHCHECK:
    the slim image has no curl)."""
    import httpx

    url = f"http://127.0.0.1:{port or settings.port}/healthz"
    try:
        ok = httpx.get(url, timeout=timeout).status_code == 200
    except httpx.HTTPError:
        ok = False
    if not ok:
        raise click.ClickException(f"{url} did not answer 200")
    click.echo("ok")
