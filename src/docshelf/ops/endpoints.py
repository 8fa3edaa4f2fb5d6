"""Routes outside /v1 (they are not GitBook routes): health, readiness, metrics and the API
explorer. None takes an API token; /metrics has its own rule (ops.service.authorize_scrape)."""

from __future__ import annotations

from importlib.resources import files

from fastapi import APIRouter, FastAPI, Request
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse
from starlette.responses import Response
from starlette.staticfiles import StaticFiles

from docshelf import __version__
from docshelf.kit import metrics
from docshelf.kit.errors import NotFound
from docshelf.kit.http import JSON, ok
from docshelf.ops import home, service
from docshelf.ops.schemas import Health, Readiness

router = APIRouter(tags=["operations"])

ASSETS = "/docs/assets"
_HEALTHY = b'{"status":"ok"}'


@router.get(
    "/healthz",
    response_model=Health,
    summary="Liveness: the process answers (no database or storage is touched)",
)
async def healthz() -> Response:
    return Response(_HEALTHY, media_type="application/json")


@router.get(
    "/readyz",
    response_model=Readiness,
    summary="Readiness: the database answers, its migrations are at head, blobs can be written",
    description="`features` lists the features that need system libraries or programs (PDF "
    "export, single sign-on) and what each one lacks; a feature that is off does not make the "
    "server unready.",
    responses={503: {"description": "Not ready; the message names every failed check"}},
)
async def readyz(request: Request) -> JSON:
    state = request.app.state
    return ok(await service.readiness(state.engine, state.blobs, state.features))


@router.get(
    "/metrics",
    summary="Prometheus metrics (text exposition format)",
    description="Answers loopback callers that no proxy forwarded (no `Forwarded`, "
    "`X-Forwarded-For`, `X-Forwarded-Host` or `X-Real-IP`), or others with "
    "`DOCSHELF_METRICS_TOKEN` as a bearer token; 404 when `DOCSHELF_METRICS_ENABLED=false`.",
    response_class=Response,
    responses={
        200: {"content": {metrics.CONTENT_TYPE: {"schema": {"type": "string"}}}},
        403: {"description": "Not loopback or proxied, and no valid metrics bearer token"},
        404: {"description": "Metrics are turned off"},
    },
)
async def get_metrics(request: Request) -> Response:
    state = request.app.state
    service.authorize_scrape(
        state.settings,
        request.scope.get("client"),
        request.headers.get("authorization"),
        proxied=any(name in request.headers for name in service.PROXY_HEADERS),
    )
    return Response(await service.scrape(state.engine), media_type=metrics.CONTENT_TYPE)


def _answer(request: Request, title: str, body: dict[str, object]) -> Response:
    if home.wants_html(request.headers.get("accept")):
        return HTMLResponse(home.page(title, body))
    return ok(body)


@router.get("/", include_in_schema=False)
async def root(request: Request) -> Response:
    return _answer(request, "Docshelf", home.home(request.app.state.base_url, __version__))


# GitBook's `urls.app` addresses (its editor): Docshelf has none, and says where to go instead.
@router.get("/o/{rest:path}", include_in_schema=False)
@router.get("/s/{rest:path}", include_in_schema=False)
@router.get("/c/{rest:path}", include_in_schema=False)
async def app_address(request: Request) -> Response:
    location = home.api_location(request.url.path)
    if location is None:
        raise NotFound("Not found")
    body = home.app_page(request.app.state.base_url, location)
    return _answer(request, "Docshelf has no editor app", body)


def mount_ops(app: FastAPI) -> None:
    app.include_router(router)
    # The explorer's scripts and styles are the package data of fastapi-offline (Swagger UI 5,
    # which reads the OpenAPI 3.1 this app serves; Swagger UI 4 could not), so /docs works on a
    # machine without internet access.
    static = files("fastapi_offline") / "static"
    app.mount(ASSETS, StaticFiles(directory=str(static)), name="swagger-assets")

    @app.get("/docs", include_in_schema=False)
    async def docs() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url="/openapi.json",
            title=f"{app.title} - explorer",
            swagger_js_url=f"{ASSETS}/swagger-ui-bundle.js",
            swagger_css_url=f"{ASSETS}/swagger-ui.css",
            swagger_favicon_url=f"{ASSETS}/favicon.png",
        )
