"""PDF export of a space's or a change request's pages (render.py runs in the offload pool)."""
