"""Pages the size real projects write, built from real documentation: the release notes of Rust
1.94 and 1.95, unchanged in tests/fixtures/imports (see its README.md for where they come from:
the Rust project's RELEASES.md, MIT OR Apache-2.0). Used by the import tests and by
benchmarks/page_limits.py."""

from __future__ import annotations

import re
from pathlib import Path

RUST_NOTES = Path(__file__).parent / "fixtures" / "imports" / "rust-releases-1.94-1.95.md"
_PULL = re.compile(r"\(https://github\.com/rust-lang/rust/pull/(\d+)\)")


def release_notes(size: int, title: str = "Release notes") -> str:
    """The real notes of two releases, again and again for older and older versions, as a
    long-lived project's RELEASES.md grows, cut at a line to at most `size` bytes."""
    real = RUST_NOTES.read_text()
    parts, k, total = [f"# {title}\n\n"], 0, 0
    while total < size:
        part = real.replace("1.95", f"{95 - k}.95").replace("1.94", f"{95 - k}.94")
        parts.append(part)
        total += len(part.encode())
        k += 1
    text = "".join(parts).encode()[:size]
    return text[: text.rfind(b"\n") + 1].decode()


def pull_requests(count: int) -> str:
    """A page of `count` links: the pull requests of the releases, ten a line under a heading
    every hundred, as a changelog's index of them reads."""
    pulls = [int(n) for n in _PULL.findall(RUST_NOTES.read_text())]
    lines = ["# Every pull request\n"]
    for i in range(count):
        n = pulls[i % len(pulls)] - 1000 * (i // len(pulls))
        if i % 100 == 0:
            lines.append(f"\n## Release {i // 100 + 1}\n\n")
        link = f"[#{n}](https://github.com/rust-lang/rust/pull/{n})"
        lines.append(f"- {link}" if i % 10 == 0 else f", {link}")
        if i % 10 == 9 or i == count - 1:
            lines.append("\n")
    return "".join(lines)
