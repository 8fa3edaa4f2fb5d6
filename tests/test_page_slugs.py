"""Page slugs, pure: the slug a title gives and the free slug among siblings."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from docshelf.content.tree.model import free_slug, page_slug


@pytest.mark.parametrize(
    ("title", "slug"),
    [
        ("Getting started", "getting-started"),
        ("  Ça marche, déjà!  ", "ca-marche-deja"),
        ("API v2.1 / Auth", "api-v2-1-auth"),
        ("日本語", "untitled"),
        ("---", "untitled"),
        ("a" * 150, "a" * 100),
    ],
)
def test_page_slug(title: str, slug: str) -> None:
    assert page_slug(title) == slug


@pytest.mark.parametrize(
    ("wanted", "taken", "free"),
    [
        ("intro", set(), "intro"),
        ("intro", {"intro"}, "intro-2"),
        ("intro", {"intro", "intro-2", "intro-3"}, "intro-4"),
        ("intro", {"intro-2"}, "intro"),
    ],
)
def test_free_slug(wanted: str, taken: set[str], free: str) -> None:
    assert free_slug(wanted, taken) == free


@given(st.text(max_size=200))
def test_page_slug_is_a_path_segment(title: str) -> None:
    slug = page_slug(title)
    assert 1 <= len(slug) <= 100
    assert set(slug) <= set("abcdefghijklmnopqrstuvwxyz0123456789-")
    assert not slug.startswith("-") and not slug.endswith("-")


@given(
    st.from_regex(r"[a-z]{1,8}", fullmatch=True),
    st.sets(st.from_regex(r"[a-z]{1,8}(-[0-9])?", fullmatch=True)),
)
def test_free_slug_is_free(wanted: str, taken: set[str]) -> None:
    free = free_slug(wanted, taken)
    assert free not in taken and free.startswith(wanted)
