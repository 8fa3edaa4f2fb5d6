"""mkdocs / pymdownx / Docusaurus markdown rewritten into GitBook markdown (imports.dialects):
whole outputs for each construct, and the safe YAML reader."""

from __future__ import annotations

import pytest

from docshelf.imports.dialects import (
    Notes,
    convert,
    docusaurus_paths,
    front_matter,
    humanize,
    load_yaml,
)

SNIPPETS = {"inc/abbr.md": "Included *text*.\n", "inc/loop.md": '--8<-- "inc/loop.md"\n'}


def run(text: str) -> tuple[str, Notes]:
    notes = Notes()
    return convert(text, SNIPPETS.get, notes), notes


CASES = {
    "heading attribute lists": (
        "# Title { #top }\n\n## Part {#part .wide}\n\n### Plain {: .x }\n",
        '# Title <a href="#top" id="top"></a>\n\n'
        '## Part <a href="#part" id="part"></a>\n\n### Plain\n',
    ),
    "mkdocs admonitions": (
        '!!! note "Read this"\n    Body.\n\n    More.\n\n!!! warning\n    Careful.\n\n'
        '!!! tip ""\n    No title.\n\nAfter.\n',
        '{% hint style="info" %}\n**Read this**\n\nBody.\n\nMore.\n{% endhint %}\n\n'
        '{% hint style="warning" %}\n**Warning**\n\nCareful.\n{% endhint %}\n\n'
        '{% hint style="success" %}\nNo title.\n{% endhint %}\n\nAfter.\n',
    ),
    "collapsible admonitions are expandables": (
        '??? tip "More"\n    Hidden.\n\n???+ danger\n    Open.\n',
        "<details>\n\n<summary>More</summary>\n\nHidden.\n\n</details>\n\n"
        "<details>\n\n<summary>Danger</summary>\n\nOpen.\n\n</details>\n",
    ),
    "pymdownx blocks": (
        "/// tip | Title\nTipped.\n///\n\n/// details | Open me\nInside.\n///\n",
        '{% hint style="success" %}\n**Title**\n\nTipped.\n{% endhint %}\n\n'
        "<details>\n\n<summary>Open me</summary>\n\nInside.\n\n</details>\n",
    ),
    "Docusaurus admonitions": (
        ":::tip[Pro tip]\nDo it.\n:::\n\n:::caution Watch out\nHot.\n:::\n\n:::note\nN.\n:::\n",
        '{% hint style="success" %}\n**Pro tip**\n\nDo it.\n{% endhint %}\n\n'
        '{% hint style="warning" %}\n**Watch out**\n\nHot.\n{% endhint %}\n\n'
        '{% hint style="info" %}\nN.\n{% endhint %}\n',
    ),
    "nested admonitions": (
        "!!! note\n    Outer.\n\n    !!! danger\n        Inner.\n",
        '{% hint style="info" %}\n**Note**\n\nOuter.\n\n'
        '{% hint style="danger" %}\n**Danger**\n\nInner.\n{% endhint %}\n{% endhint %}\n',
    ),
    "content tabs": (
        '=== "Linux"\n    apt install\n\n=== "macOS"\n    brew install\n\nAfter.\n',
        '{% tabs %}\n{% tab title="Linux" %}\napt install\n{% endtab %}\n'
        '{% tab title="macOS" %}\nbrew install\n{% endtab %}\n{% endtabs %}\n\nAfter.\n',
    ),
    "code fences are left alone": (
        '```md\n!!! note\n    not an admonition\n=== "x"\n```\n',
        '```md\n!!! note\n    not an admonition\n=== "x"\n```\n',
    ),
    "Docusaurus tabs": (
        '<Tabs>\n  <TabItem value="npm" label="npm">\n\n  ```sh\n  npm i\n  ```\n\n'
        '  </TabItem>\n  <TabItem value="yarn">\n    yarn add\n  </TabItem>\n</Tabs>\n',
        '{% tabs %}\n{% tab title="npm" %}\n\n```sh\nnpm i\n```\n\n{% endtab %}\n'
        '{% tab title="yarn" %}\nyarn add\n{% endtab %}\n{% endtabs %}\n',
    ),
    "Docusaurus tabs labelled by <Tabs values>, tags over several lines": (
        '<Tabs\n  groupId="lang"\n  defaultValue="js"\n'
        "  values={[\n    {label: 'JavaScript', value: 'js'},\n"
        "    {label: 'Python', value: 'py'},\n  ]}>\n"
        '<TabItem value="js">\n\nconst x = 1;\n\n</TabItem>\n'
        "<TabItem\n  value='py'\n  label={'Python 3'}>\n\nx = 1\n\n</TabItem>\n</Tabs>\n",
        '{% tabs %}\n{% tab title="JavaScript" %}\n\nconst x = 1;\n\n{% endtab %}\n'
        '{% tab title="Python 3" %}\n\nx = 1\n\n{% endtab %}\n{% endtabs %}\n',
    ),
    "Docusaurus tabs written on one line each, or closed after their text": (
        '<Tabs>\n<TabItem value="a" label="Apple">Apple text</TabItem>\n'
        '<TabItem value="b" label="Banana">Banana text</TabItem>\n'
        '<TabItem value="c" label="Cherry">\nCherry one\nCherry two</TabItem>\n'
        '<TabItem value="d" label="Date">\nLeft open\n</Tabs>\n',
        '{% tabs %}\n{% tab title="Apple" %}\nApple text\n{% endtab %}\n'
        '{% tab title="Banana" %}\nBanana text\n{% endtab %}\n'
        '{% tab title="Cherry" %}\nCherry one\nCherry two\n{% endtab %}\n'
        '{% tab title="Date" %}\nLeft open\n{% endtab %}\n{% endtabs %}\n',
    ),
    "Docusaurus tabs: text after the opening tag, and tags inside a tab's code are code": (
        '<Tabs>\n<TabItem value="p" label="Python">Run:\n```bash\npip install x\n```\n'
        "</TabItem>\n"
        '<TabItem value="d" label="Docs">\n```jsx\n<TabItem value="a">A</TabItem>\n```\n'
        "After the fence.\n</TabItem>\n</Tabs>\n",
        '{% tabs %}\n{% tab title="Python" %}\nRun:\n```bash\npip install x\n```\n{% endtab %}\n'
        '{% tab title="Docs" %}\n```jsx\n<TabItem value="a">A</TabItem>\n```\n'
        "After the fence.\n{% endtab %}\n{% endtabs %}\n",
    ),
    "snippets are inlined": ('--8<-- "inc/abbr.md"\n', "Included *text*.\n\n"),
}


