"""The route class every domain router uses: one unit of work per request, opened before the
dependencies run and committed after the endpoint returns its response, before anything is sent.
A plain wrapper costs less per request than a `yield` dependency, which FastAPI shields and
schedules separately."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from typing import Any, TypeVar

from fastapi import APIRouter, Request, Response
from fastapi.routing import APIRoute
from sqlalchemy.ext.asyncio import AsyncConnection
from starlette.types import Scope

from docshelf.kit.db import unit_of_work

_READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


F = TypeVar("F", bound=Callable[..., Any])


def staged(endpoint: F) -> F:
    """Marks a writing endpoint that fetches or converts before it writes. Its route opens no
    unit of work: the service opens a short read, then one short write transaction, through
    `kit.context.Staged`, so no lock is held while it waits on the network or the CPU."""
    endpoint.__docshelf_staged__ = True  # type: ignore[attr-defined]
    return endpoint


def reads_published(endpoint: F) -> F:
    """Marks a route that reads published content: the only routes a site content token
    (auth.site_token) may call. What it may read there is still its policy's decision."""
    endpoint.__docshelf_reads_published__ = True  # type: ignore[attr-defined]
    return endpoint


def route_reads_published(scope: Scope) -> bool:
    endpoint = getattr(scope.get("route"), "endpoint", None)
    return bool(getattr(endpoint, "__docshelf_reads_published__", False))


class UnitOfWorkRoute(APIRoute):
    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()
        if getattr(self.endpoint, "__docshelf_staged__", False):
            return handler

        async def in_unit_of_work(request: Request) -> Response:
            async with request_unit_of_work(request):
                # Committed on leaving the block: a failed commit raises, so no success
                # response can go out for work that was not kept.
                return await handler(request)

        return in_unit_of_work


@asynccontextmanager
async def request_unit_of_work(request: Request) -> AsyncIterator[AsyncConnection]:
    """The request's unit of work, kept in its state for the dependencies (kit.context)."""
    engine = request.app.state.engine
    async with unit_of_work(engine, write=request.method not in _READ_METHODS) as conn:
        request.state.conn = conn
        yield conn


def domain_router(**kwargs: Any) -> APIRouter:
    return APIRouter(route_class=UnitOfWorkRoute, **kwargs)
