"""The route class every domain router uses: one unit of work per request, opened before the
dependencies run and committed after the endpoint returns its response, before anything is sent.
A plain wrapper costs less per request than a `yield` dependency, which FastAPI shields and
schedules separately."""

from __future__ import annotations

import inspect
from collections.abc import (
    AsyncIterator,
    Callable,
    Collection,
    Coroutine,
    Iterable,
    Iterator,
    Mapping,
)
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

from fastapi import APIRouter, FastAPI, Request, Response
from fastapi.routing import APIRoute
from sqlalchemy.ext.asyncio import AsyncConnection
from starlette.routing import BaseRoute, Mount
from starlette.types import ASGIApp, Receive, Scope, Send

from docshelf.kit import metrics, sqlite_inline
from docshelf.kit.db import unit_of_work
from docshelf.kit.lru import SizedLRU
from docshelf.kit.prepared import Ahead

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


# -- the direct dispatch of the hottest reads -----------------------------------------------


@dataclass(frozen=True, slots=True)
class _Kept:
    """A 200 answer as sent (a kept answer is only ever a 200)."""

    seen: tuple[object, int, int]  # sqlite_inline.seen before it was read
    state: tuple[tuple[str, Any], ...]  # the replayed keys of the request's state
    headers: tuple[tuple[bytes, bytes], ...]
    body: bytes


# Beyond the body and headers: the key (a path and a token digest), the replayed state and the
# objects around them, so that many small answers are not counted as nearly free.
_KEPT_OVERHEAD = 512


def _kept_size(kept: _Kept) -> int:
    return len(kept.body) + sum(len(k) + len(v) for k, v in kept.headers) + _KEPT_OVERHEAD


_Ticket = tuple[tuple[str, str], tuple[object, int, int]]  # key, what the read connection saw


class Answers:
    """The kept routes' last answers per caller and path, sent again while the database is
    provably unchanged since they were read (SQLite only, `sqlite_inline.seen`).

    Why: on SQLite a read is a handful of indexed look-ups, so the request is mostly Python
    (authentication, the policy, the presenter, JSON); one `PRAGMA data_version` (~2 µs) says
    whether anything at all was committed since, by this process or any other. If not, the
    answer the same caller got for the same path is still the answer: the same token, rows,
    role and grants give the same bytes, for routes declared to read nothing else (no clock,
    no other header, nothing of the process that changes). Any commit anywhere, a revoked
    token or a removed member as much as an unrelated edit, makes every kept answer miss, so
    nothing the API promises can be outrun. Only 200 answers are kept: refusals are read
    every time. A commit that lands while an answer is read needs no second look: the reads
    that met it moved the connection's `data_version` past the `seen` the answer is kept
    under, so it can never match."""

    __slots__ = ("_kept", "caller", "replay")

    def __init__(
        self, caller: Callable[[Scope], str | None], capacity: int, replay: tuple[str, ...]
    ) -> None:
        self.caller = caller  # the caller's key (a digest of its token), None: keep nothing
        self.replay = replay  # what of the request's state a kept answer sets again
        self._kept: SizedLRU[tuple[str, str], _Kept] = SizedLRU(capacity, _kept_size)

    def look(self, scope: Scope, conn: AsyncConnection) -> tuple[_Ticket | None, _Kept | None]:
        """The kept answer for this request, or else the ticket to keep the one it reads."""
        caller = self.caller(scope)
        if caller is None:
            return None, None
        seen = sqlite_inline.seen(conn)
        if seen is None:
            return None, None
        key = (scope["path"], caller)
        kept = self._kept.get(key)
        if kept is not None and kept.seen == seen:
            return None, kept
        return (key, seen), None

    def keep(self, ticket: _Ticket, scope: Scope, response: Response) -> None:
        if (
            response.status_code != 200
            or response.background is not None
            or type(response).__call__ is not Response.__call__
        ):
            return
        state = scope["state"]
        replayed = tuple((name, state[name]) for name in self.replay if name in state)
        headers = tuple(response.raw_headers)
        self._kept.put(ticket[0], _Kept(ticket[1], replayed, headers, bytes(response.body)))

    @staticmethod
    async def send(kept: _Kept, scope: Scope, send: Send) -> None:
        metrics.ANSWERS_REUSED.inc()
        scope["state"].update(kept.state)
        # What Starlette's Response sends, with a fresh header list for the middlewares.
        await send({"type": "http.response.start", "status": 200, "headers": [*kept.headers]})
        await send({"type": "http.response.body", "body": kept.body})


