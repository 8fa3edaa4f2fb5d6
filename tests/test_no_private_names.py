"""Docshelf reaches no private name of a library: no `_`-prefixed module, function, class or
attribute of SQLAlchemy, asyncpg, aiosqlite, FastAPI, Starlette, granian, uvicorn, pydantic or
any other package it depends on, so that a library's release (a security fix) cannot break it
silently. Read from the source (an AST walk), no database."""

from __future__ import annotations

import ast
import importlib
import inspect
import sys
from pathlib import Path

import docshelf

SRC = Path(docshelf.__file__).parent
# Loaded for their names even where the app loads them only when it connects or serves.
LIBRARIES = (
    "aiosqlite",
    "asyncpg",
    "fastapi",
    "granian",
    "pydantic",
    "sqlalchemy.dialects.postgresql.asyncpg",
    "sqlalchemy.dialects.sqlite.aiosqlite",
    "sqlalchemy.ext.asyncio",
    "starlette",
    "uvicorn",
)


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _ours(module: str) -> bool:
    return module == "docshelf" or module.startswith("docshelf.")


def _sources() -> list[tuple[str, Path, ast.Module]]:
    out = []
    for path in sorted(SRC.rglob("*.py")):
        module = ".".join(("docshelf", *path.relative_to(SRC).with_suffix("").parts))
        module = module.removesuffix(".__init__")
        out.append((module, path, ast.parse(path.read_text(), str(path))))
    return out


SOURCES = _sources()


def _own_names() -> set[str]:
    """Every `_` name Docshelf defines itself: its functions, classes, module and class
    attributes, instance attributes it assigns, slots and keyword parameters."""
    names: set[str] = set()
    for _, _, tree in SOURCES:
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                names.add(node.attr)
            elif isinstance(node, ast.arg):
                names.add(node.arg)
            elif isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "__slots__" for t in node.targets
            ):
                names.update(
                    c.value
                    for c in ast.walk(node.value)
                    if isinstance(c, ast.Constant) and isinstance(c.value, str)
                )
    return {n for n in names if _private(n)}


def _foreign_bases(module: str, cls: str) -> list[type]:
    """The classes outside Docshelf (and outside `object`) that `module.cls` inherits from."""
    found = getattr(importlib.import_module(module), cls, None)
    if not inspect.isclass(found):
        return []
    return [
        base
        for base in found.__mro__[1:]
        if base is not object and not _ours(getattr(base, "__module__", "") or "")
    ]


def _declared_in_class(node: ast.ClassDef) -> set[str]:
    """What the class body defines or its methods assign on `self` / `cls`."""
    names: set[str] = set()
    for item in ast.walk(node):
        if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and item in node.body:
            names.add(item.name)
        elif isinstance(item, ast.Name) and isinstance(item.ctx, ast.Store):
            names.add(item.id)
        elif (
            isinstance(item, ast.Attribute)
            and isinstance(item.ctx, ast.Store)
            and isinstance(item.value, ast.Name)
            and item.value.id in ("self", "cls")
        ):
            names.add(item.attr)
        elif isinstance(item, ast.Constant) and isinstance(item.value, str):
            names.add(item.value)  # __slots__
    return names


def _their_names() -> set[str]:
    """The `_` names of the libraries Docshelf loads: of their modules and their classes. A
    name Docshelf defines too is still the library's when read off anything but `self`."""
    import docshelf.app  # noqa: F401  (loads what the app loads)

    for library in LIBRARIES:
        importlib.import_module(library)

    names: set[str] = set()
    for name, loaded in list(sys.modules.items()):
        top = name.split(".")[0]
        if top in sys.stdlib_module_names or _ours(name) or loaded is None:
            continue
        for attr, value in list(vars(loaded).items()):
            if _private(attr):
                names.add(attr)
            if inspect.isclass(value) and value.__module__ == name:
                names.update(a for a in dir(value) if _private(a))
    return names


