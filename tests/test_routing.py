"""kit.routing's DomainRouter and UnitOfWorkRoute say early when a request cannot be one of their
routes; FastAPI still chooses the route. The same requests must get the very same answers from
a plain APIRouter: the route, its parameters, a 405 for a wrong method, a 404 for no route and
the trailing-slash redirect, whatever prefix the router is included under. (Every route of the
real app is reached in test_access_matrix's unauthenticated matrix.)"""

from __future__ import annotations

from collections.abc import Callable

import httpx
from fastapi import APIRouter, FastAPI

from docshelf.kit.routing import DomainRouter, FilteredRoute


def _router(router: APIRouter) -> APIRouter:
    @router.get("/things/{thingId}")
    async def thing(thingId: str) -> dict[str, str]:
        return {"route": "thing", "id": thingId}

    @router.get("/things/{thingId}/parts")
    async def parts(thingId: str) -> dict[str, str]:
        return {"route": "parts", "id": thingId}

    @router.post("/things")
    async def make() -> dict[str, str]:
        return {"route": "make"}

    @router.get("/files/{rest:path}")
    async def files(rest: str) -> dict[str, str]:
        return {"route": "files", "rest": rest}

    @router.get("/count/{n:int}/")
    async def count(n: int) -> dict[str, int]:
        return {"n": n}

    return router


def _app(make: Callable[[], APIRouter]) -> FastAPI:
    app = FastAPI()
    other = APIRouter()

    @other.get("/other/{x}")
    async def other_route(x: str) -> dict[str, str]:
        return {"route": "other", "x": x}

    app.include_router(_router(make()), prefix="/v1")
    app.include_router(_router(make()), prefix="/deep/er")
    app.include_router(other, prefix="/v1")
    return app


PATHS = [
    ("GET", "/v1/things/a1"),
    ("GET", "/v1/things/a1/parts"),
    ("GET", "/v1/things/a1/parts/"),
    ("GET", "/v1/things"),
    ("POST", "/v1/things"),
    ("DELETE", "/v1/things/a1"),
    ("GET", "/v1/files/a/b/c.txt"),
    ("GET", "/v1/files/"),
    ("GET", "/v1/count/12/"),
    ("GET", "/v1/count/12"),
    ("GET", "/v1/count/x/"),
    ("GET", "/deep/er/things/z/parts"),
    ("GET", "/deep/er/files/q"),
    ("GET", "/v1/other/o"),
    ("GET", "/things/a1"),
    ("GET", "/v2/things/a1"),
    ("GET", "/v1/things/a1/parts/more"),
    ("GET", "/nothing"),
]


async def _answers(app: FastAPI) -> list[tuple[str, str, int, str, str | None]]:
    out = []
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
        for method, path in PATHS:
            r = await client.request(method, path)
            out.append((method, path, r.status_code, r.text, r.headers.get("location")))
    return out


async def test_domain_router_answers_exactly_as_a_plain_router() -> None:
    plain = await _answers(_app(APIRouter))
    domain = await _answers(_app(lambda: DomainRouter(route_class=FilteredRoute)))
    assert domain == plain
    # And the requests reached what they should (the comparison is not between two 404s).
    statuses = {(m, p): s for m, p, s, _, _ in domain}
    assert statuses[("GET", "/v1/things/a1/parts")] == 200
    assert statuses[("GET", "/deep/er/files/q")] == 200
    assert statuses[("DELETE", "/v1/things/a1")] == 405
    assert statuses[("GET", "/v1/count/12")] == 307
    assert statuses[("GET", "/v2/things/a1")] == 404


def test_every_route_of_the_app_is_a_domain_route(app: FastAPI) -> None:
    # The filters are only worth their place if the API's routers use them.
    from docshelf import api

    for router in (*api.AUTHENTICATED_ROUTERS, *api.PUBLIC_ROUTERS):
        assert isinstance(router, DomainRouter)
        assert all(isinstance(r, FilteredRoute) for r in router.routes)
