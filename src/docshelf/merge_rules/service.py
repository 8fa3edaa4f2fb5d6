from __future__ import annotations

from typing import Any

from docshelf.kit.context import Ctx
from docshelf.kit.errors import BadRequest
from docshelf.merge_rules import repository


async def check_rule_users(ctx: Ctx, org_id: str, config: dict[str, Any] | None) -> None:
    """Users named by merge rules must be members of the organization."""
    named = [u for r in (config or {}).get("rules") or [] for u in r.get("users") or []]
    if not named:
        return
    known = await repository.members_among(ctx.conn, org_id, set(named))
    for i, rule in enumerate(config["rules"] if config else []):
        for uid in rule.get("users") or []:
            if uid not in known:
                raise BadRequest(
                    f"Invalid body field 'mergeRules.rules.{i}.users': user '{uid}' is not a "
                    "member of the organization"
                )
