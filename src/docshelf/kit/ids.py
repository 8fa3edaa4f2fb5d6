"""Opaque random ids: 20 characters of the URL-safe alphabet GitBook's EntityId pattern allows."""

from __future__ import annotations

import secrets
import string

_ALPHABET = string.ascii_letters + string.digits


def new_id() -> str:
    # Letters and digits only, so ids never start with '-' and read cleanly in URLs and logs.
    return "".join(secrets.choice(_ALPHABET) for _ in range(20))
