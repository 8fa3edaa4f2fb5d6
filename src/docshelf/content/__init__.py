"""Revision content: the page-tree model and the pure, I/O-free three-way merge that the content
engine builds on. Nothing here touches storage; callers load trees, merge, and persist."""

from docshelf.content.merge import ConflictKind, MergeConflict, MergeResult, merge, merge_markdown
from docshelf.content.model import PAGE_TYPES, InvalidTree, Page, PageType, Tree

__all__ = [
    "PAGE_TYPES",
    "ConflictKind",
    "InvalidTree",
    "MergeConflict",
    "MergeResult",
    "Page",
    "PageType",
    "Tree",
    "merge",
    "merge_markdown",
]
