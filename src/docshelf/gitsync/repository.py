"""Git Sync's SQL: a space's revisions with what their commits need, its open change
requests with their branches, and what a push keeps."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from docshelf.models import (
    change_requests,
    git_branches,
    git_commits,
    git_objects,
    git_remotes,
    revisions,
    spaces,
    users,
)


async def revisions_of(conn: AsyncConnection, space_id: str) -> list[sa.RowMapping]:
    """Every revision of the space, with its author and what a push kept of its commit."""
    stmt = (
        sa.select(
            revisions.c.id,
            revisions.c.type,
            revisions.c.parents,
            revisions.c.pages_root,
            revisions.c.files_root,
            revisions.c.reusable_root,
            revisions.c.created_at,
            revisions.c.space_id,
            revisions.c.author_id,
            users.c.display_name,
            users.c.email,
            git_commits.c.author,
            git_commits.c.author_time,
            git_commits.c.author_timezone,
            git_commits.c.committer,
            git_commits.c.commit_time,
            git_commits.c.commit_timezone,
            git_commits.c.message,
            git_commits.c.pushed,
        )
        .select_from(
            revisions.outerjoin(users, users.c.id == revisions.c.author_id).outerjoin(
                git_commits, git_commits.c.revision_id == revisions.c.id
            )
        )
        .where(revisions.c.space_id == space_id)
    )
    return list((await conn.execute(stmt)).mappings())


async def open_change_requests(conn: AsyncConnection, space_id: str) -> list[sa.RowMapping]:
    stmt = (
        sa.select(
            change_requests.c.id,
            change_requests.c.number,
            change_requests.c.revision_id,
            # What its merges start from: main's revision it was last brought up to (or began on).
            sa.func.coalesce(
                change_requests.c.revision_merged_ancestor, change_requests.c.revision_initial
            ).label("standing_on"),
            git_branches.c.name,
        )
        .select_from(
            change_requests.outerjoin(
                git_branches, git_branches.c.change_request_id == change_requests.c.id
            )
        )
        .where(
            change_requests.c.space_id == space_id,
            change_requests.c.status.in_(("open", "draft")),
        )
        .order_by(change_requests.c.number)
    )
    return list((await conn.execute(stmt)).mappings())


async def add_branch(conn: AsyncConnection, space_id: str, name: str, cr_id: str) -> None:
    await conn.execute(
        sa.insert(git_branches).values(space_id=space_id, name=name, change_request_id=cr_id)
    )


async def keep_commit(conn: AsyncConnection, values: dict[str, Any]) -> None:
    await conn.execute(sa.insert(git_commits).values(**values))


async def objects_of(conn: AsyncConnection, space_id: str) -> list[sa.RowMapping]:
    stmt = sa.select(git_objects.c.sha, git_objects.c.type_num, git_objects.c.data).where(
        git_objects.c.space_id == space_id
    )
    return list((await conn.execute(stmt)).mappings())


async def keep_objects(conn: AsyncConnection, space_id: str, rows: list[dict[str, Any]]) -> None:
    if not rows:
        return
    known = set(
        (
            await conn.execute(
                sa.select(git_objects.c.sha).where(
                    git_objects.c.space_id == space_id,
                    git_objects.c.sha.in_([r["sha"] for r in rows]),
                )
            )
        ).scalars()
    )
    fresh = [{**r, "space_id": space_id} for r in rows if r["sha"] not in known]
    if fresh:
        await conn.execute(sa.insert(git_objects), fresh)


# An outside remote (remote.py)


async def remote_of(
    conn: AsyncConnection, space_id: str, *, lock: bool = False
) -> sa.RowMapping | None:
    stmt = sa.select(git_remotes).where(git_remotes.c.space_id == space_id)
    if lock:
        stmt = stmt.with_for_update()
    return (await conn.execute(stmt)).mappings().first()


async def linked_spaces(conn: AsyncConnection) -> list[tuple[str, str]]:
    """(space, its organization) of every link."""
    stmt = sa.select(git_remotes.c.space_id, spaces.c.organization_id).join(
        spaces, spaces.c.id == git_remotes.c.space_id
    )
    return [(r.space_id, r.organization_id) for r in await conn.execute(stmt)]


async def put_remote(conn: AsyncConnection, space_id: str, values: dict[str, Any]) -> None:
    """Links the space (replacing its link: a new URL or branch starts a new sync history)."""
    found = await remote_of(conn, space_id)
    if found is None:
        await conn.execute(sa.insert(git_remotes).values(space_id=space_id, **values))
        return
    if (found["url"], found["branch"]) != (values["url"], values["branch"]):
        values = {
            **values,
            "remote_commit": None,
            "pulled": None,
            "last_push_at": None,
            "last_pull_at": None,
            "last_sync_at": None,
            "last_error": None,
            "last_error_at": None,
        }
    # The webhook URL stays what the git host was given.
    values = {k: v for k, v in values.items() if k not in ("created_at", "hook_secret")}
    await conn.execute(
        sa.update(git_remotes).where(git_remotes.c.space_id == space_id).values(**values)
    )


async def update_remote(conn: AsyncConnection, space_id: str, values: dict[str, Any]) -> None:
    await conn.execute(
        sa.update(git_remotes).where(git_remotes.c.space_id == space_id).values(**values)
    )


async def delete_remote(conn: AsyncConnection, space_id: str) -> bool:
    result = await conn.execute(sa.delete(git_remotes).where(git_remotes.c.space_id == space_id))
    return bool(result.rowcount)


async def user_of(conn: AsyncConnection, user_id: str) -> sa.RowMapping | None:
    stmt = sa.select(users.c.id, users.c.email, users.c.display_name, users.c.photo_url).where(
        users.c.id == user_id
    )
    return (await conn.execute(stmt)).mappings().first()


async def main_of(conn: AsyncConnection, space_id: str) -> str | None:
    stmt = sa.select(spaces.c.revision_id).where(spaces.c.id == space_id)
    return (await conn.execute(stmt)).scalar_one_or_none()
