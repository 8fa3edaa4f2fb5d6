"""A revision's page listing: pieces.py builds it in pieces (one per subtree, kept by content
id, so a new revision rebuilds only what changed); stored.py keeps a large space's pieces in
the database between processes, refreshed by a job after main moves."""
