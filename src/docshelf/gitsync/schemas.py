"""The bodies of Git Sync with an outside repository (a Docshelf extension: GitBook links a
space to GitHub or GitLab through an integration, `GET /spaces/{spaceId}/git/info`)."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, Field

from docshelf.kit.schemas import Body, Out


def _branch(name: str) -> str:
    # git check-ref-format's rules that matter for a branch given by hand.
    bad = (
        not name
        or name.startswith(("/", "-", "."))
        or name.endswith(("/", ".", ".lock"))
        or ".." in name
        or "//" in name
        or "@{" in name
        or any(c in name for c in " ~^:?*[\\")
    )
    if bad:
        raise ValueError(f"{name!r} is not a valid branch name")
    return name


class LinkRemote(Body):
    url: Annotated[str, Field(min_length=1, max_length=2048)]
    branch: Annotated[str, Field(max_length=255), AfterValidator(_branch)] = "main"
    username: Annotated[str, Field(min_length=1, max_length=255)] | None = None
    # A password or an access token; kept, never shown again.
    token: Annotated[str, Field(min_length=1, max_length=4096)] | None = None


class GitSyncOut(Out):
    object: str
    space: str
    url: str
    branch: str
    hasCredentials: bool
    remoteCommit: str | None = None
    lastPushAt: str | None = None
    lastPullAt: str | None = None
    lastSyncAt: str | None = None
    error: str | None = None
    errorAt: str | None = None
    createdAt: str
    updatedAt: str
    # In the answer of the PUT alone: the URL a git host's webhook posts to, to ask for a pull.
    webhookUrl: str | None = None
