"""`kit` is the shared toolkit every domain package builds on: it imports no domain package
(only itself, the settings and the table definitions), at the top of a module or inside a
function, so that no domain can be pulled in, or cycled through, by way of kit."""

from __future__ import annotations

import ast
from pathlib import Path

import docshelf

_ALLOWED = ("docshelf.kit", "docshelf.config", "docshelf.models")


def _imports(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append(node.module)
        elif isinstance(node, ast.ImportFrom) and node.level:
            found.append("relative")
        elif isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
    return found


def test_kit_imports_no_domain_package() -> None:
    kit = Path(docshelf.__file__).parent / "kit"
    modules = sorted(kit.glob("*.py"))
    assert len(modules) > 10
    leaks = [
        (path.name, name)
        for path in modules
        for name in _imports(path)
        if (name == "docshelf" or name.startswith("docshelf.") or name == "relative")
        and not any(name == a or name.startswith(a + ".") for a in _ALLOWED)
    ]
    assert leaks == []
