"""Markdown and GitBook's JSON document model, pure and I/O-free (the offload pool aside):
markdown.py (the bounded CommonMark parser, links, sections, heading anchors), model.py
(document to markdown and back), blocks.py (block keys), html.py (the reading renderer),
parsing.py (large parses in the offload pool), limits.py (every content bound)."""
