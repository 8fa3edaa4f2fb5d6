"""Bringing outside content into a space: converters from what a user hands over (a markdown
file, an HTML page, a GitBook / Git Sync zip) to a page tree."""

from docshelf.imports.convert import (
    ConversionError,
    Imported,
    ImportedFile,
    ImportedPage,
    from_html,
    from_markdown,
    from_zip,
)

__all__ = [
    "ConversionError",
    "Imported",
    "ImportedFile",
    "ImportedPage",
    "from_html",
    "from_markdown",
    "from_zip",
]
