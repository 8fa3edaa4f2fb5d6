"""No route's endpoint or dependency is a plain function: FastAPI runs those in its thread pool,
a hop to a thread and back through the event loop for every request (under the mix's load each
hop waits for the loop to come round). Checked on the app's route table, no database."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from docshelf.app import create_app
from docshelf.config import Settings


def _contexts(routes: list[Any]) -> Iterator[Any]:
    for route in routes:
        effective = getattr(route, "effective_route_contexts", None)
        if effective is not None:
            yield from effective()
        else:
            yield route


def _plain(dependant: Any, where: str) -> Iterator[str]:
    call = dependant.call
    if call is not None and not (
        inspect.iscoroutinefunction(call) or inspect.isasyncgenfunction(call)
    ):
        yield f"{where}: {getattr(call, '__module__', '?')}.{getattr(call, '__qualname__', call)}"
    for sub in dependant.dependencies:
        yield from _plain(sub, where)


def test_every_endpoint_and_dependency_is_a_coroutine(tmp_path: Path) -> None:
    app = create_app(Settings(data_dir=tmp_path))
    found = []
    routes = 0
    for context in _contexts(app.router.routes):
        dependant = getattr(context, "dependant", None)
        if dependant is None:
            continue
        routes += 1
        found += _plain(dependant, f"{sorted(getattr(context, 'methods', ()))} {context.path}")
    assert routes > 100
    assert sorted(set(found)) == []
