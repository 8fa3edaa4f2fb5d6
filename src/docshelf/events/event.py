"""What an event is, as integrations see it: pure, no database.

Names follow GitBook's integration events (`@gitbook/api`'s `Event` union, read in
gitbook-openapi/0.202.0.json: `SpaceContentUpdatedEvent`, `SpaceVisibilityUpdatedEvent`);
where GitBook has no event for a change, the name is made in the same style
(`<object>_<past participle>`, snake case) and marked below."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from docshelf.kit.clock import isoformat

# GitBook's own: space_content_updated {spaceId, revisionId, updatedBy: [User]} and
# space_visibility_updated {spaceId, previousVisibility, visibility}.
SPACE_CONTENT_UPDATED = "space_content_updated"
SPACE_VISIBILITY_UPDATED = "space_visibility_updated"
# Docshelf's, named like GitBook's.
SPACE_CREATED = "space_created"
SPACE_MOVED = "space_moved"
SPACE_DELETED = "space_deleted"
SPACE_RESTORED = "space_restored"
CHANGE_REQUEST_CREATED = "change_request_created"
CHANGE_REQUEST_UPDATED = "change_request_updated"
# status: merged, archived, draft or open again; previousStatus alongside.
CHANGE_REQUEST_STATUS_UPDATED = "change_request_status_updated"
CHANGE_REQUEST_REVIEW_SUBMITTED = "change_request_review_submitted"
COMMENT_CREATED = "comment_created"
COMMENT_REPLY_CREATED = "comment_reply_created"
SITE_PUBLISHED = "site_published"
SITE_UNPUBLISHED = "site_unpublished"
MEMBER_JOINED = "member_joined"
MEMBER_LEFT = "member_left"
OPENAPI_SPEC_PROCESSED = "openapi_spec_processed"

# Every name a webhook may subscribe to, and an audit-log filter may name.
TYPES: frozenset[str] = frozenset(
    {
        SPACE_CONTENT_UPDATED,
        SPACE_VISIBILITY_UPDATED,
        SPACE_CREATED,
        SPACE_MOVED,
        SPACE_DELETED,
        SPACE_RESTORED,
        CHANGE_REQUEST_CREATED,
        CHANGE_REQUEST_UPDATED,
        CHANGE_REQUEST_STATUS_UPDATED,
        CHANGE_REQUEST_REVIEW_SUBMITTED,
        COMMENT_CREATED,
        COMMENT_REPLY_CREATED,
        SITE_PUBLISHED,
        SITE_UNPUBLISHED,
        MEMBER_JOINED,
        MEMBER_LEFT,
        OPENAPI_SPEC_PROCESSED,
    }
)


@dataclass(frozen=True, slots=True)
class Event:
    id: str
    type: str
    organization_id: str
    space_id: str | None
    actor_id: str | None
    actor_label: str | None
    data: dict[str, Any]
    created_at: datetime

    @classmethod
    def from_row(cls, row: Any) -> Event:
        return cls(
            id=row["id"],
            type=row["type"],
            organization_id=row["organization_id"],
            space_id=row["space_id"],
            actor_id=row["actor_id"],
            actor_label=row["actor_label"],
            data=dict(row["data"]),
            created_at=row["created_at"],
        )

    def body(self) -> dict[str, Any]:
        """The event as a webhook sends it: GitBook's BaseEvent (`eventId`, `type`), its
        `spaceId` for space events, the event's own fields, and who and when."""
        out: dict[str, Any] = {"eventId": self.id, "type": self.type}
        out["organizationId"] = self.organization_id
        if self.space_id is not None:
            out["spaceId"] = self.space_id
        out.update(self.data)
        out["actor"] = None if self.actor_id is None else user_ref(self.actor_id, self.actor_label)
        out["createdAt"] = isoformat(self.created_at)
        return out


def user_ref(user_id: str | None, display_name: str | None) -> dict[str, Any]:
    """A user as an event names them (GitBook's `updatedBy` items are Users: these fields)."""
    out: dict[str, Any] = {"object": "user", "id": user_id}
    if display_name is not None:
        out["displayName"] = display_name
    return out
