"""A JavaScript/TypeScript module's exported data read as text, never run (imports.jsdata)."""

from __future__ import annotations

import pytest

from docshelf.imports.jsdata import UNKNOWN, NotData, exported


def test_commonjs_module_with_names_spreads_and_code() -> None:
    module = """
    // @ts-check
    /** @type {import('@docusaurus/plugin-content-docs').SidebarsConfig} */
    const extra = ['a/b', {type: 'link', label: 'GH', href: "https://github.com"}]
    const sidebars = {
      docs: [
        'intro', // a comment
        {
          type: 'category', label: "Tutorial \\u00e9\\n", collapsed: false,
          link: {type: 'generated-index', description: `5 minutes`},
          items: ['x', ...extra, require('./more'), `t ${x}`],
        },
      ],
      "api": {'API': ['one', 'two',],},
      fn: () => [1, 2],
      n: 1_000, half: .5, no: null, maybe: undefined,
      get later() { return 1 },
      extra,
    }
    module.exports = sidebars
    """
    assert exported(module) == {
        "docs": [
            "intro",
            {
                "type": "category",
                "label": "Tutorial é\n",
                "collapsed": False,
                "link": {"type": "generated-index", "description": "5 minutes"},
                "items": [
                    "x",
                    "a/b",
                    {"type": "link", "label": "GH", "href": "https://github.com"},
                    UNKNOWN,
                    UNKNOWN,
                ],
            },
        ],
        "api": {"API": ["one", "two"]},
        "fn": UNKNOWN,
        "n": 1000,
        "half": 0.5,
        "no": None,
        "maybe": None,
        "extra": ["a/b", {"type": "link", "label": "GH", "href": "https://github.com"}],
    }


def test_typescript_module() -> None:
    module = """import type {SidebarsConfig} from '@docusaurus/plugin-content-docs';
    const sidebars: SidebarsConfig = {
      docs: [{type: 'doc', id: 'x'}] as const,
      other: ['a'] as Array<string>,
    } satisfies SidebarsConfig
    export default sidebars
    """
    assert exported(module) == {"docs": [{"type": "doc", "id": "x"}], "other": ["a"]}
    assert exported("export default {a: ['b']} as const;") == {"a": ["b"]}


@pytest.mark.parametrize(
    ("module", "message"),
    [
        ("const a = 1;", "no module.exports or export default that is data"),
        ("module.exports = makeSidebars();", "no module.exports or export default"),
        ("module.exports = {a: [1, 2", "an array is not closed"),
        ("module.exports = " + "[" * 200 + "]" * 200, "data nested more than 64 deep"),
    ],
)
def test_what_is_not_data_is_refused(module: str, message: str) -> None:
    with pytest.raises(NotData, match=message):
        exported(module)
