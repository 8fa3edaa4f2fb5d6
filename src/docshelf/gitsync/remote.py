"""Git Sync with an outside repository: a space linked to a branch of a git remote (any host
with git's smart HTTP, credentials as HTTP basic) is kept in step with it by one job kind.

A sync, queued after each change of main (heard on `content.main_moved`, so the job exists
only if the change commits), on demand and by a periodic sweep:

- reads the remote branch (through the SSRF-guarded fetcher, `transport.py`);
- pushes main when the branch is one of main's commits (or does not exist yet): a
  fast-forward, never forced;
- pulls when the branch has moved past main: its commits are applied as a push to main is
  (`service.apply_ref`: an edit of a live space, a change request under merge rules);
- refuses when both moved (diverged): the error is kept on the link's status, nothing on
  either side changes, until one side is brought up to date by hand.

The network work runs in the job's `prepare` step, with no transaction open; what it found is
applied and recorded in the job's transaction. Every failure is recorded on the link (the job
itself succeeds: the next change, pull or sweep tries again).
"""

from __future__ import annotations

import asyncio
import hmac
import secrets
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Literal

import sqlalchemy as sa
from dulwich.client import HTTPProxyUnauthorized, HTTPUnauthorized
from dulwich.errors import GitProtocolError, NotGitRepository
from dulwich.objects import Commit, ObjectID
from dulwich.refs import Ref
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from docshelf.auth.service import Actor
from docshelf.authz.guard import not_found, require
from docshelf.content.signals import MainMoved
from docshelf.fetch import Fetcher, check_url, parse_allowed_hosts, system_resolver
from docshelf.gitsync import repository, service, transport
from docshelf.gitsync.presenter import present
from docshelf.gitsync.schemas import LinkRemote
from docshelf.kit.clock import utcnow
from docshelf.kit.context import Ctx, Staged
from docshelf.kit.db import unit_of_work
from docshelf.kit.errors import BadRequest, DocshelfError
from docshelf.space import policy as space_policy
from docshelf.space.policy import SpaceAccess
from docshelf.worker.queue import Queued, enqueue, enqueue_many
from docshelf.worker.registry import JobEnv, task

SYNC = "gitsync.sync"
SWEEP = "gitsync.sweep"
# How often every linked space's remote is read (pulls without a webhook).
PULL_EVERY = timedelta(minutes=10)
# A pack fetched or a remote's answer, at most; one request, at most (the whole exchange:
# settings.gitsync_timeout).
MAX_BYTES = 256 * 1024 * 1024
TIMEOUT = 120.0
# Commits walked looking for one in the other side's history.
_MAX_WALK = 100_000
_MAX_ERROR = 500


# The link, on the API


async def _linked(ctx: Ctx, space_id: str) -> tuple[SpaceAccess, sa.RowMapping]:
    space = await space_policy.load(ctx, space_id)
    row = await repository.remote_of(ctx.conn, space_id)
    if row is None:
        not_found("Git Sync")
    return space, row


async def get_link(ctx: Ctx, space_id: str) -> dict[str, Any]:
    _, row = await _linked(ctx, space_id)
    return present(row)


def _require_admin(space: SpaceAccess) -> None:
    require(space_policy.can_admin(space.role), "Only space admins can link a git remote")


