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
