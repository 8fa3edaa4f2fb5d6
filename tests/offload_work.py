"""Module-level work for the offload tests: a spawned worker process imports it by name."""

from __future__ import annotations

import time


def sleep_then(seconds: float, value: str) -> str:
    time.sleep(seconds)
    return value


def fail(message: str) -> None:
    raise ValueError(message)


def allocate(size: int) -> int:
    return len(bytearray(size))


def hold_until(started: str, gate: str, limit: float) -> str:
    """Holds its worker like a long render: says it started (a file), then waits for `gate`
    to appear (another file), at most `limit` seconds."""
    import pathlib

    pathlib.Path(started).touch()
    deadline = time.monotonic() + limit
    while not pathlib.Path(gate).exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    return "released"


def log_and_hold(log: str, name: str, gate: str, limit: float) -> str:
    """Appends `name` to `log` when it starts, then holds its worker until `gate` exists."""
    import pathlib

    with open(log, "a") as out:
        out.write(name + "\n")
    deadline = time.monotonic() + limit
    while not pathlib.Path(gate).exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    return name