@pytest.mark.parametrize(("source", "expected"), CASES.values(), ids=CASES.keys())
def test_dialects(source: str, expected: str) -> None:
    assert run(source) == (expected, Notes())


def test_unresolved_and_approximated_are_noted() -> None:
    text, notes = run('--8<-- "nope.md"\n\n!!! custom\n    Odd.\n\n--8<-- "inc/loop.md"\n')
    # The include that includes itself stops, reported, after MAX_INCLUDE_DEPTH rounds.
    assert text == '\n{% hint style="info" %}\n**Custom**\n\nOdd.\n{% endhint %}' + "\n" * 6
    assert notes == Notes(
        unresolved=["nope.md"],
        approximated=[
            'admonition type "custom" shown as an info hint',
            "snippet 'inc/loop.md' left out: includes nest more than 4 deep",
        ],
    )


def test_yaml_tolerates_unknown_tags_and_builds_nothing() -> None:
    config = load_yaml(
        "site_name: X\n"
        "fence: !!python/name:pymdownx.superfences.fence_code_format\n"
        "obj: !!python/object/apply:os.system ['echo pwned']\n"
        "env: !ENV [HOME, /x]\n"
    )
    assert config == {
        "site_name": "X",
        "fence": "",
        "obj": ["echo pwned"],
        "env": ["HOME", "/x"],
    }
    assert load_yaml("a: [unclosed") is None


