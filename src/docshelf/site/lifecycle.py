"""What spaces leaving an organization does to sites: a space deleted (directly, or with its
collection) or transferred to another organization leaves no site space behind. Hears the spaces
package's `left` signal, in the transaction that deletes or transfers them."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy.ext.asyncio import AsyncConnection

from docshelf.site import repository, structure
from docshelf.space.signals import SpacesLeft


async def detach_spaces(conn: AsyncConnection, space_ids: Sequence[str]) -> None:
    if not space_ids:
        return
    wanted = set(space_ids)
    for site_id in await repository.sites_showing(conn, space_ids):
        # Sites in id order, each locked: two detaching writers queue in the same order.
        await repository.lock_site(conn, site_id)
        for row in await repository.all_site_spaces(conn, site_id):
            if row["space_id"] in wanted:
                # Re-read: removing one may have removed its section and its siblings.
                current = await repository.get_site_space(conn, site_id, row["id"])
                if current is not None:
                    await structure.remove_site_space(conn, site_id, current)


async def spaces_left(conn: AsyncConnection, event: SpacesLeft) -> None:
    await detach_spaces(conn, event.space_ids)
