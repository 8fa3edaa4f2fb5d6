"""Bodies of comment writes (GitBook's PostCommentSchema, UpdateCommentSchema and their reply
forms) and the documented outputs."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, StringConstraints, model_validator

from docshelf.document.model import document_to_markdown
from docshelf.kit.emoji import reaction
from docshelf.kit.errors import BadRequest
from docshelf.kit.schemas import Body, Out
from docshelf.user.schemas import UserOut

# Distinct emoji one comment or reply may carry, and reactions one request may add or remove.
MAX_EMOJI = 50


Reaction = Annotated[str, StringConstraints(min_length=1, max_length=32), AfterValidator(reaction)]
Reactions = Annotated[list[Reaction], Field(max_length=MAX_EMOJI)]
Format = Literal["markdown", "document"]


class CommentText(Body):
    """GitBook's Document: `{markdown}` is stored; `{document}` (a GitBook JSON document) is
    validated and stored as the markdown document/model.py maps it to; `{}` carries no text,
    which a comment must have."""

    markdown: str | None = None
    document: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _text(self) -> CommentText:
        if self.document is not None:
            if self.markdown is not None:
                raise ValueError("give the comment as markdown or as a document, not both")
            try:
                self.markdown = document_to_markdown(self.document)
            except BadRequest as exc:
                raise ValueError(exc.message) from None
            self.document = None
        if self.markdown is None or not self.markdown.strip():
            raise ValueError('a comment needs text: give {"markdown": "..."}, not blank')
        return self


class PostComment(Body):
    node: Annotated[str, StringConstraints(min_length=1, max_length=100)] | None = None
    page: Annotated[str, StringConstraints(min_length=1, max_length=100)] | None = None
    body: CommentText


class UpdateComment(Body):
    resolved: bool | None = None
    body: CommentText | None = None
    addedReactions: Reactions | None = None
    removedReactions: Reactions | None = None


class PostReply(Body):
    body: CommentText


class UpdateReply(Body):
    body: CommentText | None = None
    addedReactions: Reactions | None = None
    removedReactions: Reactions | None = None


class ReactionUser(Out):
    user: UserOut
    reactedAt: str


class ReactionOut(Out):
    emoji: str
    count: int
    users: list[ReactionUser]


class Replier(Out):
    user: UserOut
    count: int
    updatedAt: str


class CommentPage(Out):
    id: str
    title: str
    emoji: str | None = None
    icon: str | None = None
    createdAt: str | None = None
    updatedAt: str | None = None
    path: str
    outdated: bool


class CommentNode(Out):
    id: str


class CommentTarget(Out):
    space: str
    revision: str
    changeRequest: str | None = None
    page: CommentPage | None = None
    node: CommentNode | None = None


class CommentPermissions(Out):
    view: bool
    edit: bool
    reply: bool
    react: bool
    delete: bool


class ReplyOut(Out):
    object: Literal["comment-reply"]
    id: str
    postedBy: UserOut
    postedAt: str
    editedAt: str | None = None
    reactions: list[ReactionOut]
    body: dict[str, Any]
    urls: dict[str, str]
    permissions: CommentPermissions


class CommentOut(Out):
    object: Literal["comment"]
    id: str
    postedBy: UserOut
    postedAt: str
    editedAt: str | None = None
    reactions: list[ReactionOut]
    replies: int
    repliers: list[Replier]
    body: dict[str, Any]
    target: CommentTarget
    status: Literal["open", "resolved"]
    resolvedAt: str | None = None
    resolvedBy: UserOut | None = None
    urls: dict[str, str]
    permissions: CommentPermissions


class CommentList(Out):
    items: list[CommentOut]
    count: int
    next: dict[str, Any] | None = None


class ReplyList(Out):
    items: list[ReplyOut]
    count: int
    next: dict[str, Any] | None = None
