"""Generated ids are valid where clients put them: in URLs, and as HTML ids and CSS selectors
(GitBook's renderer selects the current site section as `#<id>`; an id starting with a digit
is not a valid selector, and the page crashed for about one section in six)."""

from __future__ import annotations

import re

from docshelf.kit.ids import new_id

# A CSS identifier that needs no escaping, of the characters GitBook's EntityId allows.
SELECTOR_SAFE = re.compile(r"[A-Za-z][A-Za-z0-9]{19}")


def test_ids_are_selector_safe_and_distinct() -> None:
    ids = [new_id() for _ in range(5000)]
    assert [i for i in ids if not SELECTOR_SAFE.fullmatch(i)] == []
    assert len(set(ids)) == len(ids)
    # Every character class still appears: the ids keep their spread.
    assert {i[0].isupper() for i in ids} == {True, False}
    assert any(c.isdigit() for i in ids for c in i[1:])
