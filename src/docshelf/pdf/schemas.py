from __future__ import annotations

from docshelf.kit.schemas import Out


class PdfOut(Out):
    url: str
