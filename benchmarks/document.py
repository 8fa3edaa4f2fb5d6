"""Markdown <-> GitBook JSON document conversion time against size (document/model.py).

Builds a page of every kind of block (hints, tabs, expandables, tables, lists, code, math...)
repeated n times, and times markdown -> document (a fresh parse: the memo is bypassed) and
document -> markdown (validation included) at 1x, 4x and 16x. Linear conversion keeps the
per-block cost flat as the page grows.

    PYTHONPATH=src python benchmarks/document.py
"""

from __future__ import annotations

import time

from docshelf.document import model as document

UNIT = """\
## Section

Text with **bold**, _italic_, `code`, a [link](/pages/abc#part) and $$x^2$$.

{% hint style="info" %}

A hint with a list:

- one
- two

{% endhint %}

{% tabs %}
{% tab title="Python" %}

```python
print("hi")
```

{% endtab %}
{% endtabs %}

<details>

<summary>More</summary>

> Quoted text.

</details>

| Name | Size |
| --- | --: |
| a | 1 |

1. first
2. second

- [ ] todo
- [x] done

$$
E = mc^2
$$
"""


def best(fn: object, arg: object, rounds: int = 5) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn(arg)  # type: ignore[operator]
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    print(
        f"{'blocks':>8} {'md bytes':>9} {'md->doc ms':>11} {'per unit us':>12} "
        f"{'doc->md ms':>11} {'per unit us':>12}"
    )
    for n in (25, 100, 400):
        markdown = UNIT * n
        doc, _ = document.convert(markdown)
        to_doc = best(lambda m: document.convert(m), markdown)
        to_md = best(document.document_to_markdown, doc)
        print(
            f"{n:>8} {len(markdown):>9} {to_doc * 1000:>11.1f} {to_doc / n * 1e6:>12.0f} "
            f"{to_md * 1000:>11.1f} {to_md / n * 1e6:>12.0f}"
        )


if __name__ == "__main__":
    main()
