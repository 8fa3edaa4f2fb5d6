"""A throwaway HTTP server on loopback serving fixed files: what a URL-taking operation (an
import, an OpenAPI spec) fetches in tests. The server refuses loopback URLs unless
DOCSHELF_FETCH_ALLOWED_HOSTS names 127.0.0.1."""

from __future__ import annotations

import io
import threading
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@contextmanager
def serving(files: dict[str, tuple[bytes, str]]) -> Iterator[str]:
    """path -> (body, content type); yields the server's base URL (no trailing slash)."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            found = files.get(self.path.split("?", 1)[0])
            if found is None:
                self.send_error(404)
                return
            body, kind = found
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def pages_zip(count: int) -> bytes:
    """A zip of `count` markdown pages, `page-NNN.md` titled "Page N"."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for i in range(count):
            archive.writestr(f"page-{i:03}.md", f"# Page {i}\n\nText of page {i}.\n")
    return out.getvalue()
