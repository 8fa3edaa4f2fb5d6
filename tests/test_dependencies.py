"""Every dependency in pyproject.toml is pinned by a compatible range, never to one version:
a lower bound the code needs and an upper bound before the next incompatible release, so that
an install can take a library's fix (a security release) without a new Docshelf."""

from __future__ import annotations

import tomllib
from pathlib import Path

from packaging.requirements import Requirement

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def _requirements() -> list[str]:
    project = tomllib.loads(PYPROJECT.read_text())["project"]
    listed = list(project["dependencies"])
    for group in project.get("optional-dependencies", {}).values():
        listed += group
    return listed


def unranged(requirements: list[str]) -> list[str]:
    """The requirements not pinned by a range: one exact version, or a missing bound."""
    out = []
    for text in requirements:
        operators = {spec.operator for spec in Requirement(text).specifier}
        exact = operators & {"==", "==="}
        lower = operators & {">=", ">", "~="}
        upper = operators & {"<", "<=", "~="}
        if exact or not lower or not upper:
            out.append(text)
    return out


def test_every_dependency_is_pinned_by_a_range() -> None:
    assert _requirements(), "no dependencies read"
    assert unranged(_requirements()) == []


def test_the_check_refuses_exact_and_open_pins() -> None:
    assert unranged(
        ["fastapi==0.165.0", "a>=1", "b<2", "c", "d>=1,<2", "e~=1.4", "f[x]>=1,<2"]
    ) == [
        "fastapi==0.165.0",
        "a>=1",
        "b<2",
        "c",
    ]