async def link(st: Staged, space_id: str, body: LinkRemote) -> dict[str, Any]:
    """Links the space (or changes its link) and queues a first sync. The URL is checked by
    the fetch guard before anything is written, with no transaction open (it resolves the
    host); every request of every sync checks it again."""
    async with st.read() as ctx:
        _require_admin(await space_policy.load(ctx, space_id))
    if "@" in body.url.split("://", 1)[-1].split("/", 1)[0]:
        raise BadRequest("url: give the credentials as username and token, not in the URL")
    allowed = parse_allowed_hosts(st.state.settings.fetch_allowed_hosts)
    targets = await check_url(body.url, resolver=system_resolver, allowed_hosts=allowed)
    target = targets[0]
    if target.url.query or target.url.fragment:
        raise BadRequest("url: a repository URL has no query or fragment")
    # The name (or the IP literal) as exempted: its addresses are resolved again by every sync,
    # and an address exempt now may not be then.
    exempt = target.host in allowed
    if (body.username or body.token) and target.url.scheme == "http" and not exempt:
        # Basic credentials over plain http can be read on the way; a host the operator
        # exempts (DOCSHELF_FETCH_ALLOWED_HOSTS: their own network) may still have them.
        raise BadRequest("url: credentials are sent over https only")
    async with st.write() as ctx:
        _require_admin(await space_policy.load(ctx, space_id))
        now = utcnow()
        values = {
            "url": body.url,
            "branch": body.branch,
            "username": body.username,
            "token": body.token,
            "user_id": ctx.actor.user_id,
            "hook_secret": secrets.token_urlsafe(32),
            "created_at": now,
            "updated_at": now,
        }
        await repository.put_remote(ctx.conn, space_id, values)
        await queue_sync(ctx.conn, space_id)
        row = await repository.remote_of(ctx.conn, space_id)
        assert row is not None
        # Shown to the admin who links, for the git host's webhook settings; never again.
        hook = ctx.app_url(f"git/hooks/{space_id}/{row['hook_secret']}")
        return {**present(row), "webhookUrl": hook}


async def unlink(ctx: Ctx, space_id: str) -> None:
    space, _ = await _linked(ctx, space_id)
    _require_admin(space)
    await repository.delete_remote(ctx.conn, space_id)


async def request_sync(ctx: Ctx, space_id: str) -> dict[str, Any]:
    """A pull now (a webhook's or a writer's): the sync job queued, the link as it is."""
    space, row = await _linked(ctx, space_id)
    require(
        space_policy.can_edit_content(space.role, space.row["edit_mode"]),
        "You cannot sync this space",
    )
    await queue_sync(ctx.conn, space_id)
    return present(row)


async def hooked(engine: AsyncEngine, space_id: str, secret: str) -> bool:
    """A git host's webhook: a sync queued when the secret is the link's (else False, and the
    caller answers as for a missing page)."""
    async with unit_of_work(engine) as conn:
        row = await repository.remote_of(conn, space_id)
        if row is None or not hmac.compare_digest(row["hook_secret"].encode(), secret.encode()):
            return False
        await queue_sync(conn, space_id)
        return True


# Queueing


async def queue_sync(conn: AsyncConnection, space_id: str) -> None:
    """One pending sync a space (a change made while one runs is seen by the sweep, or by the
    run itself, which queues another when main moved under it)."""
    await enqueue(conn, SYNC, {"space": space_id}, dedupe_key=_dedupe(space_id), space=space_id)


def _dedupe(space_id: str) -> str:
    return f"{SYNC}:{space_id}"


async def main_moved(conn: AsyncConnection, event: MainMoved) -> None:
    if await repository.remote_of(conn, event.space_id) is not None:
        await queue_sync(conn, event.space_id)


@task(SWEEP, every=PULL_EVERY)
async def sweep(conn: AsyncConnection, payload: dict[str, Any], *, env: JobEnv) -> None:
    jobs = [
        Queued({"space": space_id}, organization=org_id, dedupe_key=_dedupe(space_id))
        for space_id, org_id in await repository.linked_spaces(conn)
    ]
    await enqueue_many(conn, SYNC, jobs)


# The sync


@dataclass
class _Plan:
    """What a sync's network step found and did."""

    url: str
    branch: str
    action: Literal["push", "pull", "none", "error"]
    main: str | None = None  # main's revision when read
    head: bytes | None = None  # the remote branch after the step
    served: service.Served | None = None
    error: str | None = None
    # Something moved under this run: another sync is queued after it.
    again: bool = False


