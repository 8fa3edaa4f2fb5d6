"""`kit` is the shared toolkit every domain package builds on: it imports no domain package
(only itself, the settings and the table definitions), at the top of a module or inside a
function, so that no domain can be pulled in, or cycled through, by way of kit."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import tomllib
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


def _package_edges(root: Path) -> dict[str, set[str]]:
    """Top-level package (or module) -> the others it imports, anywhere in its code."""
    edges: dict[str, set[str]] = {}
    for path in root.rglob("*.py"):
        if "migrations" in path.parts or (path.parent == root and path.name == "__init__.py"):
            continue
        package = path.relative_to(root).parts[0].removesuffix(".py")
        found = edges.setdefault(package, set())
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == "docshelf" and not node.level:
                names = [f"docshelf.{alias.name}" for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            found.update(
                n.split(".")[1]
                for n in names
                if n.startswith("docshelf.") and n.split(".")[1] != package
            )
    return edges


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one package (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def test_packages_import_in_no_circle() -> None:
    edges = _package_edges(Path(docshelf.__file__).parent)
    # The tables use kit's column types and kit.instance reads its table: one floor in fact.
    edges["kit"].discard("models")
    assert _cycles(edges) == []
    # The check sees a circle when there is one.
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def _floors() -> list[str]:
    pyproject = Path(__file__).parents[1] / "pyproject.toml"
    contracts = tomllib.loads(pyproject.read_text())["tool"]["importlinter"]["contracts"]
    (layers,) = [c["layers"] for c in contracts if c["type"] == "layers"]
    return [name.strip() for layer in layers for name in re.split(r"[|:]", layer)]


def test_every_package_is_on_a_floor() -> None:
    root = Path(docshelf.__file__).parent
    packages = {
        f"docshelf.{p.name.removesuffix('.py')}"
        for p in root.iterdir()
        if (p.is_dir() and (p / "__init__.py").exists() and p.name != "migrations")
        or (p.suffix == ".py" and p.name != "__init__.py")
    }
    assert sorted(packages - set(_floors())) == []


def test_import_contracts_are_kept() -> None:
    lint = Path(sys.executable).parent / "lint-imports"
    done = subprocess.run(
        [str(lint)], cwd=Path(__file__).parents[1], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
