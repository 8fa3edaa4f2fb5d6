from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from docshelf.kit.clock import isoformat
from docshelf.site.presenter import shared


def present_share_link(row: sa.RowMapping, site_address: str) -> dict[str, Any]:
    return {
        "object": "share-link",
        "id": row["id"],
        "createdAt": isoformat(row["created_at"]),
        "name": row["name"],
        "active": row["active"],
        # The link handed out: the site's address with the secret as its share key.
        "urls": {"published": shared(site_address, row["secret"])},
    }
