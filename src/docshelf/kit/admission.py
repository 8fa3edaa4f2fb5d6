"""Admission of reads into the app: at most `per_turn` GET/HEAD requests begin in one turn of
the event loop, at most `in_flight` are inside at once, and the others begin later in order of
arrival.

Why: an API process runs every request on one event loop, and a turn of the loop runs every
callback that was ready when it began. The server hands each request to the loop as a task of
its own, and a read on SQLite runs from its first step to its answer without yielding (its
statements run inline, kit/sqlite_inline.py): under 64 connections one turn ran dozens of reads
back to back. Everything else waits for the turn to end: the server's hand-over of a write's
body, then of its end, then of its answer are one wait each, so a write that takes 3 ms alone
took 0.7-2.5 s under the read load of benchmarks/mix.py (30-70 ms with this). Counting the
reads inside does not bound that: a read that never yields is never seen inside by another.
Bounding the reads begun per turn bounds the turn. On PostgreSQL reads yield at each
statement, and a turn holds a step of each read inside: `in_flight` bounds those.

Writes are never held here: they queue where they must (SQLite's one writer, PostgreSQL's pool
gate, kit/db.py), and they are few next to reads. Throughput does not change: the reads that
wait were waiting for the loop anyway, in the same order.

A read gives its place up when its answer starts (a slow client reading a large body holds
none) or after HOLD_SECONDS inside, whichever comes first, so that a read waiting on something
slow (a git history being built, a remote) cannot keep the others out for long.
"""

from __future__ import annotations

import asyncio
from collections import deque

from starlette.types import ASGIApp, Message, Receive, Scope, Send

_READS = frozenset({"GET", "HEAD"})
HOLD_SECONDS = 1.0


class Admission:
    def __init__(self, per_turn: int, in_flight: int = 0) -> None:
        self.per_turn = per_turn
        # 0: no bound on the reads inside at once.
        self.in_flight = in_flight
        self.inside = 0
        self._waiting: deque[asyncio.Future[None]] = deque()
        self._turn_pending = False

    async def enter(self) -> None:
        """Waits for a turn's grant, even on an idle loop (two turns of a few µs): a read let
        in at once would be counted in no turn of its own. Every enter is paired with one
        leave."""
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.append(waiter)
        self._at_next_turn()
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter in self._waiting:
                self._waiting.remove(waiter)
            elif not waiter.cancelled():
                self.leave()  # granted, then cancelled before it resumed
            raise

    def leave(self) -> None:
        self.inside -= 1
        if self._waiting:
            self._at_next_turn()

    def _at_next_turn(self) -> None:
        if not self._turn_pending:
            self._turn_pending = True
            # A callback scheduled now runs in the loop's next turn; scheduling itself again,
            # it runs once in each turn while reads wait and places are free.
            asyncio.get_running_loop().call_soon(self._next_turn)

    def _next_turn(self) -> None:
        self._turn_pending = False
        granted = 0
        while (
            self._waiting
            and granted < self.per_turn
            and (not self.in_flight or self.inside < self.in_flight)
        ):
            waiter = self._waiting.popleft()
            if not waiter.done():  # not cancelled meanwhile
                waiter.set_result(None)  # resumes it in the turn after this one
                granted += 1
                self.inside += 1
        if self._waiting and granted:
            self._at_next_turn()


class AdmissionMiddleware:
    def __init__(
        self,
        app: ASGIApp,
        *,
        per_turn: int,
        in_flight: int = 0,
        hold_seconds: float = HOLD_SECONDS,
    ) -> None:
        self.app = app
        self.admission = Admission(per_turn, in_flight) if per_turn > 0 else None
        self.hold_seconds = hold_seconds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        admission = self.admission
        if admission is None or scope["type"] != "http" or scope["method"] not in _READS:
            await self.app(scope, receive, send)
            return
        await admission.enter()
        held = True

        def leave() -> None:
            nonlocal held
            if held:
                held = False
                admission.leave()

        timer = asyncio.get_running_loop().call_later(self.hold_seconds, leave)

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                leave()
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            timer.cancel()
            leave()
