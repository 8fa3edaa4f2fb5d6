from __future__ import annotations

import os

from docshelf import __version__


def api_information() -> dict[str, str]:
    # DOCSHELF_BUILD is stamped by packaging; a source checkout reports "dev".
    return {"version": __version__, "build": os.environ.get("DOCSHELF_BUILD", "dev")}
