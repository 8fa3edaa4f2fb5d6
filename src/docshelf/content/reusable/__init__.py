"""Reusable contents: includes.py finds the blocks that include them in a page, resolves a
reference (by id or by a Git Sync path) and inlines them for readers."""
