from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import StringConstraints, model_validator

from docshelf.kit.schemas import Body, Out

SLUG_PATTERN = r"^[a-z0-9]+(?:-[a-z0-9]+)*$"
Slug = Annotated[str, StringConstraints(min_length=1, max_length=100, pattern=SLUG_PATTERN)]
Url = Annotated[str, StringConstraints(max_length=2048, pattern=r"^https?://\S+$")]
ProcessingState = Literal["pending", "progress", "complete"]
ErrorCode = Literal["FETCH_TIMEOUT", "FETCH_ERROR", "PARSE_ERROR"]


class Source(Body):
    """GitBook's `OpenAPISpecSource`: `{url}` (fetched by the processing job through the guarded
    fetcher, and again on a schedule) or `{text}`. One model rather than a union, so that a bad
    source is named by its own field ("source.text"), not by a guess at the variant meant."""

    # A YAML or JSON document: tabs and line breaks are its syntax.
    multiline_fields: ClassVar[frozenset[str]] = Body.multiline_fields | {"text"}

    url: Url | None = None
    text: Annotated[str, StringConstraints(min_length=1)] | None = None

    @model_validator(mode="after")
    def _one(self) -> Source:
        if (self.url is None) == (self.text is None):
            raise ValueError("give either 'url' or 'text'")
        return self


class CreateOpenAPISpec(Body):
    slug: Slug
    source: Source


class PutOpenAPISpec(Body):
    source: Source


class OpenAPISpecPermissions(Out):
    view: bool
    edit: bool
    delete: bool


class OpenAPISpecUrls(Out):
    location: str
    app: str


class ProcessingError(Out):
    message: str
    code: str | None = None


class OpenAPISpecOut(Out):
    object: Literal["openapi-spec"]
    id: str
    createdAt: str
    updatedAt: str
    slug: str
    sourceURL: str | None = None
    processingState: ProcessingState
    lastVersion: str | None = None
    lastProcessedAt: str | None = None
    lastProcessErrorCode: ErrorCode | None = None
    lastProcessedErrors: list[ProcessingError]
    lastProcessedErrorCount: int
    permissions: OpenAPISpecPermissions
    urls: OpenAPISpecUrls


class OpenAPISpecList(Out):
    items: list[OpenAPISpecOut]
    count: int
    next: dict[str, str] | None = None


class VersionUrls(Out):
    location: str


class OpenAPISpecVersionOut(Out):
    object: Literal["openapi-spec-version"]
    id: str
    createdAt: str
    url: str
    urls: VersionUrls


class OpenAPISpecVersionList(Out):
    items: list[OpenAPISpecVersionOut]
    count: int
    next: dict[str, str] | None = None


class ContentUrls(Out):
    source: str
    public: str | None = None


class OpenAPISpecContentOut(Out):
    # {"entrypoint": <file name or URL>, "files": {<file name or URL>: <parsed document>}}
    filesystem: dict[str, Any]
    url: str
    urls: ContentUrls
