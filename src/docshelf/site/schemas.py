from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, StringConstraints, model_validator

from docshelf.kit.schemas import Body, EntityId, Out

SiteType = Literal["basic", "premium", "ultimate", "sponsored", "legacy-basic", "legacy-premium"]
SiteVisibility = Literal["public", "unlisted", "share-link", "visitor-auth"]
SiteTitle = Annotated[str, StringConstraints(min_length=2, max_length=128)]
Path = Annotated[str, StringConstraints(min_length=1, max_length=100)]
Condition = Annotated[str, StringConstraints(min_length=1, max_length=1024)]
Icon = Annotated[str, StringConstraints(max_length=50)]
ProxyOrigin = Annotated[
    str,
    StringConstraints(max_length=512, pattern=r"^([\w-]+\.)*[\w-]+\.[a-zA-Z]{2,}(\/[\w-]+)+$"),
]

# GitBook's `SiteHostname` (the Site object's `hostname`).
Hostname = Annotated[
    str,
    StringConstraints(
        max_length=512,
        pattern=r"^([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?[.]){2,}[a-z0-9][a-z0-9-]{0,61}[a-z0-9]$",
    ),
]


class CreateSite(Body):
    type: SiteType = "basic"
    title: SiteTitle | None = None
    visibility: SiteVisibility = "public"
    # Space ids to add, or (GitBook up to 0.137) "sample"/"empty" for a new space.
    spaces: Annotated[list[EntityId], Field(max_length=100)] | Literal["sample", "empty"] | None = (
        None
    )


class AdaptiveContent(Body):
    enabled: bool


class UpdateSite(Body):
    title: SiteTitle | None = None
    visibility: SiteVisibility | None = None
    basename: Path | None = None
    adaptiveContent: AdaptiveContent | None = None
    defaultSiteSpace: EntityId | None = None
    defaultSiteSection: EntityId | None = None
    proxy: ProxyOrigin | None = None
    # A Docshelf extension (GitBook's updateSite takes no hostname): the custom hostname the
    # reader serves the site at, by the Host header; null clears it. Admins only.
    hostname: Hostname | None = Field(
        default=None,
        description="Docshelf extension: a custom hostname the published site is served at "
        "(by the Host header), unique across the install; null removes it. Organization "
        "admins only.",
    )


class SitePointer(Body):
    type: Literal["site-section"]
    siteSection: EntityId


class SpacePointer(Body):
    type: Literal["site-space"]
    siteSpace: EntityId


class GroupPointer(Body):
    type: Literal["site-section", "site-section-group"]
    id: EntityId


class _OnePosition(Body):
    @model_validator(mode="after")
    def _one(self) -> _OnePosition:
        if getattr(self, "before", None) is not None and getattr(self, "after", None) is not None:
            raise ValueError("give 'before' or 'after', not both")
        return self


class SectionPosition(_OnePosition):
    before: SitePointer | None = None
    after: SitePointer | None = None


class SiteSpacePosition(_OnePosition):
    before: SpacePointer | None = None
    after: SpacePointer | None = None


class GroupPosition(_OnePosition):
    before: GroupPointer | None = None
    after: GroupPointer | None = None


class MoveSection(Body):
    position: SectionPosition | None = None

    def anchors(self) -> tuple[str | None, str | None]:
        p = self.position
        if p is None:
            return None, None
        return (
            p.before.siteSection if p.before else None,
            p.after.siteSection if p.after else None,
        )


class MoveSiteSpace(Body):
    position: SiteSpacePosition | None = None

    def anchors(self) -> tuple[str | None, str | None]:
        p = self.position
        if p is None:
            return None, None
        return (p.before.siteSpace if p.before else None, p.after.siteSpace if p.after else None)


class MoveGroup(Body):
    position: GroupPosition | None = None

    def anchors(self) -> tuple[str | None, str | None]:
        p = self.position
        if p is None:
            return None, None
        return (p.before.id if p.before else None, p.after.id if p.after else None)


class CreateSection(Body):
    spaceId: EntityId
    # The spec's bound (GitBook 0.91); 2 at least, as every section title.
    title: Annotated[str, StringConstraints(min_length=2, max_length=64)] | None = None


class UpdateSection(Body):
    title: SiteTitle | None = None
    path: Path | None = None
    defaultSiteSpace: EntityId | None = None
    condition: Condition | None = None
    icon: Icon | None = None
    description: Annotated[str, StringConstraints(max_length=256)] | None = None
    # GitBook 0.202: the group to move the section into; null moves it to the top level.
    siteSectionGroupId: EntityId | None = None


