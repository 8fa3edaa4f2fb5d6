from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StringConstraints, model_validator

from docshelf.kit.schemas import Body

_Id = Annotated[str, StringConstraints(min_length=1, max_length=64)]


class SiteSearchScope(Body):
    """GitBook's `SiteSearchScope`."""

    mode: Literal["default", "specific", "all"]
    currentSiteSpace: _Id | None = None
    restrictTo: Literal["currentSiteSpace", "otherSiteSpaces"] | None = None
    siteSpaceIds: Annotated[list[_Id], Field(min_length=1, max_length=100)] | None = None

    @model_validator(mode="after")
    def _shape(self) -> SiteSearchScope:
        if self.restrictTo is not None and (self.mode != "default" or not self.currentSiteSpace):
            raise ValueError("restrictTo needs mode 'default' and currentSiteSpace")
        if (self.mode == "specific") != (self.siteSpaceIds is not None):
            raise ValueError("siteSpaceIds goes with mode 'specific', and only with it")
        return self


class SiteSearch(Body):
    """GitBook's `searchSiteContent` body: a query and a scope, or the deprecated `mode`
    forms (`siteSpaceIds`; `current` with `siteSpaceId`; `all`), read as the scope they mean."""

    query: Annotated[str, StringConstraints(max_length=512)]
    scope: SiteSearchScope | None = None
    mode: Literal["specific", "current", "all"] | None = None
    siteSpaceIds: Annotated[list[_Id], Field(min_length=1, max_length=100)] | None = None
    siteSpaceId: _Id | None = None

    @model_validator(mode="after")
    def _one_scope(self) -> SiteSearch:
        old = self.mode is not None or self.siteSpaceIds is not None or self.siteSpaceId is not None
        if self.scope is not None and old:
            raise ValueError("give scope, or the deprecated mode fields, not both")
        if self.mode == "current" and self.siteSpaceId is None:
            raise ValueError("mode 'current' needs siteSpaceId")
        return self

    def effective(self) -> SiteSearchScope:
        if self.scope is not None:
            return self.scope
        if self.siteSpaceIds is not None:
            return SiteSearchScope(mode="specific", siteSpaceIds=self.siteSpaceIds)
        if self.mode == "current":
            return SiteSearchScope(mode="default", currentSiteSpace=self.siteSpaceId)
        if self.mode == "all":
            return SiteSearchScope(mode="all")
        return SiteSearchScope(mode="default")
