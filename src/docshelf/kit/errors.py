"""One error tree. Every failure on the wire is `{"error": {"code": <status>, "message": ...}}`."""

from __future__ import annotations


class DocshelfError(Exception):
    status: int = 500
    default_message = "Internal server error"

    def __init__(self, message: str | None = None, *, headers: dict[str, str] | None = None):
        self.message = message or self.default_message
        self.headers = headers or {}
        super().__init__(self.message)


class BadRequest(DocshelfError):
    status = 400
    default_message = "Bad request"


class Unauthorized(DocshelfError):
    status = 401
    default_message = (
        "Authentication required: pass an API token as 'Authorization: Bearer <token>'"
    )

    def __init__(self, message: str | None = None):
        super().__init__(message, headers={"WWW-Authenticate": "Bearer"})


class Forbidden(DocshelfError):
    status = 403
    default_message = "You are not allowed to do this"


class SpaceLocked(Forbidden):
    """A locked space's content changes by nobody's hand (GitBook's `editMode: locked`)."""

    default_message = "The space is locked: its content cannot be changed"


class NotFound(DocshelfError):
    status = 404
    default_message = "Not found"


class MethodNotAllowed(DocshelfError):
    status = 405
    default_message = "Method not allowed"


class Conflict(DocshelfError):
    status = 409
    default_message = "Conflict"


class PayloadTooLarge(DocshelfError):
    status = 413
    default_message = "Request body is too large"


class TooManyRequests(DocshelfError):
    status = 429
    default_message = "Rate limit exceeded"


class ServiceUnavailable(DocshelfError):
    status = 503
    default_message = "The server is busy; retry shortly"


def error_body(status: int, message: str) -> dict[str, dict[str, int | str]]:
    return {"error": {"code": status, "message": message}}