@dataclass(frozen=True, slots=True)
class _Direct:
    """One GET route whose only input is its last path segment, with what FastAPI would solve
    for it: its dependencies, each a function of the request alone, in FastAPI's order."""

    route: BaseRoute  # what FastAPI puts in the scope (kit.observe labels by it)
    endpoint: Callable[..., Coroutine[Any, Any, Response]]
    param: str
    dependencies: tuple[tuple[str | None, Callable[[Request], Coroutine[Any, Any, Any]]], ...]
    # The caller's token and the route's first read as one statement (kit.prepared.Chain).
    ahead: Ahead | None = None
    answers: Answers | None = None

    async def serve(self, scope: Scope, receive: Receive, send: Send, value: str) -> None:
        if self.ahead is None:
            await self._serve(scope, receive, send, value)
        else:
            with self.ahead.plan(value):
                await self._serve(scope, receive, send, value)

    async def _serve(self, scope: Scope, receive: Receive, send: Send, value: str) -> None:
        scope["route"] = self.route
        scope["path_params"] = {self.param: value}
        request = Request(scope, receive)
        answers, ticket, kept = self.answers, None, None
        async with request_unit_of_work(request) as conn:
            if answers is not None:
                ticket, kept = answers.look(scope, conn)
            if kept is None:
                arguments: dict[str, Any] = {self.param: value}
                for name, call in self.dependencies:
                    result = await call(request)
                    if name is not None:
                        arguments[name] = result
                response = await self.endpoint(**arguments)
                if answers is not None and ticket is not None:
                    answers.keep(ticket, scope, response)
        if kept is not None:
            await Answers.send(kept, scope, send)
        else:
            await response(scope, receive, send)


class DirectGets:
    """Dispatches a few hot GET routes straight to their endpoint, ahead of FastAPI's routing.

    Why: FastAPI matches a request against ~30 included routers and then solves the route's
    dependency graph generically (cache keys, scopes, parameter validation); for a GET whose
    whole input is one path segment and a token this was a third of the request's CPU time
    (ARCHITECTURE.md, "What a read costs"). For the routes handed to `install_direct_gets`
    the dispatch is a dictionary look-up on the path without its last segment, then the same
    request unit of work, the same dependency functions in the same order, the same endpoint
    (so the same service, policy and presenter) and the same response object. It sits where
    FastAPI's router sits, inside every middleware and inside the exception middleware, so
    refusals are answered by the same handlers. Anything else (another method, a query
    string, a root path, a dependency override) goes to FastAPI's routing unchanged; the
    routes stay in FastAPI's table (OpenAPI, the route-table tests). `tests/test_direct_gets.py`
    compares both paths byte for byte."""

    def __init__(self, app: ASGIApp, fastapi_app: FastAPI, routes: dict[str, _Direct]) -> None:
        self.app = app
        self.fastapi_app = fastapi_app
        self.routes = routes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] == "http"
            and scope["method"] == "GET"
            and not scope["query_string"]
            and not scope.get("root_path")
            and not self.fastapi_app.dependency_overrides
        ):
            path: str = scope["path"]
            cut = path.rfind("/") + 1
            direct = self.routes.get(path[:cut])
            if direct is not None and cut < len(path):
                await direct.serve(scope, receive, send, path[cut:])
                return
        await self.app(scope, receive, send)


