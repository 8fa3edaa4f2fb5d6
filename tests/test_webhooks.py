"""Webhooks over HTTP, delivered by the real job runner to real HTTP receivers on loopback."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import orjson
import pytest
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine
from standardwebhooks import Webhook

from docshelf.change_request import service as change_request_service
from docshelf.config import Settings
from docshelf.events import outbox
from docshelf.kit.clock import clock
from docshelf.kit.db import unit_of_work
from docshelf.models import events, jobs, webhook_deliveries
from docshelf.webhooks import delivery
from docshelf.worker.queue import enqueue, make_due
from docshelf.worker.registry import JobEnv
from docshelf.worker.runner import JobRunner
from tests import factories
from tests.conftest import FROZEN
from tests.helpers import error

CREATED_AT = "2026-01-02T03:04:05.678Z"


# -- receivers --------------------------------------------------------------------------------


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Receiver:
    base: str
    got: list[Received] = field(default_factory=list)
    # Set at teardown: a receiver that never answers lets go of its connections.
    release: threading.Event = field(default_factory=threading.Event)

    @property
    def url(self) -> str:
        return f"{self.base}/hook"


# How a receiver answers its nth request (0-based): (status, headers), or None: never.
Behaviour = Callable[[int, Receiver], tuple[int, dict[str, str]] | None]


class _Server(ThreadingHTTPServer):
    # A batch's POSTs connect at once: a listen backlog of the default 5 can refuse some.
    request_queue_size = 64


@pytest.fixture
def receiver() -> Iterator[Callable[[Behaviour], Receiver]]:
    servers: list[tuple[ThreadingHTTPServer, Receiver]] = []

    def start(behaviour: Behaviour) -> Receiver:
        lock = threading.Lock()

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                with lock:
                    n = len(state.got)
                    state.got.append(
                        Received(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                    )
                answer = behaviour(n, state)
                if answer is None:
                    state.release.wait(30)
                    return
                status, headers = answer
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args: Any) -> None:
                pass

        server = _Server(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        state = Receiver(f"http://127.0.0.1:{server.server_address[1]}")
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append((server, state))
        return state

    yield start
    for server, state in servers:
        state.release.set()
        server.shutdown()
        server.server_close()


def ok(_n: int, _r: Receiver) -> tuple[int, dict[str, str]]:
    return 200, {}


@pytest.fixture
def loopback(settings: Settings) -> Settings:
    """Deliveries may reach loopback receivers. They give up after 30 s, so that a pause of the
    loaded test process (a full garbage collection beside the other pass) never fails one;
    the test of the deadline sets its own."""
    return settings.model_copy(update={"fetch_allowed_hosts": "127.0.0.1", "webhook_timeout": 30})


# -- helpers ----------------------------------------------------------------------------------


async def run_jobs(db: AsyncEngine, job_env: JobEnv) -> None:
    await JobRunner(db, job_env).drain()


async def retry_now(db: AsyncEngine, job_env: JobEnv) -> None:
    """Brings the waiting retries forward, then runs them."""
    async with unit_of_work(db) as conn:
        await make_due(conn, delivery.DELIVER)
    await run_jobs(db, job_env=job_env)


async def create_hook(
    client: httpx.AsyncClient, org_id: str, who: factories.Who, **body: Any
) -> dict[str, Any]:
    r = await client.post(f"/v1/orgs/{org_id}/webhooks", json=body, headers=who.headers)
    assert r.status_code == 201, r.text
    hook: dict[str, Any] = r.json()
    return hook


async def deliveries(
    client: httpx.AsyncClient, org_id: str, hook_id: str, who: factories.Who
) -> list[dict[str, Any]]:
    r = await client.get(f"/v1/orgs/{org_id}/webhooks/{hook_id}/deliveries", headers=who.headers)
    assert r.status_code == 200, r.text
    items: list[dict[str, Any]] = r.json()["items"]
    return items


async def new_space(client: httpx.AsyncClient, org_id: str, who: factories.Who) -> str:
    space = await factories.api_space(client, org_id, who, title="Guide")
    return str(space["id"])


async def event_count(db: AsyncEngine) -> int:
    async with unit_of_work(db, write=False) as conn:
        return int((await conn.execute(sa.select(sa.func.count()).select_from(events))).scalar())


# -- the API ----------------------------------------------------------------------------------


async def test_create_get_update_rotate_delete(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org_id, (admin,) = await factories.org_with_members(db)
    space_id = await new_space(client, org_id, admin)
    url = f"/v1/orgs/{org_id}/webhooks"
    r = await client.post(
        url,
        json={
            "url": "https://ci.example.com/docs",
            "events": ["space_content_updated", "space_created", "space_created"],
            "space": space_id,
        },
        headers=admin.headers,
    )
    assert r.status_code == 201, r.text
    created = r.json()
    secret = created.pop("secret")
    assert secret.startswith("whsec_") and len(secret) > 30
    hook_id = created["id"]
    expected = {
        "object": "webhook",
        "id": hook_id,
        "url": "https://ci.example.com/docs",
        "events": ["space_content_updated", "space_created"],
        "space": space_id,
        "active": True,
        "disabledAt": None,
        "createdAt": CREATED_AT,
        "updatedAt": CREATED_AT,
    }
    assert created == expected
    # The secret is shown once: never by a read.
    r = await client.get(f"{url}/{hook_id}", headers=admin.headers)
    assert r.status_code == 200 and r.json() == expected
    r = await client.get(url, headers=admin.headers)
    assert r.json() == {"items": [expected], "count": 1}

    r = await client.patch(
        f"{url}/{hook_id}",
        json={"url": "http://ci.example.com/v2", "events": [], "active": False},
        headers=admin.headers,
    )
    assert r.status_code == 200, r.text
    updated = {**expected, "url": "http://ci.example.com/v2", "events": [], "active": False}
    assert r.json() == updated

    for field_name in ("url", "events", "active"):
        r = await client.patch(f"{url}/{hook_id}", json={field_name: None}, headers=admin.headers)
        assert r.status_code == 400
        assert r.json() == error(400, f"Invalid body field '{field_name}': must not be null")
    for bad in ("file:///etc", "https://me:pw@ci.example.com/v3", "https://ci.example.com:0/"):
        r = await client.patch(f"{url}/{hook_id}", json={"url": bad}, headers=admin.headers)
        assert r.status_code == 400, bad
    assert (await client.get(f"{url}/{hook_id}", headers=admin.headers)).json() == updated

    r = await client.post(f"{url}/{hook_id}/secret", headers=admin.headers)
    assert r.status_code == 200, r.text
    rotated = r.json().pop("secret")
    assert rotated.startswith("whsec_") and rotated != secret

    r = await client.delete(f"{url}/{hook_id}", headers=admin.headers)
    assert r.status_code == 204
    r = await client.get(f"{url}/{hook_id}", headers=admin.headers)
    assert r.status_code == 404 and r.json() == error(404, "Webhook not found")


async def test_list_is_paged(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org_id, (admin,) = await factories.org_with_members(db)
    made = []
    for n in range(3):
        made.append((await create_hook(client, org_id, admin, url=f"https://e.com/{n}"))["id"])
        clock.advance(timedelta(seconds=1))
    url = f"/v1/orgs/{org_id}/webhooks"
    r = await client.get(url, params={"limit": 2}, headers=admin.headers)
    first = r.json()
    assert [h["id"] for h in first["items"]] == made[:2] and first["count"] == 3
    r = await client.get(
        url, params={"limit": 2, "page": first["next"]["page"]}, headers=admin.headers
    )
    assert [h["id"] for h in r.json()["items"]] == made[2:] and "next" not in r.json()


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"url": "ftp://e.com/x"}, "Invalid body field 'url'"),
        ({"url": "http://me:pw@e.com/x"}, "user names and passwords in URLs are not allowed"),
        ({"url": "http://me@e.com/x"}, "user names and passwords in URLs are not allowed"),
        ({"url": "https:///x"}, "the URL has no host"),
        ({"url": "https://e.com:99999/x"}, "Invalid body field 'url': Port out of range"),
        ({"url": "https://e.com:0/x"}, "port 0 is out of range"),
        ({"url": "https://e.com", "events": ["page_viewed"]}, "unknown event names: page_viewed"),
        ({"url": "https://e.com", "space": "nope"}, "'space' 'nope' is no space"),
        ({"url": "https://e.com", "secret": "mine"}, "secret"),
        ({}, "url"),
    ],
)
async def test_bad_input_is_400_and_changes_nothing(
    client: httpx.AsyncClient, db: AsyncEngine, body: dict[str, Any], message: str
) -> None:
    org_id, (admin,) = await factories.org_with_members(db)
    r = await client.post(f"/v1/orgs/{org_id}/webhooks", json=body, headers=admin.headers)
    assert r.status_code == 400, r.text
    assert set(r.json()) == {"error"} and r.json()["error"]["code"] == 400
    assert message in r.json()["error"]["message"]
    r = await client.get(f"/v1/orgs/{org_id}/webhooks", headers=admin.headers)
    assert r.json() == {"items": [], "count": 0}


async def test_a_space_of_another_organization_is_refused(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    org_id, (admin,) = await factories.org_with_members(db)
    other = await factories.organization(db, owner=admin, title="Other")
    foreign = await new_space(client, other, admin)
    r = await client.post(
        f"/v1/orgs/{org_id}/webhooks",
        json={"url": "https://e.com", "space": foreign},
        headers=admin.headers,
    )
    assert r.status_code == 400
    assert r.json() == error(
        400, f"Invalid body: 'space' {foreign!r} is no space of the organization"
    )


async def test_members_get_403_and_outsiders_404(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    org_id, (admin, editor, guest) = await factories.org_with_members(db, "edit", None)
    outsider = await factories.user(db)
    hook = await create_hook(client, org_id, admin, url="https://e.com/in")
    base = f"/v1/orgs/{org_id}/webhooks"
    one = f"{base}/{hook['id']}"
    calls = [
        ("GET", base, None),
        ("POST", base, {"url": "https://e.com/x"}),
        ("GET", one, None),
        ("PATCH", one, {"active": False}),
        ("DELETE", one, None),
        ("POST", f"{one}/secret", None),
        ("GET", f"{one}/deliveries", None),
        ("GET", f"/v1/orgs/{org_id}/audit-log", None),
    ]
    for method, path, body in calls:
        for who in (editor, guest):
            r = await client.request(method, path, json=body, headers=who.headers)
            assert r.status_code == 403, (method, path, r.text)
        r = await client.request(method, path, json=body, headers=outsider.headers)
        assert r.status_code == 404, (method, path)
        assert r.json() == error(404, "Organization not found")
    r = await client.get(one, headers=admin.headers)
    assert r.json()["active"] is True


# -- deliveries -------------------------------------------------------------------------------


async def test_a_burst_of_events_is_sent_in_batches_whose_posts_overlap(
    client: httpx.AsyncClient,
    db: AsyncEngine,
    loopback: Settings,
    receiver: Callable[[Behaviour], Receiver],
    job_env: JobEnv,
) -> None:
    org_id, (admin,) = await factories.org_with_members(db)
    in_flight = {"now": 0, "most": 0}
    lock = threading.Lock()

    def overlapping(_n: int, _r: Receiver) -> tuple[int, dict[str, str]]:
        with lock:
            in_flight["now"] += 1
            in_flight["most"] = max(in_flight["most"], in_flight["now"])
        time.sleep(0.2)  # long enough for the batch's other POSTs to arrive meanwhile
        with lock:
            in_flight["now"] -= 1
        return 204, {}

    got = receiver(overlapping)
    hook = await create_hook(client, org_id, admin, url=got.url, events=["space_created"])
    count = delivery.BATCH + 4
    for _ in range(count):
        await new_space(client, org_id, admin)
    async with unit_of_work(db) as conn:
        await make_due(conn, "events.dispatch")
    runner = JobRunner(db, job_env)
    assert await runner.run_once()  # the dispatch: every event, one fan-out
    async with unit_of_work(db, write=False) as conn:
        queued = (
            await conn.execute(
                sa.select(jobs.c.payload).where(
                    jobs.c.kind == delivery.DELIVER, jobs.c.status == "queued"
                )
            )
        ).scalars()
        sizes = sorted(len(p["deliveries"]) for p in queued)
    assert sizes == [4, delivery.BATCH]
    await run_jobs(db, job_env=job_env)
    assert len(got.got) == count
    assert 1 < in_flight["most"] <= delivery.BATCH
    sent = await deliveries(client, org_id, hook["id"], admin)
    assert [d["status"] for d in sent] == ["delivered"] * count


async def test_a_dispatch_adds_its_deliveries_in_one_statement_and_once(
    client: httpx.AsyncClient,
    db: AsyncEngine,
    loopback: Settings,
    receiver: Callable[[Behaviour], Receiver],
    job_env: JobEnv,
) -> None:
    org_id, (admin,) = await factories.org_with_members(db)
    got = receiver(ok)
    hooks = [
        await create_hook(client, org_id, admin, url=got.url, events=["space_created"])
        for _ in range(2)
    ]
    for _ in range(3):
        await new_space(client, org_id, admin)
    inserts: list[str] = []

    def seen(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        if statement.lstrip().upper().startswith("INSERT INTO WEBHOOK_DELIVERIES"):
            inserts.append(statement)

    async def dispatched() -> None:
        """The queued dispatch and the deliveries it queues, run (INSERTs counted)."""
        sa.event.listen(sa.Engine, "before_cursor_execute", seen)
        try:
            await run_jobs(db, job_env=job_env)
        finally:
            sa.event.remove(sa.Engine, "before_cursor_execute", seen)

    # Three events, two hooks: six deliveries, written at once.
    await dispatched()
    assert (len(inserts), len(got.got)) == (1, 6)
    # The same events dispatched again (a second dispatch that read them before the first
    # committed): no second delivery, nothing more queued or sent.
    async with unit_of_work(db) as conn:
        await conn.execute(sa.update(events).values(dispatched=sa.false()))
        await enqueue(conn, outbox.DISPATCH, {})
    await dispatched()
    assert (len(inserts), len(got.got)) == (2, 6)
    for hook in hooks:
        sent = await deliveries(client, org_id, hook["id"], admin)
        assert [d["status"] for d in sent] == ["delivered"] * 3


async def test_delivery_is_signed_per_standard_webhooks(
    client: httpx.AsyncClient,
    db: AsyncEngine,
    loopback: Settings,
    receiver: Callable[[Behaviour], Receiver],
    job_env: JobEnv,
) -> None:
    org_id, (admin,) = await factories.org_with_members(db)
    got = receiver(ok)
    hook = await create_hook(client, org_id, admin, url=got.url, events=["space_created"])
    space_id = await new_space(client, org_id, admin)
    assert got.got == []  # nothing on the request path
    await run_jobs(db, job_env=job_env)
    assert len(got.got) == 1
    sent = got.got[0]
    payload = Webhook(hook["secret"]).verify(sent.body, sent.headers)
    event_id = payload["eventId"]
    assert payload == {
        "eventId": event_id,
        "type": "space_created",
        "organizationId": org_id,
        "spaceId": space_id,
        "parent": None,
        "visibility": "private",
        "actor": {"object": "user", "id": admin.id, "displayName": admin.name},
        "createdAt": CREATED_AT,
    }
    assert sent.path == "/hook"
    assert sent.headers["content-type"] == "application/json"
    # A tampered body fails verification: the signature covers it.
    with pytest.raises(Exception, match="signature"):
        Webhook(hook["secret"]).verify(sent.body.replace(b"private", b"public "), sent.headers)
    [logged] = await deliveries(client, org_id, hook["id"], admin)
    assert sent.headers["webhook-id"] == logged["id"]
    assert isinstance(logged["duration"], int) and logged["duration"] >= 0
    assert logged == {
        "object": "webhook-delivery",
        "id": logged["id"],
        "event": {"id": event_id, "type": "space_created"},
        "status": "delivered",
        "attempt": 1,
        "statusCode": 200,
        "duration": logged["duration"],
        "error": None,
        "createdAt": CREATED_AT,
        "lastAttemptAt": CREATED_AT,
        "nextAttemptAt": None,
        "deliveredAt": CREATED_AT,
    }
    # Filtered out: a content edit is not what this hook asked for.
    await client.post(
        f"/v1/spaces/{space_id}/content/pages",
        json={"title": "Intro", "document": {"markdown": "Hi"}},
        headers=admin.headers,
    )
    await run_jobs(db, job_env=job_env)
    assert len(got.got) == 1


async def test_space_scoped_hook_hears_its_space_only(
    client: httpx.AsyncClient,
    db: AsyncEngine,
    loopback: Settings,
    receiver: Callable[[Behaviour], Receiver],
    job_env: JobEnv,
) -> None:
    org_id, (admin,) = await factories.org_with_members(db)
    got = receiver(ok)
    mine = await new_space(client, org_id, admin)
    other = await new_space(client, org_id, admin)
    await run_jobs(db, job_env=job_env)
    await create_hook(client, org_id, admin, url=got.url, space=mine)
    for space_id in (mine, other):
        r = await client.patch(
            f"/v1/spaces/{space_id}", json={"visibility": "public"}, headers=admin.headers
        )
        assert r.status_code == 200, r.text
    await run_jobs(db, job_env=job_env)
    assert [orjson.loads(g.body)["spaceId"] for g in got.got] == [mine]
    body = orjson.loads(got.got[0].body)
    assert body["type"] == "space_visibility_updated"
    assert (body["previousVisibility"], body["visibility"]) == ("private", "public")


async def test_slow_receiver_is_waited_for(
    client: httpx.AsyncClient,
    db: AsyncEngine,
    loopback: Settings,
    receiver: Callable[[Behaviour], Receiver],
    job_env: JobEnv,
) -> None:
    def slow(_n: int, _r: Receiver) -> tuple[int, dict[str, str]]:
        time.sleep(0.8)
        return 204, {}

    org_id, (admin,) = await factories.org_with_members(db)
    got = receiver(slow)
    hook = await create_hook(client, org_id, admin, url=got.url)
    await new_space(client, org_id, admin)
    await run_jobs(db, job_env=job_env)
    [logged] = await deliveries(client, org_id, hook["id"], admin)
    assert (logged["status"], logged["statusCode"], logged["attempt"]) == ("delivered", 204, 1)
    assert logged["duration"] >= 800


async def test_500_then_200_is_retried_with_backoff(
    client: httpx.AsyncClient,
    db: AsyncEngine,
    loopback: Settings,
    receiver: Callable[[Behaviour], Receiver],
    job_env: JobEnv,
) -> None:
    org_id, (admin,) = await factories.org_with_members(db)
    got = receiver(lambda n, _r: (500, {}) if n == 0 else (200, {}))
    hook = await create_hook(client, org_id, admin, url=got.url)
    await new_space(client, org_id, admin)
    await run_jobs(db, job_env=job_env)
    [logged] = await deliveries(client, org_id, hook["id"], admin)
    assert logged["status"] == "pending"
    assert (logged["statusCode"], logged["attempt"]) == (500, 1)
    assert logged["error"] == "the receiver answered HTTP 500"
    # The first retry waits 5 s, give or take a quarter.
    wait = (await _parse(logged["nextAttemptAt"]) - FROZEN).total_seconds()
    assert 3.75 <= wait <= 6.25
    await run_jobs(db, job_env=job_env)
    assert len(got.got) == 1  # not due yet
    await retry_now(db, job_env=job_env)
    assert len(got.got) == 2
    # The same message id on every attempt, so receivers can drop duplicates.
    assert got.got[0].headers["webhook-id"] == got.got[1].headers["webhook-id"]
    Webhook(hook["secret"]).verify(got.got[1].body, got.got[1].headers)
    [logged] = await deliveries(client, org_id, hook["id"], admin)
    assert (logged["status"], logged["statusCode"], logged["attempt"]) == ("delivered", 200, 2)
    assert logged["error"] is None and logged["nextAttemptAt"] is None


async def _parse(value: str) -> Any:
    from datetime import datetime

    return datetime.fromisoformat(value.replace("Z", "+00:00"))


async def test_a_receiver_that_never_answers_times_out(
    client: httpx.AsyncClient,
    db: AsyncEngine,
    loopback: Settings,
    receiver: Callable[[Behaviour], Receiver],
    job_env: JobEnv,
) -> None:
    org_id, (admin,) = await factories.org_with_members(db)
    got = receiver(lambda _n, _r: None)
    hook = await create_hook(client, org_id, admin, url=got.url)
    await new_space(client, org_id, admin)
    started = time.monotonic()
    await run_jobs(
        db, job_env=replace(job_env, settings=loopback.model_copy(update={"webhook_timeout": 2}))
    )
    assert 1.9 <= time.monotonic() - started < 10
    [logged] = await deliveries(client, org_id, hook["id"], admin)
    assert logged["status"] == "pending" and logged["statusCode"] is None
    assert logged["error"] == "URL fetch timed out after 2 s"
    assert logged["duration"] >= 1900 and logged["attempt"] == 1


async def test_a_redirect_to_a_private_address_is_refused(
    client: httpx.AsyncClient,
    db: AsyncEngine,
    loopback: Settings,
    receiver: Callable[[Behaviour], Receiver],
    job_env: JobEnv,
) -> None:
    org_id, (admin,) = await factories.org_with_members(db)
    got = receiver(lambda _n, _r: (307, {"Location": "http://10.1.2.3/internal"}))
    hook = await create_hook(client, org_id, admin, url=got.url)
    await new_space(client, org_id, admin)
    await run_jobs(db, job_env=job_env)
    [logged] = await deliveries(client, org_id, hook["id"], admin)
    assert logged["status"] == "pending" and logged["statusCode"] is None
    assert logged["error"] == "URL refused: 10.1.2.3 is a private address"
    assert len(got.got) == 1


async def test_a_303_redirect_is_the_answer(
    client: httpx.AsyncClient,
    db: AsyncEngine,
    loopback: Settings,
    receiver: Callable[[Behaviour], Receiver],
    job_env: JobEnv,
) -> None:
    """Only 307 and 308 keep a POST a POST: any other redirect is a failed delivery."""
    org_id, (admin,) = await factories.org_with_members(db)
    got = receiver(lambda _n, r: (303, {"Location": f"{r.base}/elsewhere"}))
    hook = await create_hook(client, org_id, admin, url=got.url)
    await new_space(client, org_id, admin)
    await run_jobs(db, job_env=job_env)
    assert [g.path for g in got.got] == ["/hook"]
    [logged] = await deliveries(client, org_id, hook["id"], admin)
    assert (logged["statusCode"], logged["status"]) == (303, "pending")


async def test_repeated_failure_disables_until_reenabled(
    client: httpx.AsyncClient,
    db: AsyncEngine,
    loopback: Settings,
    receiver: Callable[[Behaviour], Receiver],
    job_env: JobEnv,
) -> None:
    org_id, (admin,) = await factories.org_with_members(db)
    got = receiver(lambda _n, _r: (503, {}))
    hook = await create_hook(client, org_id, admin, url=got.url)
    one = f"/v1/orgs/{org_id}/webhooks/{hook['id']}"
    attempts = len(delivery.RETRY_DELAYS) + 1
    for n in range(delivery.DISABLE_AFTER):
        clock.advance(timedelta(seconds=1))
        await new_space(client, org_id, admin)
        await run_jobs(db, job_env=job_env)
        for _ in range(attempts - 1):
            await retry_now(db, job_env=job_env)
        assert len(got.got) == (n + 1) * attempts
        r = await client.get(one, headers=admin.headers)
        assert r.json()["active"] is (n + 1 < delivery.DISABLE_AFTER)
    logged = await deliveries(client, org_id, hook["id"], admin)
    assert {(d["status"], d["attempt"], d["statusCode"]) for d in logged} == {
        ("failed", attempts, 503)
    }
    r = await client.get(one, headers=admin.headers)
    assert r.json()["disabledAt"] is not None
    # Disabled: new events are not delivered, and redelivery is refused.
    await new_space(client, org_id, admin)
    await run_jobs(db, job_env=job_env)
    assert len(got.got) == delivery.DISABLE_AFTER * attempts
    r = await client.post(f"{one}/deliveries/{logged[0]['id']}/redeliver", headers=admin.headers)
    assert r.status_code == 400
    assert r.json() == error(400, "The webhook is disabled: set 'active' to true first")
    # Its owner turns it back on: the next event goes out.
    r = await client.patch(one, json={"active": True}, headers=admin.headers)
    assert (r.json()["active"], r.json()["disabledAt"]) == (True, None)
    await new_space(client, org_id, admin)
    await run_jobs(db, job_env=job_env)
    assert len(got.got) == delivery.DISABLE_AFTER * attempts + 1


async def test_manual_redelivery(
    client: httpx.AsyncClient,
    db: AsyncEngine,
    loopback: Settings,
    receiver: Callable[[Behaviour], Receiver],
    job_env: JobEnv,
) -> None:
    org_id, (admin,) = await factories.org_with_members(db)
    got = receiver(ok)
    hook = await create_hook(client, org_id, admin, url=got.url)
    await new_space(client, org_id, admin)
    await run_jobs(db, job_env=job_env)
    [logged] = await deliveries(client, org_id, hook["id"], admin)
    base = f"/v1/orgs/{org_id}/webhooks/{hook['id']}/deliveries"
    r = await client.post(f"{base}/{logged['id']}/redeliver", headers=admin.headers)
    assert r.status_code == 202, r.text
    assert r.json() == {
        **logged,
        "status": "pending",
        "attempt": 0,
        "nextAttemptAt": CREATED_AT,
        "deliveredAt": None,
    }
    assert len(got.got) == 1  # sent by the worker, not by the request
    await run_jobs(db, job_env=job_env)
    assert len(got.got) == 2
    assert got.got[0].body == got.got[1].body
    assert got.got[0].headers["webhook-id"] == got.got[1].headers["webhook-id"]
    r = await client.post(f"{base}/nope/redeliver", headers=admin.headers)
    assert r.status_code == 404 and r.json() == error(404, "Delivery not found")


async def test_deleting_a_hook_stops_its_deliveries(
    client: httpx.AsyncClient,
    db: AsyncEngine,
    loopback: Settings,
    receiver: Callable[[Behaviour], Receiver],
    job_env: JobEnv,
) -> None:
    org_id, (admin,) = await factories.org_with_members(db)
    got = receiver(ok)
    hook = await create_hook(client, org_id, admin, url=got.url)
    await new_space(client, org_id, admin)
    r = await client.delete(f"/v1/orgs/{org_id}/webhooks/{hook['id']}", headers=admin.headers)
    assert r.status_code == 204
    await run_jobs(db, job_env=job_env)
    assert got.got == []


# -- the outbox -------------------------------------------------------------------------------


async def test_a_rolled_back_change_sends_nothing(
    client: httpx.AsyncClient,
    db: AsyncEngine,
    loopback: Settings,
    receiver: Callable[[Behaviour], Receiver],
    monkeypatch: pytest.MonkeyPatch,
    job_env: JobEnv,
) -> None:
    org_id, (admin,) = await factories.org_with_members(db)
    space_id = await new_space(client, org_id, admin)
    await run_jobs(db, job_env=job_env)
    got = receiver(ok)
    await create_hook(client, org_id, admin, url=got.url)
    before = await event_count(db)

    def broken(*_args: Any, **_kwargs: Any) -> Any:
        raise RuntimeError("the presenter failed after the write")

    # The change request and its event are written, then the request fails: all rolls back.
    monkeypatch.setattr(change_request_service, "present_change_request", broken)
    r = await client.post(
        f"/v1/spaces/{space_id}/change-requests", json={"subject": "x"}, headers=admin.headers
    )
    assert r.status_code == 500
    monkeypatch.undo()
    r = await client.post(
        f"/v1/spaces/{space_id}/change-requests", json={"subject": "y"}, headers=admin.headers
    )
    assert r.status_code == 201
    assert await event_count(db) == before + 1
    # One dispatch job per committed event: the rolled-back one left none.
    async with unit_of_work(db, write=False) as conn:
        dispatches = await conn.execute(
            sa.select(sa.func.count()).where(jobs.c.kind == "events.dispatch")
        )
        assert dispatches.scalar() == before + 1
    await run_jobs(db, job_env=job_env)
    assert [orjson.loads(g.body)["type"] for g in got.got] == ["change_request_created"]


async def test_a_committed_event_survives_a_worker_that_died(
    client: httpx.AsyncClient,
    db: AsyncEngine,
    loopback: Settings,
    receiver: Callable[[Behaviour], Receiver],
    job_env: JobEnv,
) -> None:
    """The dispatch and the delivery are jobs: a runner that dies holding one leaves a lease
    that expires, and the next runner delivers."""
    org_id, (admin,) = await factories.org_with_members(db)
    got = receiver(ok)
    await create_hook(client, org_id, admin, url=got.url)
    await new_space(client, org_id, admin)
    dead = JobRunner(db, job_env, worker_id="dead", lease=timedelta(seconds=30))
    claimed = await dead.claim()  # and then the process is killed
    assert claimed is not None and claimed["kind"] == "events.dispatch"
    await run_jobs(db, job_env=job_env)
    assert got.got == []  # held by the dead runner's lease
    clock.advance(timedelta(seconds=31))
    await run_jobs(db, job_env=job_env)
    assert len(got.got) == 1


async def test_retention_prunes_old_events(
    client: httpx.AsyncClient, db: AsyncEngine, settings: Settings, job_env: JobEnv
) -> None:
    org_id, (admin,) = await factories.org_with_members(db)
    await create_hook(client, org_id, admin, url="http://127.0.0.1:9/in")
    await new_space(client, org_id, admin)
    await run_jobs(db, job_env=job_env)
    kept_30_days = replace(
        job_env, settings=settings.model_copy(update={"audit_retention_days": 30})
    )
    clock.advance(timedelta(days=30))
    await new_space(client, org_id, admin)
    async with unit_of_work(db) as conn:
        await outbox.prune(conn, {}, env=kept_30_days)
    r = await client.get(f"/v1/orgs/{org_id}/audit-log", headers=admin.headers)
    assert r.json()["count"] == 2  # exactly 30 days old: kept
    clock.advance(timedelta(seconds=1))
    async with unit_of_work(db) as conn:
        await outbox.prune(conn, {}, env=kept_30_days)
    r = await client.get(f"/v1/orgs/{org_id}/audit-log", headers=admin.headers)
    assert r.json()["count"] == 1
    async with unit_of_work(db, write=False) as conn:
        left = await conn.execute(sa.select(sa.func.count()).select_from(webhook_deliveries))
        assert left.scalar() == 0
