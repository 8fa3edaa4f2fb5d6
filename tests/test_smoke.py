from __future__ import annotations

import httpx
from sqlalchemy.ext.asyncio import AsyncEngine

from tests import factories
from tests.helpers import org_body


async def test_get_org_as_admin(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org_id, (admin,) = await factories.org_with_members(db)
    r = await client.get(f"/v1/orgs/{org_id}", headers=admin.headers)
    assert r.status_code == 200
    assert r.json() == org_body(org_id, "admin")
