"""Emoji as GitBook takes them, checked against Unicode's emoji data (the `emoji` package).

Spaces and pages take one emoji as its codepoints (`1f4d6`, several joined with `-`) or as the
character(s), and keep the codepoint form; comment reactions keep the fully-qualified character.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator, StringConstraints

_CODEPOINTS = re.compile(r"^[0-9a-fA-F]{2,6}(-[0-9a-fA-F]{2,6})*$")
MAX_LENGTH = 50  # spaces.emoji, pages' emoji
_NOT_AN_EMOJI = "not an emoji: give the character or its codepoint, such as 1f4d6"


def _is_emoji(text: str) -> bool:
    # Unicode's emoji tables (~8 MB) load with the first emoji checked, not in every process.
    import emoji

    return bool(emoji.is_emoji(text))


def normalize(value: str) -> str:
    """Codepoint form of one emoji; ValueError when `value` is neither form of one."""
    value = value.strip()
    if _CODEPOINTS.match(value):
        cps = [int(part, 16) for part in value.split("-")]
        if any(cp > 0x10FFFF for cp in cps):
            raise ValueError(_NOT_AN_EMOJI)
        text = "".join(map(chr, cps))
    else:
        text = value
    if not _is_emoji(text):
        raise ValueError(_NOT_AN_EMOJI)
    codepoints = "-".join(f"{ord(ch):x}" for ch in text)
    # A long sequence (skin tones, joiners) can outgrow the stored column.
    if len(codepoints) > MAX_LENGTH:
        raise ValueError(f"too long: at most {MAX_LENGTH} characters in codepoint form")
    return codepoints


def reaction(value: str) -> str:
    """One emoji in its fully-qualified form, so that ❤ and ❤️ are one reaction."""
    import emoji

    if not _is_emoji(value):
        raise ValueError("not an emoji: give one emoji character, such as 👍")
    return str(emoji.emojize(emoji.demojize(value)))


Emoji = Annotated[str, StringConstraints(min_length=1, max_length=50), AfterValidator(normalize)]
