from __future__ import annotations

from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import AfterValidator, Field, StringConstraints, field_validator

from docshelf.events.event import TYPES
from docshelf.kit.schemas import Body, EntityId, Out


def _deliverable(url: str) -> str:
    # What every delivery would refuse, refused now (an address is checked at each delivery:
    # a name's DNS answer can change). The fetcher's own parse would import httpx here.
    parts = urlsplit(url)
    if parts.username is not None or parts.password is not None:
        raise ValueError("user names and passwords in URLs are not allowed")
    if not parts.hostname:
        raise ValueError("the URL has no host")
    if parts.port == 0:  # urlsplit takes 0 as a port; past 65535 it raises ValueError itself
        raise ValueError("port 0 is out of range")
    return url


Url = Annotated[
    str,
    StringConstraints(max_length=2048, pattern=r"^https?://\S+$"),
    AfterValidator(_deliverable),
]
EventName = Annotated[str, StringConstraints(min_length=1, max_length=64)]
EventNames = Annotated[list[EventName], Field(max_length=len(TYPES))]


def _known(names: list[str] | None) -> list[str] | None:
    if names is None:
        return None
    unknown = sorted(set(names) - TYPES)
    if unknown:
        raise ValueError(f"unknown event names: {', '.join(unknown)}")
    # One entry per name, in the order given.
    return list(dict.fromkeys(names))


class CreateWebhook(Body):
    url: Url
    # None or empty: every event.
    events: EventNames | None = None
    # Only this space's events; none: the whole organization's.
    space: EntityId | None = None

    @field_validator("events")
    @classmethod
    def _events(cls, value: list[str] | None) -> list[str] | None:
        return _known(value)


class UpdateWebhook(Body):
    url: Url | None = None
    events: EventNames | None = None
    active: bool | None = None

    @field_validator("events")
    @classmethod
    def _events(cls, value: list[str] | None) -> list[str] | None:
        return _known(value)


class WebhookOut(Out):
    object: Literal["webhook"]
    id: str
    url: str
    events: list[str]
    space: str | None
    active: bool
    # Shown by create and by the secret's rotation only.
    secret: str | None = None
    disabledAt: str | None
    createdAt: str
    updatedAt: str


class WebhookList(Out):
    items: list[WebhookOut]
    count: int
    next: dict[str, str] | None = None


class DeliveryEvent(Out):
    id: str
    type: str


class DeliveryOut(Out):
    object: Literal["webhook-delivery"]
    id: str
    event: DeliveryEvent
    status: Literal["pending", "delivered", "failed"]
    attempt: int
    statusCode: int | None
    # Milliseconds the last attempt took.
    duration: int | None
    error: str | None
    createdAt: str
    lastAttemptAt: str | None
    nextAttemptAt: str | None
    deliveredAt: str | None


class DeliveryList(Out):
    items: list[DeliveryOut]
    count: int
    next: dict[str, str] | None = None
