"""The content engine: spaces' pages, files and reusable contents in immutable revisions.

- tree/      the page-tree model (pure) and its storage: a content-addressed map (hamt), the
             object store and cache, a revision's snapshot
- merge/     the three-way merge: of page trees (pure, merge3 for texts) and of stored revisions
- listing/   a revision's page listing, built in pieces and kept for large spaces
- reusable/  reusable contents and the pages that include them
- the rest, the package's face to the API: endpoints, schemas, service, presenter,
  repository, edits (change batches), lifecycle (a space's content starting, copied,
  released; blob collection), indexing (announcing how main moved), signals, downloads

Markdown and GitBook's document model live below, in `docshelf.document`.
"""
