"""`docshelf serve`: migrate, bootstrap, then hand the app to the ASGI server."""

from __future__ import annotations

import asyncio
import errno
import logging
import multiprocessing
import os
import socket

import click

from docshelf import datadir, features
from docshelf.bootstrap import bootstrap_if_empty
from docshelf.cli.worker import start_worker_process, stop_worker_process
from docshelf.config import Settings
from docshelf.kit import logs
from docshelf.kit.db import create_engine
from docshelf.kit.lifeline import SERVE_PID
from docshelf.kit.migrate import upgrade


def _bootstrap(settings: Settings) -> None:
    async def run() -> None:
        engine = create_engine(settings)
        try:
            done = await bootstrap_if_empty(engine, settings.data_dir)
        finally:
            await engine.dispose()
        if done is not None:
            base = settings.resolved_base_url
            click.echo(
                "\nFirst start: created the admin user "
                f"{done.email} and the organization {done.organization_id}.\n"
                f"Their API token is in {done.token_file} (mode 0600). Try:\n\n"
                f'  curl -H "Authorization: Bearer $(cat {done.token_file})" {base}/v1/orgs\n'
            )

    asyncio.run(run())


def refuse_port_in_use(host: str, port: int) -> None:
    """Exits when something already listens on host:port. Granian binds with SO_REUSEPORT, so
    a second server on the same port would start and silently share the connections with the
    first; this probe binds without it, which the kernel refuses while anyone listens there.
    SO_REUSEADDR lets it past the closed connections a stopped server leaves in TIME_WAIT."""
    try:
        info = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise click.ClickException(f"Cannot listen on {host}: {exc.strerror}") from None
    family, kind, proto, _, address = info[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE:
                raise
            raise click.ClickException(
                f"Port {port} on {host} is already in use (another Docshelf, or another "
                "program, is listening there). Stop it, or choose another port with --port "
                "or DOCSHELF_PORT."
            ) from None


def run_server(settings: Settings) -> None:
    logs.configure(settings.log_level, settings.log_format)
    refuse_port_in_use(settings.host, settings.port)
    datadir.prepare(settings)
    for warning in datadir.warnings(settings):
        logging.getLogger("docshelf").warning(warning)
    upgrade(settings)
    _bootstrap(settings)
    notice = features.startup_notice(features.detect())
    if notice is not None:
        logging.getLogger("docshelf").warning(notice)
    click.echo(f"Docshelf serving on http://{settings.host}:{settings.port} ({settings.server})")
    worker = start_worker_process(settings) if settings.run_jobs_in_server else None
    try:
        _serve(settings)
    finally:
        if worker is not None:
            stop_worker_process(worker)


def _serve(settings: Settings) -> None:
    # The API processes the server starts know `serve` by its pid and end with it, even when it
    # is killed (app.factory).
    os.environ[SERVE_PID] = str(os.getpid())
    if settings.server == "granian":
        from granian.constants import Interfaces
        from granian.log import LogLevels
        from granian.server import Server

        # Workers start as fresh interpreters that import only the app, not as forks of this
        # process, which has run the migrations (Alembic, Mako) and the bootstrap: a fork
        # would carry all of that in every API process (~30 MB of its resident size).
        multiprocessing.set_start_method("spawn", force=True)
        # Two malloc arenas: the server's threads would otherwise each get one, whose free
        # space is never given back (glibc reads this when a process starts, so it is set for
        # the server's workers and their offload pools).
        os.environ.setdefault("MALLOC_ARENA_MAX", "2")
        Server(
            "docshelf.app:factory",
            address=settings.host,
            port=settings.port,
            interface=Interfaces.ASGI,
            factory=True,
            workers=settings.workers,
            log_level=LogLevels(settings.log_level),
            # Granian's own lines go through the root handler logs.configure set up (JSON or
            # text, stderr) instead of its text handler on stdout.
            log_dictconfig={"loggers": {"_granian": {"handlers": [], "propagate": True}}},
        ).serve()
    else:
        import uvicorn

        uvicorn.run(
            "docshelf.app:factory",
            factory=True,
            host=settings.host,
            port=settings.port,
            workers=settings.workers,
            log_level=settings.log_level,
            # Our own access line (kit/observe.py) replaces uvicorn's, and its loggers go
            # through the root handler logs.configure set up, JSON or text alike.
            access_log=False,
            log_config=None,
        )