def _route_contexts(routes: Iterable[BaseRoute]) -> Iterator[Any]:
    """Every route of the app as FastAPI matches it: included routers expanded into their
    effective routes (full path, merged dependencies)."""
    for route in routes:
        contexts = getattr(route, "effective_route_contexts", None)
        if contexts is not None:
            yield from contexts()
        else:
            yield route


def install_direct_gets(
    app: FastAPI,
    endpoints: Mapping[Callable[..., Any], Ahead | None],
    *,
    keep: Collection[Callable[..., Any]] = (),
    caller: Callable[[Scope], str | None] | None = None,
    replay: tuple[str, ...] = (),
    answer_bytes: int = 0,
) -> None:
    """Puts `DirectGets` in front of the app's router for these endpoints, each with the chain
    that reads the caller and its first statement in one round trip, if any. Called once every
    route is mounted; refuses (at start-up) any route it could not serve exactly as FastAPI
    would, and any other route FastAPI could match for the same paths. The answers of the
    routes in `keep` (whose answers depend on the caller `caller` names, the path and the
    database alone) are kept within `answer_bytes` and sent again while unchanged, setting
    the `replay` keys of the request's state as they were (`Answers`)."""
    if not set(keep) <= set(endpoints):
        raise RuntimeError("a kept GET must be a direct GET")
    answers = None
    if keep and caller is not None and answer_bytes > 0:
        answers = Answers(caller, answer_bytes, replay)
    wanted = set(endpoints)
    contexts = list(_route_contexts(app.router.routes))
    table: dict[str, _Direct] = {}
    for context in contexts:
        if getattr(context, "endpoint", None) not in wanted:
            continue
        kept = answers if context.endpoint in keep else None
        direct = _direct(context, endpoints[context.endpoint], kept)
        prefix = context.path.rsplit("/", 1)[0] + "/"
        table[prefix] = direct
        wanted.discard(context.endpoint)
    if wanted:
        raise RuntimeError(f"no GET route for {sorted(e.__name__ for e in wanted)}")
    for context in contexts:
        path = str(getattr(context, "path", ""))
        if isinstance(context, Mount) and any(p.startswith(path + "/") for p in table):
            raise RuntimeError(f"{path} mounts over a direct GET route")
        if getattr(context, "endpoint", None) in {d.endpoint for d in table.values()}:
            continue
        prefix = path.rsplit("/", 1)[0] + "/"
        methods = getattr(context, "methods", None) or set()
        if prefix in table and "GET" in methods:
            raise RuntimeError(f"GET {path} would be shadowed by a direct GET route")
    app.router.middleware_stack = DirectGets(app.router.middleware_stack, app, table)


def _direct(context: Any, ahead: Ahead | None, answers: Answers | None) -> _Direct:
    dependant = context.dependant
    path = str(context.path)
    last = path.rsplit("/", 1)[1]
    methods = set(getattr(context, "methods", None) or ())
    params = dependant.path_params
    simple = (
        methods == {"GET"}
        and len(params) == 1
        and last == "{" + params[0].name + "}"
        and path.count("{") == 1
        and params[0].field_info.annotation is str
        and not params[0].field_info.metadata
        and all(not q.field_info.is_required() for q in dependant.query_params)
        and not (dependant.header_params or dependant.cookie_params or dependant.body_params)
        and not dependant.request_param_name
        and inspect.iscoroutinefunction(dependant.call)
    )
    dependencies = []
    for sub in dependant.dependencies:
        simple = simple and (
            inspect.iscoroutinefunction(sub.call)
            and sub.request_param_name is not None
            and not sub.dependencies
            and not (sub.path_params or sub.query_params or sub.header_params)
            and not (sub.cookie_params or sub.body_params)
            and list(inspect.signature(sub.call).parameters) == [sub.request_param_name]
        )
        dependencies.append((sub.name, sub.call))
    if not simple:
        raise RuntimeError(f"GET {path} is not a route DirectGets can serve exactly")
    return _Direct(
        route=getattr(context, "original_route", context),
        endpoint=dependant.call,
        param=params[0].name,
        dependencies=tuple(dependencies),
        ahead=ahead,
        answers=answers,
    )
