"""Opaque random ids: 20 characters of the URL-safe alphabet GitBook's EntityId pattern allows."""

from __future__ import annotations

import secrets
import string

_FIRST = string.ascii_letters
_ALPHABET = string.ascii_letters + string.digits


def new_id() -> str:
    # Letters and digits only, so ids never start with '-' and read cleanly in URLs and logs;
    # a letter first, because clients use ids as HTML ids and CSS selectors, where a leading
    # digit is invalid: GitBook's renderer looks a site section up as `#<id>` and crashes on one.
    return secrets.choice(_FIRST) + "".join(secrets.choice(_ALPHABET) for _ in range(19))
