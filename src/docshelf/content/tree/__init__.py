"""The page tree of a revision (model.py, pure) and its storage: hamt.py (a content-addressed
map of records), objects.py (the object store and its cache), snapshot.py (a revision's maps
of pages, files and reusable contents)."""

from docshelf.content.tree.model import PAGE_TYPES, InvalidTree, Page, PageType, Tree
from docshelf.content.tree.snapshot import ROOT, Record, Snapshot

__all__ = ["PAGE_TYPES", "ROOT", "InvalidTree", "Page", "PageType", "Record", "Snapshot", "Tree"]
