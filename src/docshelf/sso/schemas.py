from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import StringConstraints

from docshelf.kit.schemas import Body, Out, Role
from docshelf.team.schemas import TeamOut

Label = Annotated[str, StringConstraints(min_length=1, max_length=30)]
EntityID = Annotated[str, StringConstraints(max_length=1024)]
Certificate = Annotated[str, StringConstraints(max_length=10000)]
SsoURL = Annotated[str, StringConstraints(max_length=2048)]
TeamId = Annotated[str, StringConstraints(max_length=32)]


class CreateSAMLProvider(Body):
    """An empty `entityID`, `certificate` or `ssoURL` means "not set yet" (status `pending`)."""

    # A PEM certificate spans lines.
    multiline_fields: ClassVar[frozenset[str]] = Body.multiline_fields | {"certificate"}

    label: Label
    entityID: EntityID | None = None
    certificate: Certificate | None = None
    ssoURL: SsoURL | None = None
    defaultTeam: TeamId | None = None
    # Null is a guest: the least an SSO login grants unless an admin chooses more.
    defaultRole: Role | None = None


class UpdateSAMLProvider(Body):
    """Only the members sent change; `defaultTeam: null` removes the default team."""

    multiline_fields: ClassVar[frozenset[str]] = Body.multiline_fields | {"certificate"}

    label: Label | None = None
    entityID: EntityID | None = None
    certificate: Certificate | None = None
    ssoURL: SsoURL | None = None
    defaultTeam: TeamId | None = None
    defaultRole: Role | None = None


class SAMLService(Out):
    acsURL: str
    startURL: str
    entityID: str


class SAMLProviderUrls(Out):
    location: str


class SAMLProviderOut(Out):
    object: Literal["saml-provider"]
    id: str
    label: str
    ssoURL: str
    entityID: str
    certificate: str
    defaultTeam: TeamOut | None = None
    defaultRole: Role | None
    createdAt: str
    status: Literal["active", "pending"]
    service: SAMLService
    urls: SAMLProviderUrls


class SAMLProviderList(Out):
    items: list[SAMLProviderOut]
    count: int
    next: dict[str, str] | None = None


class SSOProviderLogin(Out):
    id: str
    label: str
    startURL: str


class SSOProviderLogins(Out):
    items: list[SSOProviderLogin]


class SessionToken(Out):
    token: str


class SAMLLink(Out):
    object: Literal["saml-link"]
    url: str
    expiresAt: str
