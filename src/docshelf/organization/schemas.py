from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, StringConstraints

from docshelf.kit.schemas import Body, Out, Role
from docshelf.merge_rules.schemas import OrganizationMergeRules

OrgTitle = Annotated[str, StringConstraints(min_length=2, max_length=255, pattern=r"^\S(.*\S)?$")]
EmailDomain = Annotated[
    str,
    StringConstraints(
        min_length=3,
        max_length=253,
        pattern=r"^[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)+$",
    ),
]
Subdomain = Annotated[
    str,
    StringConstraints(min_length=3, max_length=32, pattern=r"^[a-z0-9][a-z0-9-]{1,30}[a-z0-9]$"),
]
Url = Annotated[str, StringConstraints(max_length=2048, pattern=r"^https?://\S+$")]
OrgType = Literal["business", "community"]
UseCase = Literal[
    "internalDocs",
    "docsSite",
    "audienceControlledSite",
    "productDocs",
    "teamKnowledgeBase",
    "designSystem",
    "openSourceDocs",
    "notes",
    "other",
]
CommunityType = Literal["nonProfit", "openSource", "education"]


class CreateOrganization(Body):
    title: OrgTitle
    emailDomains: Annotated[list[EmailDomain], Field(max_length=50)] = []
    type: OrgType = "business"
    useCase: UseCase | None = None
    communityType: CommunityType | None = None


class DefaultContent(Body):
    type: Literal["site"]
    site: Annotated[str, StringConstraints(min_length=1, max_length=64)]


class UpdateOrganization(Body):
    title: OrgTitle | None = None
    emailDomains: Annotated[list[EmailDomain], Field(max_length=50)] | None = None
    hostname: Subdomain | None = None
    defaultRole: Role | None = None
    defaultContent: DefaultContent | None = None
    logo: Url | None = None
    sso: bool | None = None
    ai: bool | None = None
    inviteLinks: bool | None = None
    mergeRules: OrganizationMergeRules | None = None


class OrganizationOut(Out):
    object: Literal["organization"]
    id: str
    title: str
    createdAt: str
    emailDomains: list[str]
    type: OrgType
    inviteLinks: bool
    plan: str
    urls: dict[str, str]
    trial: dict[str, Any]
    permissions: dict[str, bool]
    hostname: str | None = None
    useCase: UseCase | None = None
    communityType: CommunityType | None = None
    defaultRole: Role | None = None
    defaultContent: dict[str, str] | None = None
    sso: bool | None = None
    ai: bool | None = None
    mergeRules: dict[str, Any]


class OrganizationList(Out):
    items: list[OrganizationOut]
    count: int
    next: dict[str, str] | None = None


class OrganizationsForDomain(Out):
    organizations: list[OrganizationOut]


class SubdomainTarget(Out):
    type: Literal["organization"]
    organization: str


class SubdomainOut(Out):
    object: Literal["subdomain"]
    subdomain: str
    target: SubdomainTarget
    isActive: bool
