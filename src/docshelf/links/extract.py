"""Which links a page's stored markdown holds (pure).

Stored markdown names pages and files by stable references (`/pages/<id>`, `/files/<id>`,
content/edits.py); a relative link that named no page when it was written stays as written and
is `unresolved`: broken until someone fixes it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import docshelf.document.markdown as md

_PAGE = re.compile(r"^/pages/([A-Za-z0-9_-]+)$")
_FILE = re.compile(r"^/files/([A-Za-z0-9_-]+)$")
_EXTERNAL = re.compile(r"^(?:[A-Za-z][A-Za-z0-9+.-]*:|//)")
MAX_TARGET = 2048


@dataclass(frozen=True, slots=True)
class FoundLink:
    kind: str  # page, file, anchor, url, unresolved
    target: str
    anchor: str | None = None


def extract(markdown: str) -> list[FoundLink]:
    out: list[FoundLink] = []
    for link in md.iter_links(markdown):
        target = link.target.strip()
        if not target:
            continue
        path, _, anchor = target.partition("#")
        if not path and anchor:
            out.append(FoundLink("anchor", anchor[:MAX_TARGET]))
        elif match := _PAGE.match(path):
            out.append(FoundLink("page", match[1], anchor or None))
        elif match := _FILE.match(path):
            out.append(FoundLink("file", match[1]))
        elif _EXTERNAL.match(target):
            if target.lower().startswith(("http:", "https:", "//")):
                out.append(FoundLink("url", target[:MAX_TARGET]))
        else:
            out.append(FoundLink("unresolved", target[:MAX_TARGET]))
    return out