class CreateGroup(Body):
    title: Annotated[str, StringConstraints(min_length=1, max_length=100)]
    icon: Icon | None = None
    sections: Annotated[list[EntityId], Field(max_length=100)] | None = None


class UpdateGroup(Body):
    title: Annotated[str, StringConstraints(min_length=1, max_length=100)] | None = None
    icon: Icon | None = None


class AddSectionToGroup(Body):
    sectionId: EntityId


class CreateSiteSpace(Body):
    spaceId: EntityId
    sectionId: EntityId | None = None


class UpdateSiteSpace(Body):
    path: Path | None = None
    condition: Condition | None = None
    # GitBook 0.202: left out of the site's navigation, still served at its address.
    hidden: bool | None = None


class SiteOut(Out):
    object: Literal["site"]
    id: str
    type: SiteType
    appliedType: SiteType
    defaultLevel: Literal["inherit"]
    title: str
    visibility: SiteVisibility
    published: bool
    siteSpaces: int
    createdAt: str
    basename: str | None = None
    hostname: str | None = None
    proxy: dict[str, str] | None = None
    adaptiveContent: dict[str, bool] | None = None
    features: list[dict[str, Any]]
    urls: dict[str, str]
    permissions: dict[str, bool]


class SiteList(Out):
    items: list[SiteOut]
    count: int
    next: dict[str, Any] | None = None


class SiteSpaceOut(Out):
    object: Literal["site-space"]
    id: str
    path: str
    title: str
    space: dict[str, Any]
    section: str | None = None
    default: bool
    condition: str | None = None
    urls: dict[str, str]


class SiteSectionOut(Out):
    object: Literal["site-section"]
    id: str
    title: str
    path: str
    default: bool
    description: str | None = None
    condition: str | None = None
    sectionGroup: str | None = None
    icon: str | None = None
    siteSpaces: list[SiteSpaceOut]
    urls: dict[str, str]


class SiteSectionGroupOut(Out):
    object: Literal["site-section-group"]
    id: str
    title: str
    icon: str | None = None
    draft: bool
    sections: list[SiteSectionOut]
    children: list[SiteSectionOut]


class SiteStructureOut(Out):
    type: Literal["sections", "siteSpaces"]
    structure: list[dict[str, Any]]


class SiteSectionList(Out):
    items: list[SiteSectionOut]
    count: int
    next: dict[str, Any] | None = None


class SiteSectionGroupList(Out):
    items: list[SiteSectionGroupOut]
    count: int
    next: dict[str, Any] | None = None


class SiteSpaceList(Out):
    items: list[SiteSpaceOut]
    count: int
    next: dict[str, Any] | None = None


# -- visitor authentication, adaptive content and published content --

FallbackUrl = Annotated[str, StringConstraints(max_length=2048, pattern=r"^https?://\S+$")]
PublishedUrl = Annotated[str, StringConstraints(min_length=1, max_length=2048)]
VisitorToken = Annotated[str, StringConstraints(max_length=8192)]


class UpdatePublishingAuth(Body):
    # GitBook's backends: `custom` (the customer's own signs tokens), or `integration`, which
    # Docshelf, running no integrations, refuses with a 400.
    backend: Literal["custom", "integration"]
    fallbackURL: FallbackUrl | None = None


class PublishingAuthOut(Out):
    object: Literal["publishing-auth"]
    backend: Literal["custom"]
    privateKey: str
    fallbackURL: str | None = None


class PutAdaptiveSchema(Body):
    jsonSchema: dict[str, Any]


class AdaptiveSchemaOut(Out):
    object: Literal["site-adaptive-schema"]
    jsonSchema: dict[str, Any]
    updatedAt: str


class PublishedContentSiteOut(Out):
    object: Literal["published-content-site"]
    site: SiteOut
    structure: dict[str, Any]
    customizations: dict[str, Any]
    scripts: list[dict[str, Any]]


class SiteVisitorPayload(Body):
    # GitBook 0.20x: a human reader or an AI agent (carried into the site token).
    type: Literal["human", "agent"] = "human"
    jwtToken: VisitorToken | None = None
    unsignedClaims: dict[str, Any] | None = None


class ResolvePublishedUrl(Body):
    url: PublishedUrl
    redirectOnError: bool = False
    visitor: SiteVisitorPayload | None = None
    # GitBook's renderer sends a random value to get past a cache of this POST; Docshelf keeps
    # none, so it changes nothing.
    cacheBust: Annotated[str, StringConstraints(max_length=256)] | None = None


class PublishedLookupOut(Out):
    """GitBook's PublishedSiteContentLookup: the content, or `{target, redirect}`."""
