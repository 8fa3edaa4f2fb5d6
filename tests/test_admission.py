"""kit.admission: at most `per_turn` reads begin in one turn of the event loop, in order of
arrival; writes are never held. Turns are counted by the loop's selector, which the loop asks
once at the start of every turn."""

from __future__ import annotations

import asyncio
import selectors
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from docshelf.kit.admission import Admission, AdmissionMiddleware

T = TypeVar("T")


class CountingSelector(selectors.DefaultSelector):  # type: ignore[misc,valid-type]
    turns = 0

    def select(self, timeout: float | None = None) -> Any:
        self.turns += 1
        return super().select(timeout)


def run(scenario: Callable[[CountingSelector], Awaitable[T]]) -> T:
    selector = CountingSelector()
    with asyncio.Runner(loop_factory=lambda: asyncio.SelectorEventLoop(selector)) as runner:
        return runner.run(scenario(selector))


def _begin_all(per_turn: int, arrivals: list[int]) -> list[tuple[int, int]]:
    """Reads arriving in waves (arrivals[k] new reads in the k-th turn): (read, turn begun)."""

    async def scenario(now: CountingSelector) -> list[tuple[int, int]]:
        admission = Admission(per_turn)
        begun: list[tuple[int, int]] = []

        async def read(n: int) -> None:
            await admission.enter()
            begun.append((n, now.turns))

        tasks = []
        for wave in arrivals:
            for _ in range(wave):
                tasks.append(asyncio.create_task(read(len(tasks))))
            await asyncio.sleep(0)  # the next wave arrives a turn later
        await asyncio.gather(*tasks)
        return begun

    return run(scenario)


@settings(max_examples=60, deadline=None)
@given(
    per_turn=st.integers(min_value=1, max_value=4),
    arrivals=st.lists(st.integers(min_value=0, max_value=9), min_size=1, max_size=6),
)
def test_reads_begin_at_most_per_turn_and_in_order_of_arrival(
    per_turn: int, arrivals: list[int]
) -> None:
    begun = _begin_all(per_turn, arrivals)
    assert [n for n, _ in begun] == list(range(sum(arrivals)))
    per = {t: sum(1 for _, u in begun if u == t) for _, t in begun}
    assert max(per.values(), default=0) <= per_turn


def test_a_burst_is_spread_over_turns() -> None:
    begun = _begin_all(2, [5])
    first = begun[0][1]
    assert [t - first for _, t in begun] == [0, 0, 1, 1, 2]


def test_a_read_cancelled_while_waiting_takes_no_place() -> None:
    async def scenario(_: CountingSelector) -> list[str]:
        admission = Admission(1)
        begun: list[str] = []

        async def read(name: str) -> None:
            await admission.enter()
            begun.append(name)

        first = asyncio.create_task(read("first"))
        gone = asyncio.create_task(read("gone"))
        last = asyncio.create_task(read("last"))
        await asyncio.sleep(0)
        gone.cancel()
        await asyncio.gather(first, last)
        with pytest.raises(asyncio.CancelledError):
            await gone
        return begun

    assert run(scenario) == ["first", "last"]


def _through_middleware(per_turn: int, methods: list[str]) -> list[tuple[str, int]]:
    seen: list[tuple[str, int]] = []

    async def scenario(now: CountingSelector) -> None:
        async def app(scope: Any, receive: Any, send: Any) -> None:
            seen.append((scope["method"], now.turns))
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": b""})

        transport = httpx.ASGITransport(app=AdmissionMiddleware(app, per_turn=per_turn))
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            answers = await asyncio.gather(*(client.request(m, "/") for m in methods))
        assert [a.status_code for a in answers] == [200] * len(methods)

    run(scenario)
    return seen


def test_writes_are_never_held_and_reads_are() -> None:
    seen = _through_middleware(1, ["GET", "GET", "GET", "POST", "PATCH", "DELETE", "HEAD"])
    first = min(t for _, t in seen)
    writes = [t for m, t in seen if m not in ("GET", "HEAD")]
    reads = sorted(t for m, t in seen if m in ("GET", "HEAD"))
    assert writes == [first] * 3
    assert len(set(reads)) == 4  # one read per turn


def test_no_bound_when_per_turn_is_zero() -> None:
    seen = _through_middleware(0, ["GET"] * 6)
    assert len({t for _, t in seen}) == 1


def test_no_more_reads_inside_than_in_flight_until_one_leaves() -> None:
    async def scenario(_: CountingSelector) -> list[list[int]]:
        admission = Admission(per_turn=10, in_flight=2)
        begun: list[int] = []

        async def read(n: int) -> None:
            await admission.enter()
            begun.append(n)

        tasks = [asyncio.create_task(read(n)) for n in range(4)]
        seen = []
        for _ in range(5):
            await asyncio.sleep(0)
        seen.append(list(begun))
        admission.leave()
        for _ in range(5):
            await asyncio.sleep(0)
        seen.append(list(begun))
        admission.leave()
        admission.leave()
        await asyncio.gather(*tasks)
        seen.append(list(begun))
        return seen

    assert run(scenario) == [[0, 1], [0, 1, 2], [0, 1, 2, 3]]


def test_a_read_gives_its_place_up_when_its_answer_starts_or_after_the_hold() -> None:
    """in_flight=1: a read answering at once lets the next one in; a read stuck before its
    answer (waiting on something slow) lets it in after hold_seconds, not when it ends."""

    async def scenario(_: CountingSelector) -> list[str]:
        release = asyncio.Event()
        order: list[str] = []

        async def app(scope: Any, receive: Any, send: Any) -> None:
            order.append(f"begin {scope['path']}")
            if scope["path"] == "/slow":
                await release.wait()
            await send({"type": "http.response.start", "status": 200, "headers": []})
            order.append(f"answered {scope['path']}")
            await send({"type": "http.response.body", "body": b""})

        middleware = AdmissionMiddleware(app, per_turn=1, in_flight=1, hold_seconds=0.2)
        transport = httpx.ASGITransport(app=middleware)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            slow = asyncio.create_task(client.get("/slow"))
            await asyncio.sleep(0.05)
            quick = asyncio.create_task(client.get("/quick"))
            then = asyncio.create_task(client.get("/then"))
            try:
                await asyncio.wait_for(asyncio.gather(quick, then), 5)
            finally:
                release.set()
            await slow
        assert middleware.admission is not None and middleware.admission.inside == 0
        return order

    assert run(scenario) == [
        "begin /slow",
        "begin /quick",
        "answered /quick",
        "begin /then",
        "answered /then",
        "answered /slow",
    ]