def test_front_matter_and_humanize() -> None:
    assert front_matter("---\ntitle: T\nsidebar_position: 2\n---\n# Body\n") == (
        {"title": "T", "sidebar_position": 2},
        "# Body\n",
    )
    assert front_matter("---\n\nJust a divider\n") == ({}, "---\n\nJust a divider\n")
    assert humanize("01-getting_started.md") == "Getting started"
    assert humanize("about") == "About"


def test_deep_nesting_stays_text() -> None:
    """Containers nested past MAX_NESTING are kept as written, so a page made of nothing but
    openers costs a bounded number of passes."""
    text = "".join(f":::{'note' if i % 2 else 'tip'}\n" for i in range(40))
    out, notes = run(text)
    assert out.count("{% hint") == 16
    assert notes.approximated == ["blocks nested more than 16 deep kept as text"]


def test_the_api_process_loads_no_worker_libraries() -> None:
    """mammoth, the project readers, HTML conversion, Pillow, WeasyPrint, pysaml2, the OpenAPI
    validator, PyJWT and redis-py load where they work (the offload or job worker, or on first
    use), not in every API process: together they are most of its resident size. So do
    Alembic (migrations; /readyz reads the heads itself), httpx (with its command line's
    click and rich: loaded on the first fetch), and the reader's Pygments, nh3 and Jinja2 and
    the sites' jsonschema (on the first page published or schema checked), and limits (with a
    Redis counter store only). Checked on a made app, not only its import: making one used to
    load httpx for the fetcher's TLS context."""
    import subprocess
    import sys

    code = (
        "import pathlib, sys, tempfile, docshelf.app\n"
        "from docshelf.config import Settings\n"
        "docshelf.app.create_app(Settings(data_dir=pathlib.Path(tempfile.mkdtemp())))\n"
        "heavy = ('mammoth', 'docx', 'docshelf.imports.projects', 'docshelf.imports.docx',\n"
        "         'bs4', 'markdownify', 'PIL', 'weasyprint', 'saml2', 'xmlschema',\n"
        "         'openapi_spec_validator', 'jwt', 'redis', 'emoji', 'alembic', 'mako',\n"
        "         'httpx', 'rich', 'pygments', 'nh3', 'jinja2', 'jsonschema', 'limits')\n"
        "print([m for m in heavy if m in sys.modules])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    assert out.stdout.strip() == "[]"


def test_docusaurus_static_paths_are_paths_from_the_root() -> None:
    text = (
        "![a](../static/img/a.png) ![b](../../static/img/b.png) ![c](@site/static/c.png)\n"
        "<img src={useBaseUrl('img/logo.svg')} /> <img src={require('./d.png').default} />\n"
        "<img src={useBaseUrl('/e.png')} /> [static](static/page.md)\n"
    )
    assert docusaurus_paths(text) == (
        "![a](/img/a.png) ![b](/img/b.png) ![c](/c.png)\n"
        '<img src="/img/logo.svg" /> <img src="./d.png" />\n'
        '<img src="/e.png" /> [static](static/page.md)\n'
    )


def test_mdx_exports_and_generated_api_references_are_left_out_and_noted() -> None:
    text, notes = run(
        "export const Logo = ({ children }) => (\n  <div style={{a: 1}}>\n    x\n  </div>\n)\n\n"
        "Text.\n\n::: httpx.request\n    :docstring:\n\n::: httpx.get\n\nAfter.\n"
    )
    assert text == "\nText.\n\n\n\nAfter.\n"
    assert notes == Notes(
        approximated=[
            "MDX export left out: export const Logo = ({ children }) => (",
            "2 API reference blocks (::: httpx.request, httpx.get) left out: "
            "mkdocstrings/mkautodoc generate them from code",
        ]
    )