def reaches(
    module: str,
    path: Path,
    tree: ast.Module,
    own: set[str],
    theirs: frozenset[str] | set[str] = frozenset(),
    *,
    runtime: bool = True,
) -> list[str]:
    """The private names of other packages this module reaches, as `file:line what`."""
    where = path.relative_to(SRC.parent)
    found: list[str] = []
    foreign_modules: set[str] = set()  # local names bound to a library's module or object
    standard: set[str] = set()  # local names bound to the standard library's
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in sys.stdlib_module_names:
                    standard.add(alias.asname or alias.name.split(".")[0])
                if _ours(alias.name) or alias.name.split(".")[0] in sys.stdlib_module_names:
                    continue
                if any(_private(part) for part in alias.name.split(".")):
                    found.append(f"{where}:{node.lineno} import {alias.name}")
                foreign_modules.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if _ours(node.module) or node.module.split(".")[0] in sys.stdlib_module_names:
                continue
            if any(_private(part) for part in node.module.split(".")):
                found.append(f"{where}:{node.lineno} from {node.module} import")
            for alias in node.names:
                if _private(alias.name):
                    found.append(f"{where}:{node.lineno} from {node.module} import {alias.name}")
                foreign_modules.add(alias.asname or alias.name)
    class_nodes = [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]
    innermost: dict[int, ast.ClassDef] = {}
    for cls in class_nodes:  # outer classes first: inner ones overwrite
        for item in ast.walk(cls):
            innermost[id(item)] = cls
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "setattr", "hasattr", "delattr")
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
            and _private(node.args[1].value)
            and node.args[1].value not in own
        ):
            found.append(f"{where}:{node.lineno} {node.func.id}(…, {node.args[1].value!r})")
        if not isinstance(node, ast.Attribute) or not _private(node.attr):
            continue
        value = node.value
        if isinstance(value, ast.Name) and value.id in ("self", "cls"):
            cls = innermost.get(id(node))
            if cls is None:
                continue
            bases = _foreign_bases(module, cls.name) if runtime else []
            if not bases:
                continue
            # On a class that extends a library's class: a name the library's class has, or
            # one this class never sets itself, is the library's.
            inherited = any(hasattr(base, node.attr) for base in bases)
            if inherited or node.attr not in _declared_in_class(cls) | own:
                found.append(f"{where}:{node.lineno} {value.id}.{node.attr} (of {cls.name}'s base)")
            continue
        if isinstance(value, ast.Name) and value.id in standard:
            continue
        if isinstance(value, ast.Name) and value.id in foreign_modules:
            found.append(f"{where}:{node.lineno} {value.id}.{node.attr}")
        elif node.attr not in own or node.attr in theirs:
            found.append(f"{where}:{node.lineno} ….{node.attr}")
    for cls in class_nodes:
        # A private hook of a library's class, overridden: its protocol is private too.
        if not runtime:
            continue
        bases = _foreign_bases(module, cls.name)
        for item in cls.body:
            if (
                isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
                and _private(item.name)
                and any(hasattr(base, item.name) for base in bases)
            ):
                found.append(f"{where}:{item.lineno} def {cls.name}.{item.name} (overrides)")
    return found


def test_no_private_name_of_a_library_is_reached() -> None:
    own, theirs = _own_names(), _their_names()
    found = [
        hit for module, path, tree in SOURCES for hit in reaches(module, path, tree, own, theirs)
    ]
    assert found == []


def test_the_walk_sees_each_kind_of_reach() -> None:
    """The check itself: each kind of reach in a snippet is found, own names are not."""
    source = """
import sqlalchemy as sa
from sqlalchemy.engine import _row
from sqlalchemy.sql.compiler import _CompileLabel
import aiosqlite.core._x

def f(compiled, conn, plan):
    compiled._result_columns
    conn.sync_connection.connection.dbapi_connection._connection
    sa._private_thing
    conn._execute(1)
    getattr(conn, "_conn")
    plan._own_helper
    return self._anything_without_a_class

def _own_helper():
    pass
"""
    tree = ast.parse(source)
    own = {"_own_helper", "_execute"}
    hits = reaches("docshelf.kit.db", SRC / "kit" / "x.py", tree, own, {"_execute"}, runtime=False)
    assert sorted(h.split(" ", 1)[1] for h in hits) == sorted(
        [
            "from sqlalchemy.engine import _row",
            "from sqlalchemy.sql.compiler import _CompileLabel",
            "import aiosqlite.core._x",
            "…._result_columns",
            "…._connection",
            "sa._private_thing",
            "…._execute",
            "getattr(…, '_conn')",
        ]
    )
