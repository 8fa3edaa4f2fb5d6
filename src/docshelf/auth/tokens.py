"""API tokens: `dsk_` + 43 URL-safe characters (256 bits). Only a SHA-256 hash is stored; the
token is shown once when created."""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets

PREFIX = "dsk_"
_FORMAT = re.compile(r"^dsk_[A-Za-z0-9_-]{43}$")


def generate() -> str:
    return PREFIX + secrets.token_urlsafe(32)


def is_well_formed(token: str) -> bool:
    return bool(_FORMAT.match(token))


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def same_hash(hashed: str, stored_hash: str) -> bool:
    # The look-up is by hash; the final comparison is constant-time so that no timing of the
    # comparison itself tells how much of a guess was right.
    return hmac.compare_digest(hashed, stored_hash)


def display_prefix(token: str) -> str:
    return token[:10]
