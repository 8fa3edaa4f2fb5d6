"""What `/` and the `urls.app` addresses answer (pure). GitBook's `urls.app` leads to its editor;
Docshelf has no editor app, so those addresses answer a page saying so and linking the
resource's API location, the API explorer and the API itself, instead of a bare 404. A browser
is sent HTML, anything else JSON."""

from __future__ import annotations

import html
import re
from typing import Any

_ID = r"[A-Za-z0-9_-]+"

# The addresses presenters put in `urls.app`, and the API location of the resource each names.
_APP_URLS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern), location)
    for pattern, location in (
        (rf"/o/({_ID})/sites/({_ID})/?", "/v1/orgs/{0}/sites/{1}"),
        (rf"/o/({_ID})/openapi/([^/]+)/?", "/v1/orgs/{0}/openapi/{1}"),
        (rf"/o/({_ID})/?", "/v1/orgs/{0}"),
        (rf"/c/({_ID})/?", "/v1/collections/{0}"),
        (rf"/s/({_ID})/pages/({_ID})/?", "/v1/spaces/{0}/content/page/{1}"),
        (rf"/s/({_ID})/revisions/({_ID})/?", "/v1/spaces/{0}/revisions/{1}"),
        (rf"/s/({_ID})/~/changes/\d+/?", "/v1/spaces/{0}/change-requests"),
        (rf"/s/({_ID})/?", "/v1/spaces/{0}"),
    )
)


def api_location(path: str) -> str | None:
    """The API location of the resource an app address names, or None for another path."""
    for pattern, location in _APP_URLS:
        match = pattern.fullmatch(path)
        if match is not None:
            return location.format(*match.groups())
    return None


def wants_html(accept: str | None) -> bool:
    return accept is not None and "text/html" in accept


def _links(base_url: str) -> dict[str, str]:
    return {
        "api": f"{base_url}/v1/",
        "explorer": f"{base_url}/docs",
        "openapi": f"{base_url}/openapi.json",
        "readiness": f"{base_url}/readyz",
    }


def home(base_url: str, version: str) -> dict[str, Any]:
    return {
        "name": "Docshelf",
        "version": version,
        "message": "Docshelf serves GitBook's API v1 under /v1 (a bearer API token on each "
        "request) and each published site at its `urls.published` address.",
        "urls": _links(base_url),
    }


def app_page(base_url: str, location: str) -> dict[str, Any]:
    return {
        "message": "Docshelf has no editor app: this is the address GitBook's `urls.app` "
        "names. The resource is served by the API, at `urls.location`, with an API token.",
        "urls": {"location": f"{base_url}{location}", **_links(base_url)},
    }


def page(title: str, body: dict[str, Any]) -> str:
    """`body` as a small HTML page: its message, then its links."""
    e = html.escape
    names = {
        "location": "This resource in the API",
        "api": "The API (/v1)",
        "explorer": "The API explorer",
        "openapi": "The OpenAPI document",
        "readiness": "Readiness and features",
    }
    items = "".join(
        f'<li><a href="{e(url)}">{e(names[key])}</a>: <code>{e(url)}</code></li>'
        for key, url in body["urls"].items()
    )
    message = re.sub(r"`([^`]+)`", r"<code>\1</code>", e(body["message"]))
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{e(title)}</title>"
        "<style>body{font-family:system-ui,sans-serif;max-width:44rem;margin:3rem auto;"
        "padding:0 1rem;line-height:1.5;color:#1b1f24}code{background:#f0f1f3;padding:0 .2em}"
        "</style></head>"
        f"<body><main><h1>{e(title)}</h1><p>{message}</p><ul>{items}</ul></main></body></html>"
    )