async def _as_linker(
    conn: AsyncConnection, env: JobEnv, remote: sa.RowMapping
) -> tuple[Ctx, SpaceAccess]:
    """The space as the member who linked it sees it now (their rights are the sync's)."""
    who = await repository.user_of(conn, remote["user_id"]) if remote["user_id"] else None
    if who is None:
        raise BadRequest("The member who linked this remote is gone: link it again")
    actor = Actor(
        user_id=who["id"],
        token_id="",
        email=who["email"],
        display_name=who["display_name"],
        photo_url=who["photo_url"],
    )
    ctx = Ctx(conn=conn, actor=actor, base_url=env.settings.resolved_base_url, state=env)
    return ctx, await space_policy.load(ctx, remote["space_id"])


def _reaches(store: Any, start: bytes | None, wanted: bytes) -> bool:
    """Whether `wanted` is `start` or one of its ancestors (by the objects at hand)."""
    if start is None:
        return False
    seen: set[bytes] = set()
    stack = [start]
    while stack and len(seen) < _MAX_WALK:
        sha = stack.pop()
        if sha == wanted:
            return True
        if sha in seen or sha not in store:
            continue
        seen.add(sha)
        obj = store[ObjectID(sha)]
        if isinstance(obj, Commit):
            stack += obj.parents
    return False


def _exchange(plan: _Plan, remote: sa.RowMapping, pool: transport.GuardedPool) -> _Plan:
    """The network step, blocking (in a thread): dulwich's client, its requests made through
    `pool` on the event loop. What a fetch brings goes to the sync's own store (`served`)."""
    served = plan.served
    assert served is not None and plan.main is not None
    git = transport.client(remote["url"], pool, remote["username"], remote["token"])
    ref = Ref(f"refs/heads/{remote['branch']}".encode())
    head = git.get_refs("").refs.get(ref)
    ours = served.commit_of[plan.main]
    store = served.repo.object_store
    if head == ours:
        plan.action, plan.head = "none", head
        return plan
    if head is None or _reaches(store, ours, head):
        moved: list[bytes | None] = []

        def update(refs: dict[Ref, ObjectID]) -> dict[Ref, ObjectID]:
            # Only over the head this sync read: a branch that moved meanwhile is never
            # overwritten; nothing is pushed and the next sync brings in what arrived.
            if refs.get(ref) != head:
                moved.append(refs.get(ref))
                return dict(refs)
            return {ref: ObjectID(ours)}

        result = git.send_pack(
            "",
            update,
            lambda have, want, **kw: served.repo.generate_pack_data(have, want, **kw),
        )
        if moved:
            plan.action, plan.again = "error", True
            plan.error = f"the remote branch {remote['branch']} moved during the sync: synced again"
            return plan
        refused = (result.ref_status or {}).get(ref)
        if refused:
            raise GitProtocolError(f"the remote refused the push: {refused}")
        plan.action, plan.head = "push", ours
        return plan
    if remote["pulled"] is not None and head.decode() == remote["pulled"]:
        # Pulled already, into a change request still open: nothing new on either side.
        plan.action, plan.head = "none", head
        return plan
    git.fetch("", served.repo, determine_wants=lambda _refs, depth=None: [head])
    if not _reaches(store, head, ours):
        raise GitProtocolError(
            f"the remote branch {remote['branch']} and the space have both changed since they"
            " were last in step: bring one up to date with the other (nothing was changed)"
        )
    plan.action, plan.head = "pull", head
    return plan


def _say(exc: BaseException) -> str:
    if isinstance(exc, HTTPUnauthorized | HTTPProxyUnauthorized):
        return "the remote refused the credentials (HTTP 401): check the username and token"
    if isinstance(exc, NotGitRepository):
        return "no git repository at this URL (HTTP 404)"
    if isinstance(exc, DocshelfError):
        return exc.message
    return str(exc) or type(exc).__name__


