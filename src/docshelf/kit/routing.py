"""The route class every domain router uses: one unit of work per request, opened before the
dependencies run and committed after the endpoint returns its response, before anything is sent.
A plain wrapper costs less per request than a `yield` dependency, which FastAPI shields and
schedules separately."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from typing import Any, TypeVar

from fastapi import APIRouter, Request, Response
from fastapi.routing import APIRoute
from sqlalchemy.ext.asyncio import AsyncConnection
from starlette.routing import Match, Route, compile_path
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


def _path_suffix(path: str) -> str:
    """A route path's regular expression without its anchor at the start and its named groups:
    found at the end of a request path whatever prefix the route was included under."""
    regex = compile_path(path)[0].pattern
    return _NAMED_GROUP.sub("(?:", regex.removeprefix("^").removesuffix("$"))


_NAMED_GROUP = re.compile(r"\(\?P<[^>]+>")


class FilteredRoute(APIRoute):
    """An APIRoute that says cheaply when a request is not its own (see DomainRouter)."""

    _docshelf_suffix: re.Pattern[str] | None = None

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        # FastAPI asks every route of a router in turn; most are not the request's, and this
        # says so for less than FastAPI's own matching costs (see DomainRouter).
        suffix = self._docshelf_suffix
        if suffix is None:
            suffix = self._docshelf_suffix = re.compile(_path_suffix(self.path) + "$")
        if scope.get("type") == "http" and not suffix.search(scope["path"]):
            return Match.NONE, {}
        return super().matches(scope)


class UnitOfWorkRoute(FilteredRoute):
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


class DomainRouter(APIRouter):
    """An APIRouter that tells cheaply when a request cannot be one of its routes.

    FastAPI finds a request's route by asking each included router in turn, and each one
    tries its routes one by one (~6 us each): past 200 routes, a request for a router
    included late paid ~1 ms before its endpoint ran. Here one regular expression, the
    alternation of this router's route paths, answers "none of mine" first; whatever it lets
    through is matched by FastAPI as before. It only ever lets more through than FastAPI
    matches (the paths are searched for as a suffix, so the prefix the router is included
    under, whatever it is, never hides a route), so the route chosen, a 405 for a wrong
    method and the trailing-slash redirect are FastAPI's own."""

    _docshelf_paths_seen = -1
    _docshelf_paths: re.Pattern[str] | None = None

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        paths = self._docshelf_paths
        if self._docshelf_paths_seen != len(self.routes):
            paths = self._docshelf_paths = self._compile_paths()
            self._docshelf_paths_seen = len(self.routes)
        if paths is not None and scope.get("type") == "http" and not paths.search(scope["path"]):
            return Match.NONE, {}
        return super().matches(scope)

    def _compile_paths(self) -> re.Pattern[str] | None:
        parts = []
        for route in self.routes:
            if type(route) is not Route and not isinstance(route, APIRoute):
                return None  # a mount, a websocket or an included router: no filter
            parts.append(_path_suffix(route.path))
        return re.compile("(?:" + "|".join(parts) + ")$") if parts else None


def domain_router(**kwargs: Any) -> APIRouter:
    return DomainRouter(route_class=UnitOfWorkRoute, **kwargs)
