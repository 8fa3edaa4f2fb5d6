from __future__ import annotations

from docshelf.kit.schemas import Out


class ApiInformation(Out):
    version: str
    build: str