async def _prepare(engine: AsyncEngine, payload: dict[str, Any], *, env: JobEnv) -> _Plan | None:
    space_id = payload["space"]
    async with unit_of_work(engine, write=False) as conn:
        remote = await repository.remote_of(conn, space_id)
        if remote is None:
            return None
        plan = _Plan(remote["url"], remote["branch"], "error")
        try:
            ctx, space = await _as_linker(conn, env, remote)
            if not space_policy.can_edit_content(space.role, space.row["edit_mode"]):
                raise BadRequest("The member who linked this remote can no longer edit the space")
            plan.served = await service.served(ctx, space)
            plan.main = plan.served.main
        except DocshelfError as exc:
            plan.error = _say(exc)
            return plan
    fetcher = Fetcher.from_settings(env.settings, max_bytes=MAX_BYTES, timeout=TIMEOUT)
    pool = transport.GuardedPool(
        fetcher, asyncio.get_running_loop(), remote["url"], seconds=env.settings.gitsync_timeout
    )
    try:
        return await asyncio.to_thread(_exchange, plan, remote, pool)
    except Exception as exc:  # whatever the remote or the client did, it is the link's status
        plan.action, plan.error = "error", _say(exc)
    finally:
        # However the wait ended (the job's time limit or the worker's stop cancels it), the
        # thread sends and reads nothing more: no push starts after the job gave up.
        pool.stop()
    return plan


@task(SYNC, prepare=_prepare)
async def sync(
    conn: AsyncConnection, payload: dict[str, Any], plan: _Plan | None, *, env: JobEnv
) -> None:
    if plan is None:
        return
    space_id = payload["space"]
    # Locked: two syncs of one space (a follow-up beside a sweep's) settle one after the other.
    remote = await repository.remote_of(conn, space_id, lock=True)
    if remote is None or (remote["url"], remote["branch"]) != (plan.url, plan.branch):
        return  # unlinked or relinked meanwhile: what was found is of another link
    if plan.action == "pull" and plan.head is not None and remote["pulled"] == plan.head.decode():
        plan.action = "none"  # another sync pulled these very commits meanwhile
    now = utcnow()
    try:
        if plan.action == "pull":
            await _pull(conn, env, remote, plan)
    except service.GitRefusal as exc:
        plan.action, plan.error = "error", f"the remote's commits were not applied: {exc}"
    if plan.action == "error":
        error = (plan.error or "failed")[:_MAX_ERROR]
        await repository.update_remote(
            conn, space_id, {"last_error": error, "last_error_at": now, "updated_at": now}
        )
    else:
        await _synced(conn, space_id, plan, now)
    head = await repository.main_of(conn, space_id)
    if plan.again or (head is not None and plan.main is not None and head != plan.main):
        # Main moved since this run read it (by a change whose own sync this run kept out, or
        # by the pull itself, which the remote may then need on top of its commits), or the
        # remote did: one more run, whether this one succeeded or not (this job holds the
        # dedupe key until it ends, so the changes' own requests were dropped).
        await enqueue(conn, SYNC, {"space": space_id}, space=space_id)


async def _synced(conn: AsyncConnection, space_id: str, plan: _Plan, now: Any) -> None:
    assert plan.head is not None
    values: dict[str, Any] = {
        "remote_commit": plan.head.decode(),
        "last_sync_at": now,
        "last_error": None,
        "last_error_at": None,
        "updated_at": now,
    }
    if plan.action == "push":
        values["last_push_at"] = now
    elif plan.action == "pull":
        values.update(last_pull_at=now, pulled=plan.head.decode())
    await repository.update_remote(conn, space_id, values)


async def _pull(conn: AsyncConnection, env: JobEnv, remote: sa.RowMapping, plan: _Plan) -> None:
    """The remote's commits applied as a push to main, in a savepoint: refused, they leave
    nothing behind and the refusal is recorded."""
    assert plan.served is not None and plan.main is not None and plan.head is not None
    old = plan.served.commit_of[plan.main]
    async with conn.begin_nested():
        try:
            ctx, space = await _as_linker(conn, env, remote)
        except DocshelfError as exc:
            raise service.GitRefusal(exc.message) from None
        await service.apply_ref(ctx, space, plan.served, service.MAIN, old, plan.head)
