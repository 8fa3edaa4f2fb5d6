"""What a package announces inside the transaction that made the change, heard there by the
packages that keep something derived from it (the search index, links, a new space's first
revision, the sites showing a space), so that what they derive commits or rolls back with it.

The announcing package imports none of its listeners: each listener imports the signal it
hears, and `docshelf.wiring` connects them once a process. Receivers must not depend on one
another's order. Built on blinker's signals; a `Signal` adds types and refuses to be sent
before it is wired when something must hear it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

from blinker import Namespace
from sqlalchemy.ext.asyncio import AsyncConnection

E = TypeVar("E")
Receiver = Callable[[AsyncConnection, E], Awaitable[None]]

_NAMESPACE = Namespace()


class NotWired(RuntimeError):
    """A signal that must be heard was sent before `docshelf.wiring.connect()` ran."""


class Signal(Generic[E]):
    def __init__(self, name: str, *, must_be_heard: bool = True) -> None:
        self.name = name
        self._signal = _NAMESPACE.signal(name)
        self._must_be_heard = must_be_heard
        self._adapters: dict[Receiver[E], Callable[..., Awaitable[None]]] = {}

    def connect(self, receiver: Receiver[E]) -> None:
        """Idempotent: wiring twice connects each receiver once."""
        if receiver in self._adapters:
            return

        async def adapter(event: E, *, conn: AsyncConnection) -> None:
            await receiver(conn, event)

        self._adapters[receiver] = adapter
        self._signal.connect(adapter, weak=False)

    def disconnect(self, receiver: Receiver[E]) -> None:
        adapter = self._adapters.pop(receiver, None)
        if adapter is not None:
            self._signal.disconnect(adapter)

    @property
    def receivers(self) -> list[Receiver[E]]:
        return list(self._adapters)

    async def send(self, conn: AsyncConnection, event: E) -> None:
        if self._must_be_heard and not self._adapters:
            raise NotWired(f"signal {self.name!r} sent before docshelf.wiring.connect()")
        await self._signal.send_async(event, conn=conn)

    def __repr__(self) -> str:
        return f"Signal({self.name!r})"
