from __future__ import annotations

from starlette.responses import Response

from docshelf.auth.context import Context
from docshelf.kit.http import JSON, empty, ok
from docshelf.kit.pagination import Paging
from docshelf.kit.routing import domain_router
from docshelf.openapi_spec import service
from docshelf.openapi_spec.schemas import (
    CreateOpenAPISpec,
    OpenAPISpecContentOut,
    OpenAPISpecList,
    OpenAPISpecOut,
    OpenAPISpecVersionList,
    OpenAPISpecVersionOut,
    PutOpenAPISpec,
)

router = domain_router(tags=["openapi"])
_SPEC = "/orgs/{organizationId}/openapi/{specSlug}"


@router.get(
    "/orgs/{organizationId}/openapi", response_model=OpenAPISpecList, summary="List OpenAPI specs"
)
async def list_openapi_specs(organizationId: str, ctx: Context, paging: Paging) -> JSON:
    return ok(await service.list_specs(ctx, organizationId, paging))


@router.post(
    "/orgs/{organizationId}/openapi",
    response_model=OpenAPISpecOut,
    status_code=201,
    summary="Create an OpenAPI spec (processed by a job)",
)
async def create_openapi_spec(organizationId: str, body: CreateOpenAPISpec, ctx: Context) -> JSON:
    created = await service.create_spec(ctx, organizationId, body)
    return ok(created, 201, headers={"Location": created["urls"]["location"]})


@router.get(_SPEC, response_model=OpenAPISpecOut, summary="OpenAPI spec")
async def get_openapi_spec(organizationId: str, specSlug: str, ctx: Context) -> JSON:
    return ok(await service.get_spec(ctx, organizationId, specSlug))


@router.put(
    _SPEC,
    response_model=OpenAPISpecOut,
    responses={201: {"model": OpenAPISpecOut, "description": "Created"}},
    summary="Create an OpenAPI spec or replace its source (processed again by a job)",
)
async def put_openapi_spec(
    organizationId: str, specSlug: str, body: PutOpenAPISpec, ctx: Context
) -> JSON:
    spec, created = await service.put_spec(ctx, organizationId, specSlug, body.source)
    if created:
        return ok(spec, 201, headers={"Location": spec["urls"]["location"]})
    return ok(spec)


@router.delete(_SPEC, status_code=205, summary="Delete an OpenAPI spec and its versions")
async def delete_openapi_spec(organizationId: str, specSlug: str, ctx: Context) -> Response:
    await service.delete_spec(ctx, organizationId, specSlug)
    return empty(205)


@router.get(
    f"{_SPEC}/versions",
    response_model=OpenAPISpecVersionList,
    summary="List an OpenAPI spec's versions, newest first",
)
async def list_openapi_spec_versions(
    organizationId: str, specSlug: str, ctx: Context, paging: Paging
) -> JSON:
    return ok(await service.list_versions(ctx, organizationId, specSlug, paging))


@router.get(
    f"{_SPEC}/versions/latest",
    response_model=OpenAPISpecVersionOut,
    summary="Latest version of an OpenAPI spec",
)
async def get_latest_openapi_spec_version(organizationId: str, specSlug: str, ctx: Context) -> JSON:
    return ok(await service.get_version(ctx, organizationId, specSlug, None))


@router.get(
    f"{_SPEC}/versions/latest/content",
    response_model=OpenAPISpecContentOut,
    summary="Content of the latest version of an OpenAPI spec",
)
async def get_latest_openapi_spec_version_content(
    organizationId: str, specSlug: str, ctx: Context
) -> JSON:
    return ok(await service.get_content(ctx, organizationId, specSlug, None))


@router.get(
    f"{_SPEC}/versions/{{versionId}}",
    response_model=OpenAPISpecVersionOut,
    summary="A version of an OpenAPI spec",
)
async def get_openapi_spec_version(
    organizationId: str, specSlug: str, versionId: str, ctx: Context
) -> JSON:
    return ok(await service.get_version(ctx, organizationId, specSlug, versionId))


@router.get(
    f"{_SPEC}/versions/{{versionId}}/content",
    response_model=OpenAPISpecContentOut,
    summary="Content of a version of an OpenAPI spec",
)
async def get_openapi_spec_version_content(
    organizationId: str, specSlug: str, versionId: str, ctx: Context
) -> JSON:
    return ok(await service.get_content(ctx, organizationId, specSlug, versionId))
