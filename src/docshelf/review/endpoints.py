from __future__ import annotations

from typing import Annotated, Literal

from fastapi import Query
from starlette.responses import Response

from docshelf.auth.context import Context
from docshelf.kit.http import JSON, empty, ok
from docshelf.kit.pagination import Paging
from docshelf.kit.routing import domain_router
from docshelf.review import service
from docshelf.review.schemas import (
    ContributorList,
    RequestedReviewerList,
    RequestedReviewers,
    RequestReviewers,
    ReviewList,
    ReviewOut,
    SubmitReview,
)

router = domain_router(tags=["change request reviews"])
CR = "/spaces/{spaceId}/change-requests/{changeRequestId}"
Format = Annotated[Literal["markdown", "document"], Query()]


@router.get(CR + "/reviews", response_model=ReviewList, summary="Reviews of a change request")
async def list_reviews(
    spaceId: str,
    changeRequestId: str,
    ctx: Context,
    paging: Paging,
    format: Format = "markdown",
    outdated: bool | None = None,
) -> JSON:
    return ok(
        await service.list_reviews(
            ctx, spaceId, changeRequestId, paging, outdated=outdated, fmt=format
        )
    )


@router.post(
    CR + "/reviews",
    response_model=ReviewOut,
    status_code=201,
    summary="Submit a review (approved or changes-requested)",
)
async def submit_review(
    spaceId: str, changeRequestId: str, body: SubmitReview, ctx: Context
) -> JSON:
    review = await service.submit(ctx, spaceId, changeRequestId, body)
    return ok(review, 201, headers={"Location": review["urls"]["location"]})


@router.get(CR + "/reviews/{reviewId}", response_model=ReviewOut, summary="A review")
async def get_review(
    spaceId: str, changeRequestId: str, reviewId: str, ctx: Context, format: Format = "markdown"
) -> JSON:
    return ok(await service.get_review(ctx, spaceId, changeRequestId, reviewId, format))


@router.get(
    CR + "/requested-reviewers",
    response_model=RequestedReviewerList,
    summary="Users asked to review a change request",
)
async def list_requested_reviewers(
    spaceId: str, changeRequestId: str, ctx: Context, paging: Paging
) -> JSON:
    return ok(await service.list_requested(ctx, spaceId, changeRequestId, paging))


@router.post(
    CR + "/requested-reviewers",
    response_model=RequestedReviewers,
    summary="Ask users to review a change request",
)
async def request_reviewers(
    spaceId: str, changeRequestId: str, body: RequestReviewers, ctx: Context
) -> JSON:
    return ok(await service.request_reviewers(ctx, spaceId, changeRequestId, body))


@router.delete(
    CR + "/requested-reviewers/{userId}",
    status_code=205,
    responses={204: {"description": "The user was not asked for a review"}},
    summary="Withdraw a review request (205), or nothing to withdraw (204)",
)
async def remove_requested_reviewer(
    spaceId: str, changeRequestId: str, userId: str, ctx: Context
) -> Response:
    removed = await service.remove_requested(ctx, spaceId, changeRequestId, userId)
    return empty(205 if removed else 204)


@router.get(
    CR + "/contributors",
    response_model=ContributorList,
    summary="Users who edited a change request",
)
async def list_contributors(spaceId: str, changeRequestId: str, ctx: Context) -> JSON:
    return ok(await service.contributors(ctx, spaceId, changeRequestId))
