"""Git's smart HTTP protocol for a space, outside /v1: `git clone
<base>/git/<organization>/<space>.git`. Authentication is HTTP basic with an API token as the
password (git's credential prompt); the access rules are the API's. Under /v1 (`api_router`),
a space's link to an outside repository (remote.py), a Docshelf extension."""

from __future__ import annotations

import zlib

from fastapi import APIRouter, FastAPI, Request, Response
from fastapi.responses import StreamingResponse

from docshelf.auth.context import Context, StagedContext
from docshelf.gitsync import remote, service
from docshelf.gitsync.schemas import GitSyncOut, LinkRemote
from docshelf.kit.errors import BadRequest, DocshelfError, PayloadTooLarge, Unauthorized
from docshelf.kit.http import JSON, empty, ok
from docshelf.kit.routing import domain_router, staged

router = APIRouter(prefix="/git", include_in_schema=False)
api_router = domain_router(tags=["git-sync"])
_LINK = "/spaces/{spaceId}/git-sync"


@api_router.get(_LINK, response_model=GitSyncOut, summary="A space's git remote and sync status")
async def get_git_sync(spaceId: str, ctx: Context) -> JSON:
    return ok(await remote.get_link(ctx, spaceId))


@api_router.put(_LINK, response_model=GitSyncOut, summary="Link a space to a git remote")
@staged
async def link_git_remote(spaceId: str, body: LinkRemote, st: StagedContext) -> JSON:
    return ok(await remote.link(st, spaceId, body))


@api_router.delete(_LINK, status_code=204, summary="Unlink a space from its git remote")
async def unlink_git_remote(spaceId: str, ctx: Context) -> Response:
    await remote.unlink(ctx, spaceId)
    return empty(204)


@api_router.post(
    f"{_LINK}/pull",
    response_model=GitSyncOut,
    status_code=202,
    summary="Pull from the git remote now (and push what the space has that it lacks)",
)
async def pull_git_remote(spaceId: str, ctx: Context) -> JSON:
    return ok(await remote.request_sync(ctx, spaceId), 202)


_NO_CACHE = {"Cache-Control": "no-cache, max-age=0, must-revalidate", "Expires": "0"}


def _space(name: str) -> str:
    return name.removesuffix(".git")


def _refusal(exc: DocshelfError) -> Response:
    headers = dict(exc.headers or {})
    if isinstance(exc, Unauthorized):
        # Basic, so git asks for credentials (a token as the password).
        headers["WWW-Authenticate"] = 'Basic realm="Docshelf", charset="UTF-8"'
    return Response(
        exc.message + "\n", status_code=exc.status, headers=headers, media_type="text/plain"
    )


async def _body(request: Request, cap: int) -> bytes:
    body = await request.body()
    encoding = request.headers.get("content-encoding", "").lower()
    if encoding not in ("gzip", "x-gzip"):
        return body
    # Inflated to the same bound as a plain body: a few KiB of gzip can hold gigabytes, and
    # this runs before the caller is known.
    inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        data = inflate.decompress(body, cap + 1)
    except zlib.error:
        raise BadRequest("The request body is not valid gzip") from None
    if len(data) > cap or inflate.unconsumed_tail:
        raise PayloadTooLarge(f"Request body exceeds {cap} bytes once inflated")
    if not inflate.eof or inflate.unused_data:
        raise BadRequest("The request body is not valid gzip")
    return data


@router.get("/{org_id}/{space_name}/info/refs")
async def info_refs(request: Request, org_id: str, space_name: str) -> Response:
    wanted = request.query_params.get("service")
    if wanted not in (service.UPLOAD, service.RECEIVE):
        return Response("Only git's smart HTTP protocol is served\n", status_code=403)
    state = request.app.state
    try:
        served = await service.read(
            state.engine,
            state,
            state.base_url,
            request.headers.get("authorization"),
            org_id,
            _space(space_name),
            wanted,
        )
    except DocshelfError as exc:
        return _refusal(exc)
    return Response(
        service.advertisement(served.repo, wanted),
        media_type=f"application/x-{wanted}-advertisement",
        headers=_NO_CACHE,
    )


@router.post("/{org_id}/{space_name}/git-upload-pack")
async def upload_pack(request: Request, org_id: str, space_name: str) -> Response:
    state = request.app.state
    try:
        body = await _body(request, state.settings.max_body_bytes)
        served = await service.read(
            state.engine,
            state,
            state.base_url,
            request.headers.get("authorization"),
            org_id,
            _space(space_name),
            service.UPLOAD,
        )
    except DocshelfError as exc:
        return _refusal(exc)
    return StreamingResponse(
        service.upload(served, body),
        media_type=f"application/x-{service.UPLOAD}-result",
        headers=_NO_CACHE,
    )


@router.post("/{org_id}/{space_name}/git-receive-pack")
async def receive_pack(request: Request, org_id: str, space_name: str) -> Response:
    state = request.app.state
    authorization = request.headers.get("authorization")
    try:
        body = await _body(request, state.settings.git_push_max_bytes)
        served = await service.read(
            state.engine,
            state,
            state.base_url,
            authorization,
            org_id,
            _space(space_name),
            service.RECEIVE,
        )
    except DocshelfError as exc:
        return _refusal(exc)
    result = await service.receive(
        state.engine, state, state.base_url, authorization, org_id, _space(space_name), served, body
    )
    return Response(result, media_type=f"application/x-{service.RECEIVE}-result", headers=_NO_CACHE)


@router.post("/hooks/{space_id}/{secret}")
async def pull_hook(request: Request, space_id: str, secret: str) -> Response:
    """A git host's webhook (any event, any body): the linked space pulls soon."""
    if not await remote.hooked(request.app.state.engine, space_id, secret):
        return Response("Not found\n", status_code=404, media_type="text/plain")
    return Response("A sync is queued\n", status_code=202, media_type="text/plain")


def mount_git(app: FastAPI) -> None:
    app.include_router(router)
