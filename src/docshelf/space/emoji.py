"""Emoji as GitBook takes them: a Unicode codepoint such as `1f4d6` (several joined with `-`) or
the character(s) themselves. Stored and returned as lower-case codepoints."""

from __future__ import annotations

import re
import unicodedata

_CODEPOINTS = re.compile(r"^[0-9a-fA-F]{2,6}(-[0-9a-fA-F]{2,6})*$")
_JOINERS = {0x200D, 0xFE0F, 0xFE0E, 0x20E3}
MAX_LENGTH = 50  # spaces.emoji


def _is_emoji_char(cp: int) -> bool:
    if (
        cp in _JOINERS
        or 0x1F3FB <= cp <= 0x1F3FF
        or 0x1F1E6 <= cp <= 0x1F1FF
        or 0xE0020 <= cp <= 0xE007F
    ):
        return True
    return unicodedata.category(chr(cp)) == "So" or 0x1F000 <= cp <= 0x1FAFF


def normalize(value: str) -> str:
    """Codepoint form of an emoji; ValueError when `value` is neither form."""
    value = value.strip()
    if _CODEPOINTS.match(value):
        cps = [int(part, 16) for part in value.split("-")]
    else:
        cps = [ord(ch) for ch in value]
        # Keycap sequences start with a digit, '#' or '*'.
        if not cps or not all(
            _is_emoji_char(cp) or (i == 0 and chr(cp) in "0123456789#*") for i, cp in enumerate(cps)
        ):
            raise ValueError("not an emoji: give the character or its codepoint, such as 1f4d6")
    # The range first: _is_emoji_char cannot take what chr() refuses.
    if any(cp > 0x10FFFF for cp in cps) or not any(_is_emoji_char(cp) for cp in cps):
        raise ValueError("not an emoji: give the character or its codepoint, such as 1f4d6")
    codepoints = "-".join(f"{cp:x}" for cp in cps)
    # A few characters can make a long codepoint string; it must fit the stored column.
    if len(codepoints) > MAX_LENGTH:
        raise ValueError(f"too long: at most {MAX_LENGTH} characters in codepoint form")
    return codepoints
