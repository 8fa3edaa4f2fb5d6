"""Word documents (.docx) to pages, apart from convert.py so that mammoth and the HTML converter
load only in the worker that converts.

mammoth turns the document's styles into HTML (Heading 1 -> h1...), markdownify that into
markdown. Like GitBook's Word import, each top-level heading starts a page titled by it; text
before the first one is a page titled by the file's name. Images become files the pages point
at. What mammoth could not map (unknown styles) is reported as approximated.
"""

from __future__ import annotations

import io
import re
from typing import Any

from docshelf.imports.convert import (
    ConversionError,
    Imported,
    ImportedFile,
    ImportedPage,
    OverLimit,
    Skipped,
    _checked,
    _squash,
    _stem,
)
from docshelf.imports.dialects import humanize

_TYPES = {
    "image/png": "png",
    "image/jpeg": "jpg",
    "image/gif": "gif",
    "image/svg+xml": "svg",
    "image/webp": "webp",
}
_BLANK_RUN = re.compile(r"\n{3,}")
MAX_DOCX_IMAGES = 2000


def convert_docx(data: bytes, name: str) -> Imported:
    import mammoth
    from bs4 import BeautifulSoup, Tag
    from markdownify import MarkdownConverter

    files: list[ImportedFile] = []
    skipped: list[Skipped] = []

    def image(img: Any) -> dict[str, str]:
        ctype = str(img.content_type or "").lower()
        ext = _TYPES.get(ctype)
        if ext is None or len(files) >= MAX_DOCX_IMAGES:
            skipped.append(Skipped(f"image ({ctype or 'unknown type'})", "not imported"))
            return {"src": ""}
        with img.open() as stream:
            blob = stream.read()
        ref = f"f{len(files) + 1}"
        files.append(ImportedFile(ref, f"image{len(files) + 1}.{ext}", ctype, blob))
        return {"src": f"./{ref}"}

    try:
        result = mammoth.convert_to_html(
            io.BytesIO(data), convert_image=mammoth.images.img_element(image)
        )
    except Exception as exc:  # mammoth raises whatever its zip and XML readers raise
        raise ConversionError(f"{name} is not a readable Word (.docx) document") from exc
    for message in dict.fromkeys(str(m.message) for m in result.messages):
        skipped.append(Skipped(name, message, "approximated"))
    soup = BeautifulSoup(result.value, "html.parser")
    converter = MarkdownConverter(heading_style="ATX", bullets="-")
    sections: list[tuple[str | None, list[Any]]] = [(None, [])]
    for element in list(soup.contents):
        if isinstance(element, Tag) and element.name == "h1":
            sections.append((_squash(element.get_text()) or "Untitled", []))
        else:
            sections[-1][1].append(element)
    pages: list[ImportedPage] = []
    refused: OverLimit | None = None
    for title, parts in sections:
        holder = BeautifulSoup("", "html.parser")
        for part in parts:
            holder.append(part)
        markdown = _BLANK_RUN.sub("\n\n", converter.convert_soup(holder)).strip()
        if title is None and not markdown:
            continue
        page_title = title or humanize(_stem(name)) or "Untitled"
        try:
            body = _checked(markdown + "\n" if markdown else "", name)
        except OverLimit as over:
            # Left out, and the rest imported; unless it is all there is.
            refused = over
            skipped.append(Skipped(f"{name}: {page_title}", over.reason()))
            continue
        pages.append(ImportedPage(f"p{len(pages) + 1}", None, page_title, body))
    if not pages:
        if refused is not None:
            raise refused
        raise ConversionError(f"nothing to import: {name} holds no text")
    used = {ref for page in pages for ref in re.findall(r"\(\./(f\d+)\)", page.markdown)}
    kept = tuple(f for f in files if f.ref in used)
    return Imported(tuple(pages), kept, 1, 1, tuple(skipped), detected="docx")
