from __future__ import annotations

from typing import Annotated, Any, Literal, get_args

from pydantic import AfterValidator, BeforeValidator, Field, StringConstraints

from docshelf.kit.schemas import Body, Out

# GitBook's TranslationLanguage enum (the 0.202 list, a superset of 0.130's). A Literal, so the
# OpenAPI description carries the enum for clients and the generated bad-input tests.
TranslationLanguage = Literal[
    "en", "fr", "de", "es", "it", "pt", "pt-br", "ru", "ja", "zh", "zh-tw", "yue", "ko", "ar",
    "hi", "nl", "pl", "tr", "sv", "no", "da", "fi", "el", "cs", "hu", "ro", "th", "vi", "id",
    "ms", "he", "uk", "sk", "bg", "hr", "lt", "lv", "et", "sl",
]  # fmt: skip
LANGUAGES: frozenset[str] = frozenset(get_args(TranslationLanguage))


def _known_code(value: Any) -> Any:
    # Pydantic's own Literal error lists all 39 codes but not the one that was sent; naming the
    # offending code is what lets a client fix its request. Non-strings fall through to the
    # Literal's type error.
    if isinstance(value, str) and value not in LANGUAGES:
        raise ValueError(f"unknown language code '{value}'")
    return value


def _no_duplicates(codes: list[str]) -> list[str]:
    seen: set[str] = set()
    for code in codes:
        if code in seen:
            raise ValueError(f"duplicate language code '{code}'")
        seen.add(code)
    return codes


Language = Annotated[TranslationLanguage, BeforeValidator(_known_code)]
# Without duplicates a list can hold every code once and no more.
Languages = Annotated[
    list[Language], Field(max_length=len(LANGUAGES)), AfterValidator(_no_duplicates)
]
Title = Annotated[str, StringConstraints(min_length=1, max_length=100)]


class CreateTranslationSettings(Body):
    title: Title
    languages: Languages = []


class ReplaceTranslationSettings(Body):
    """PUT replaces the whole object: an omitted `languages` means none, not "keep the current
    ones", so the same body always leaves the same state (PUT is idempotent)."""

    title: Title
    languages: Languages = []


class TranslationSettingsPermissions(Out):
    view: bool
    edit: bool


class TranslationSettingsUrls(Out):
    location: str


class TranslationSettingsOut(Out):
    object: Literal["translation-settings"]
    id: str
    title: str
    languages: list[TranslationLanguage]
    createdAt: str
    updatedAt: str
    permissions: TranslationSettingsPermissions
    urls: TranslationSettingsUrls


class TranslationSettingsList(Out):
    items: list[TranslationSettingsOut]
    count: int
    next: dict[str, str] | None = None
