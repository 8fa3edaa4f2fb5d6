"""Bodies of content writes (GitBook's ChangeRequestContentChange) and the documented outputs."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, StringConstraints, model_validator

from docshelf.kit import expressions
from docshelf.kit.emoji import Emoji
from docshelf.kit.schemas import Body, Out

Title = Annotated[str, StringConstraints(min_length=1, max_length=512)]
Slug = Annotated[str, StringConstraints(min_length=1, max_length=100)]
Icon = Annotated[str, StringConstraints(min_length=1, max_length=50)]
Ref = Annotated[str, StringConstraints(min_length=1, max_length=100)]
PageId = Annotated[str, StringConstraints(min_length=1, max_length=100)]


def _condition(text: str) -> str:
    # The same grammar as section and site-space conditions: a syntax error is a 400 when saved.
    expressions.check(text)
    return text


Condition = Annotated[
    str, StringConstraints(min_length=1, max_length=1024), AfterValidator(_condition)
]
# A media type as RFC 9110 spells it (it becomes the download's Content-Type header).
MEDIA_TYPE = (
    r"^[A-Za-z0-9!#$&^_.+-]+/[A-Za-z0-9!#$&^_.+-]+"
    r"""(\s*;\s*[A-Za-z0-9!#$&^_.+-]+=([A-Za-z0-9!#$&^_.+-]+|"[^"\\\r\n]*"))*$"""
)
ContentType = Annotated[str, StringConstraints(min_length=3, max_length=255, pattern=MEDIA_TYPE)]
# A 1 MB cap on the encoded text, as GitBook states it.
Base64 = Annotated[str, StringConstraints(max_length=1024 * 1024)]


class DocumentBody(Body):
    """`{markdown}`, `{document}` (a GitBook JSONDocument, converted to markdown by
    document/model.py before the batch is applied) or `{}`."""

    markdown: str | None = None
    document: dict[str, Any] | None = None


class _PageFields(Body):
    title: Title | None = None
    slug: Slug | None = None
    emoji: Emoji | None = None
    icon: Icon | None = None
    description: Annotated[str, StringConstraints(max_length=1000)] | None = None
    hidden: bool | None = None
    noIndex: bool | None = None
    noRobotsIndex: bool | None = None
    condition: Condition | None = None


class InsertPage(_PageFields):
    operation: Literal["insert_page"]
    document: DocumentBody
    into: PageId | None = None
    at: Annotated[int, Field(ge=0)] | None = None
    ref: Ref | None = None


class UpdatePage(_PageFields):
    operation: Literal["update_page"]
    page: PageId
    document: DocumentBody | None = None
    # Present and null moves the page to the root; absent keeps its parent.
    into: PageId | None = None
    at: Annotated[int, Field(ge=0)] | None = None


class DeletePage(Body):
    operation: Literal["delete_page"]
    page: PageId


class RevertPage(Body):
    operation: Literal["revert_page"]
    page: PageId
    revision: Annotated[str, StringConstraints(min_length=1, max_length=64)] | None = None
    # Keys of top-level blocks, as page reads (format=document) show them (document/blocks.py).
    block: (
        Annotated[
            list[Annotated[str, StringConstraints(min_length=1, max_length=64)]],
            Field(max_length=1000),
        ]
        | None
    ) = None


class FileInput(Body):
    name: Annotated[str, StringConstraints(min_length=1, max_length=256)]
    url: Annotated[str, StringConstraints(min_length=1, max_length=2048)] | None = None
    base64: Base64 | None = None
    contentType: ContentType | None = None
    ref: Ref | None = None

    @model_validator(mode="after")
    def _one_source(self) -> FileInput:
        if (self.url is None) == (self.base64 is None):
            raise ValueError("give exactly one of url or base64")
        if self.base64 is not None and self.contentType is None:
            raise ValueError("contentType is required with base64")
        return self


class InsertFiles(Body):
    operation: Literal["insert_files"]
    files: Annotated[list[FileInput], Field(min_length=1, max_length=20)]


class InsertReusableContent(Body):
    """Docshelf extension (GitBook has no public write of reusable contents): adds a reusable
    content to the revision; pages show it through `{% include "<id>" %}` or a
    `reusable-content` block. `ref` names it within the batch (`{% include "<ref>" %}`)."""

    operation: Literal["insert_reusable_content"]
    title: Title
    document: DocumentBody
    ref: Ref | None = None


class UpdateReusableContent(Body):
    """Docshelf extension: renames a reusable content or replaces its body."""

    operation: Literal["update_reusable_content"]
    reusableContent: PageId
    title: Title | None = None
    document: DocumentBody | None = None


class DeleteReusableContent(Body):
    """Docshelf extension: removes a reusable content; pages that still include it show
    nothing there (their text keeps the include)."""

    operation: Literal["delete_reusable_content"]
    reusableContent: PageId


Change = Annotated[
    InsertPage
    | UpdatePage
    | DeletePage
    | RevertPage
    | InsertFiles
    | InsertReusableContent
    | UpdateReusableContent
    | DeleteReusableContent,
    Field(discriminator="operation"),
]


class ContentChanges(Body):
    changes: Annotated[list[Change], Field(min_length=1, max_length=50)]


class PageOut(Out):
    id: str
    title: str
    type: str


class RevisionOut(Out):
    object: Literal["revision"]
    id: str
    parents: list[str]
    pages: list[dict[str, Any]]
    files: list[dict[str, Any]]
    reusableContents: list[dict[str, Any]]
    createdAt: str
    type: str
    urls: dict[str, str]


class PagesOut(Out):
    pages: list[dict[str, Any]]


class FileOut(Out):
    id: str
    name: str
    contentType: str
    downloadURL: str
    size: int


class FileList(Out):
    items: list[FileOut]
    count: int
    next: dict[str, Any] | None = None


class ChangesOut(Out):
    changes: list[dict[str, Any]]
    more: int | None = None


class MergeOut(Out):
    revision: str
    result: Literal["merge", "update", "conflicts"]
    conflicts: list[dict[str, Any]] | None = Field(
        default=None,
        description=(
            "Docshelf extension: present when result is `conflicts`, one entry per page the "
            "three-way merge could not combine (the kind of conflict, the field, and each "
            "side's value). Nothing is applied; `revision` names a candidate revision holding "
            "the automatic resolution, readable through the revisions endpoints."
        ),
    )


class ContentUpdateOut(Out):
    changeRequest: dict[str, Any] | None = None
    changes: list[dict[str, Any]]
    insertedFiles: list[dict[str, Any]] | None = None
    insertedReusableContents: list[dict[str, Any]] | None = Field(
        default=None,
        description=(
            "Docshelf extension: the reusable contents the batch's `insert_reusable_content` "
            "changes created, in order, each with the `ref` it was given."
        ),
    )


class ReusableContentOut(Out):
    id: str
    title: str
    document: str | None = None
