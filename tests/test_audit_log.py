"""The audit log, read from the events the services record in their own transactions."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta
from typing import Any

import httpx
from sqlalchemy.ext.asyncio import AsyncEngine

from docshelf.kit.clock import clock
from docshelf.worker.registry import JobEnv
from docshelf.worker.runner import JobRunner
from tests import factories
from tests.helpers import error
from tests.world import SPEC_TEXT


def later() -> None:
    # Events of one moment come in no set order: each step gets its own second.
    clock.advance(timedelta(seconds=1))


async def audit(
    client: httpx.AsyncClient, org_id: str, who: factories.Who, **params: Any
) -> dict[str, Any]:
    r = await client.get(f"/v1/orgs/{org_id}/audit-log", params=params, headers=who.headers)
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


async def test_every_kind_of_change_is_recorded(
    client: httpx.AsyncClient, db: AsyncEngine, job_env: JobEnv
) -> None:
    org_id, (admin,) = await factories.org_with_members(db)
    h = admin.headers
    space = (await factories.api_space(client, org_id, admin, title="Guide"))["id"]
    later()
    r = await client.patch(f"/v1/spaces/{space}", json={"visibility": "public"}, headers=h)
    assert r.status_code == 200, r.text
    later()
    r = await client.post(f"/v1/spaces/{space}/change-requests", json={"subject": "A"}, headers=h)
    cr = r.json()["id"]
    r = await client.post(
        f"/v1/spaces/{space}/change-requests/{cr}/content?compat=false",
        json={
            "changes": [
                {"operation": "insert_page", "title": "Intro", "document": {"markdown": "Hi"}}
            ]
        },
        headers=h,
    )
    assert r.status_code == 200, r.text
    later()
    r = await client.post(
        f"/v1/spaces/{space}/change-requests/{cr}/reviews", json={"status": "approved"}, headers=h
    )
    assert r.status_code == 201, r.text
    later()
    r = await client.post(
        f"/v1/spaces/{space}/comments", json={"body": {"markdown": "Hm"}}, headers=h
    )
    comment = r.json()["id"]
    later()
    r = await client.post(
        f"/v1/spaces/{space}/comments/{comment}/replies",
        json={"body": {"markdown": "Ok"}},
        headers=h,
    )
    assert r.status_code == 200, r.text
    later()
    r = await client.post(f"/v1/spaces/{space}/change-requests/{cr}/merge", headers=h)
    assert r.json()["result"] == "merge", r.text
    revision = r.json()["revision"]
    later()
    r = await client.post(f"/v1/spaces/{space}/change-requests", json={"subject": "B"}, headers=h)
    second = r.json()["id"]
    later()
    r = await client.patch(
        f"/v1/spaces/{space}/change-requests/{second}",
        json={"status": "archived", "subject": "B2"},
        headers=h,
    )
    assert r.status_code == 200, r.text
    later()
    r = await client.post(
        f"/v1/orgs/{org_id}/sites", json={"title": "Docs", "spaces": [space]}, headers=h
    )
    site = r.json()["id"]
    r = await client.post(f"{r.json()['urls']['location']}/publish", headers=h)
    assert r.status_code == 200, r.text
    later()
    r = await client.post(f"/v1/orgs/{org_id}/sites/{site}/unpublish", headers=h)
    assert r.status_code == 200, r.text
    later()
    r = await client.post(f"/v1/orgs/{org_id}/link-invites", json={"role": "read"}, headers=h)
    newcomer = await factories.user(db)
    r = await client.post(f"/v1/orgs/{org_id}/invites/{r.json()['id']}", headers=newcomer.headers)
    assert r.status_code == 200, r.text
    later()
    r = await client.delete(f"/v1/orgs/{org_id}/members/{newcomer.id}", headers=h)
    assert r.status_code == 204
    later()
    r = await client.post(f"/v1/orgs/{org_id}/collections", json={"title": "C"}, headers=h)
    r = await client.post(f"/v1/spaces/{space}/move", json={"parent": r.json()["id"]}, headers=h)
    assert r.status_code == 200, r.text
    later()
    other = (await factories.api_space(client, org_id, admin, title="Gone"))["id"]
    later()
    assert (await client.delete(f"/v1/spaces/{other}", headers=h)).status_code == 205
    later()
    assert (await client.post(f"/v1/spaces/{other}/restore", headers=h)).status_code == 200
    later()
    r = await client.post(
        f"/v1/orgs/{org_id}/openapi",
        json={"slug": "pets", "source": {"text": SPEC_TEXT}},
        headers=h,
    )
    assert r.status_code == 201, r.text
    await JobRunner(db, job_env).drain()

    log = await audit(client, org_id, admin, limit=100)
    assert Counter(item["type"] for item in log["items"]) == Counter(
        {
            "space_created": 2,
            "space_visibility_updated": 1,
            "change_request_created": 2,
            "change_request_review_submitted": 1,
            "comment_created": 1,
            "comment_reply_created": 1,
            "space_content_updated": 1,
            "change_request_status_updated": 2,
            "change_request_updated": 1,
            "site_published": 1,
            "site_unpublished": 1,
            "member_joined": 1,
            "member_left": 1,
            "space_moved": 1,
            "space_deleted": 1,
            "space_restored": 1,
            "openapi_spec_processed": 1,
        }
    )
    assert log["count"] == 20
    # Newest first.
    assert log["items"][0]["type"] == "openapi_spec_processed"
    assert log["items"][0]["actor"] == {"type": "system", "id": "system"}
    times = [item["createdAt"] for item in log["items"]]
    assert times == sorted(times, reverse=True)

    [updated] = (await audit(client, org_id, admin, type="space_content_updated"))["items"]
    assert updated == {
        "object": "audit-event",
        "id": updated["id"],
        "type": "space_content_updated",
        "actor": {"type": "user", "id": admin.id, "label": admin.name},
        "space": space,
        "createdAt": updated["createdAt"],
        "payload": {
            "revisionId": revision,
            "updatedBy": [{"object": "user", "id": admin.id, "displayName": admin.name}],
        },
    }
    statuses = (await audit(client, org_id, admin, type="change_request_status_updated"))["items"]
    assert [i["payload"] for i in statuses] == [
        {"changeRequestId": second, "number": 2, "status": "archived", "previousStatus": "open"},
        {"changeRequestId": cr, "number": 1, "status": "merged", "previousStatus": "open"},
    ]
    [joined] = (await audit(client, org_id, admin, actor=newcomer.id))["items"]
    assert joined["type"] == "member_joined"
    assert joined["payload"]["userId"] == newcomer.id and joined["payload"]["role"] == "read"
    in_other = await audit(client, org_id, admin, space=other)
    assert [i["type"] for i in in_other["items"]] == [
        "space_restored",
        "space_deleted",
        "space_created",
    ]


async def test_paging_and_refusals(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org_id, (admin, editor) = await factories.org_with_members(db, "edit")
    outsider = await factories.user(db)
    made = []
    for n in range(3):
        made.append((await factories.api_space(client, org_id, admin, title=f"S{n}"))["id"])
        later()
    first = await audit(client, org_id, admin, limit=2)
    assert [i["space"] for i in first["items"]] == made[::-1][:2] and first["count"] == 3
    rest = await audit(client, org_id, admin, limit=2, page=first["next"]["page"])
    assert [i["space"] for i in rest["items"]] == made[:1] and "next" not in rest

    url = f"/v1/orgs/{org_id}/audit-log"
    r = await client.get(url, headers=editor.headers)
    assert r.status_code == 403
    assert r.json() == error(403, "Only organization admins can read the audit log")
    r = await client.get(url, headers=outsider.headers)
    assert r.status_code == 404 and r.json() == error(404, "Organization not found")
    r = await client.get(url, params={"type": "page_viewed"}, headers=admin.headers)
    assert r.status_code == 400
    assert r.json() == error(
        400, "Invalid query parameter 'type': unknown event type 'page_viewed'"
    )
    assert (await audit(client, org_id, admin, actor=editor.id)) == {"items": [], "count": 0}
