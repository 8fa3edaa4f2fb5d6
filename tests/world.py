"""A small populated install shared by the generated matrices: two organizations, each with an
admin, plus a member, a team and an invite link in the first one."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import httpx
from fastapi import FastAPI
from sqlalchemy.ext.asyncio import AsyncEngine

from docshelf.worker.registry import JobEnv
from docshelf.worker.runner import JobRunner
from tests import factories
from tests.factories import Who

# A small valid OpenAPI document, for the spec routes' bodies.
SPEC_TEXT = "openapi: 3.0.3\ninfo:\n  title: Pets\n  version: '1'\npaths: {}\n"

# A valid body for every operation that takes one, so that access checks, not validation, decide
# the answer. test_every_body_route_has_a_valid_body keeps this table complete.
VALID_BODIES: dict[tuple[str, str], Any] = {
    ("POST", "/v1/orgs"): {"title": "Another org"},
    ("PATCH", "/v1/orgs/{organizationId}"): {"title": "Renamed org"},
    ("PATCH", "/v1/orgs/{organizationId}/members/{userId}"): {"role": "edit"},
    ("PUT", "/v1/orgs/{organizationId}/teams"): {"title": "New team"},
    ("PATCH", "/v1/orgs/{organizationId}/teams/{teamId}"): {"title": "Renamed team"},
    ("PUT", "/v1/orgs/{organizationId}/teams/{teamId}/members"): {"add": [], "remove": []},
    ("PUT", "/v1/orgs/{organizationId}/teams/{teamId}/members/{userId}"): {"role": "member"},
    ("POST", "/v1/orgs/{organizationId}/link-invites"): {"role": "read"},
    ("PATCH", "/v1/orgs/{organizationId}/link-invites/{inviteId}"): {"role": "edit"},
    # -- spaces and collections --
    ("POST", "/v1/orgs/{organizationId}/collections"): {"title": "New collection"},
    ("PATCH", "/v1/collections/{collectionId}"): {"title": "Renamed collection"},
    ("POST", "/v1/collections/{collectionId}/move"): {"parent": None},
    ("POST", "/v1/collections/{collectionId}/transfer"): {"organization": "{otherOrganizationId}"},
    ("POST", "/v1/orgs/{organizationId}/spaces"): {"title": "New space"},
    ("PATCH", "/v1/spaces/{spaceId}"): {"title": "Renamed space"},
    ("POST", "/v1/spaces/{spaceId}/move"): {"parent": None},
    ("POST", "/v1/spaces/{spaceId}/transfer"): {"organization": "{otherOrganizationId}"},
    ("POST", "/v1/spaces/{spaceId}/permissions"): {"role": "read", "users": ["{userId}"]},
    ("PATCH", "/v1/spaces/{spaceId}/permissions/users/{userId}"): {"role": "edit"},
    ("PATCH", "/v1/spaces/{spaceId}/permissions/teams/{teamId}"): {"role": "edit"},
    ("POST", "/v1/collections/{collectionId}/permissions"): {"role": "read", "users": ["{userId}"]},
    ("PATCH", "/v1/collections/{collectionId}/permissions/users/{userId}"): {"role": "edit"},
    ("PATCH", "/v1/collections/{collectionId}/permissions/teams/{teamId}"): {"role": "edit"},
    ("POST", "/v1/spaces/{spaceId}/change-requests"): {"subject": "Fix typos"},
    ("PATCH", "/v1/spaces/{spaceId}/change-requests/{changeRequestId}"): {"subject": "Typos"},
    # -- content --
    ("POST", "/v1/spaces/{spaceId}/change-requests/{changeRequestId}/content"): {
        "changes": [{"operation": "update_page", "page": "{pageId}", "title": "Renamed"}]
    },
    ("POST", "/v1/spaces/{spaceId}/content/import"): {"url": "{importUrl}", "source": "markdown"},
    ("POST", "/v1/spaces/{spaceId}/content"): {
        "changes": [{"operation": "insert_page", "document": {"markdown": "Hi"}}]
    },
    # -- reviews --
    ("POST", "/v1/spaces/{spaceId}/change-requests/{changeRequestId}/reviews"): {
        "status": "approved",
        "comment": {"markdown": "Looks good"},
    },
    ("POST", "/v1/spaces/{spaceId}/change-requests/{changeRequestId}/requested-reviewers"): {
        "users": ["{userId}"]
    },
    # -- comments --
    ("POST", "/v1/spaces/{spaceId}/comments"): {"page": "{pageId}", "body": {"markdown": "Why?"}},
    ("PUT", "/v1/spaces/{spaceId}/comments/{commentId}"): {"body": {"markdown": "Edited"}},
    ("POST", "/v1/spaces/{spaceId}/comments/{commentId}/replies"): {"body": {"markdown": "Yes"}},
    ("PUT", "/v1/spaces/{spaceId}/comments/{commentId}/replies/{commentReplyId}"): {
        "addedReactions": ["👍"]
    },
    ("POST", "/v1/spaces/{spaceId}/change-requests/{changeRequestId}/comments"): {
        "body": {"markdown": "Why?"}
    },
    (
        "PUT",
        "/v1/spaces/{spaceId}/change-requests/{changeRequestId}/comments/{changeRequestCommentId}",
    ): {"resolved": True},
    (
        "POST",
        "/v1/spaces/{spaceId}/change-requests/{changeRequestId}/comments/{changeRequestCommentId}"
        "/replies",
    ): {"body": {"markdown": "Yes"}},
    (
        "PUT",
        "/v1/spaces/{spaceId}/change-requests/{changeRequestId}/comments/{changeRequestCommentId}"
        "/replies/{changeRequestCommentReplyId}",
    ): {"body": {"markdown": "Edited"}},
    # -- custom fields --
    ("POST", "/v1/orgs/{organizationId}/custom-fields"): {
        "name": "audience",
        "type": "select:single",
        "options": ["internal", "public"],
    },
    ("PATCH", "/v1/orgs/{organizationId}/custom-fields/{fieldName}"): {"title": "Area"},
    ("PATCH", "/v1/spaces/{spaceId}/custom-fields"): {
        "values": {"{fieldName}": {"value": ["api"]}}
    },
    # -- translations --
    ("POST", "/v1/orgs/{organizationId}/translations"): {"title": "Europe", "languages": ["fr"]},
    ("PUT", "/v1/orgs/{organizationId}/translations/{translationSettingsId}"): {
        "title": "Europe",
        "languages": ["fr", "de"],
    },
    # -- single sign-on --
    ("POST", "/v1/orgs/{organizationId}/saml"): {"label": "Okta"},
    ("PATCH", "/v1/orgs/{organizationId}/saml/{samlProviderId}"): {"label": "Corporate"},
    # -- sites --
    ("POST", "/v1/orgs/{organizationId}/sites"): {"title": "Another site"},
    ("PATCH", "/v1/orgs/{organizationId}/sites/{siteId}"): {"title": "Renamed site"},
    ("POST", "/v1/orgs/{organizationId}/sites/{siteId}/sections"): {
        "spaceId": "{spaceId}",
        "title": "Reference",
    },
    ("PATCH", "/v1/orgs/{organizationId}/sites/{siteId}/sections/{siteSectionId}"): {
        "title": "Renamed section"
    },
    ("POST", "/v1/orgs/{organizationId}/sites/{siteId}/sections/{siteSectionId}/move"): {},
    ("POST", "/v1/orgs/{organizationId}/sites/{siteId}/section-groups"): {"title": "More"},
    ("PATCH", "/v1/orgs/{organizationId}/sites/{siteId}/section-groups/{siteSectionGroupId}"): {
        "title": "Renamed group"
    },
    (
        "POST",
        "/v1/orgs/{organizationId}/sites/{siteId}/section-groups/{siteSectionGroupId}/sections",
    ): {"sectionId": "{siteSectionId}"},
    (
        "POST",
        "/v1/orgs/{organizationId}/sites/{siteId}/section-groups/{siteSectionGroupId}/move",
    ): {},
    ("POST", "/v1/orgs/{organizationId}/sites/{siteId}/site-spaces"): {
        "spaceId": "{siteSourceSpaceId}",
        "sectionId": "{siteSectionId}",
    },
    ("PATCH", "/v1/orgs/{organizationId}/sites/{siteId}/site-spaces/{siteSpaceId}"): {
        "condition": "visitor.claims.beta"
    },
    ("POST", "/v1/orgs/{organizationId}/sites/{siteId}/site-spaces/{siteSpaceId}/move"): {},
    ("POST", "/v1/orgs/{organizationId}/sites/{siteId}/share-links"): {"name": "Partners"},
    ("POST", "/v1/orgs/{organizationId}/sites/{siteId}/search"): {"query": "docs"},
    ("PATCH", "/v1/orgs/{organizationId}/sites/{siteId}/share-links/{shareLinkId}"): {
        "active": False
    },
    # -- OpenAPI specs --
    ("POST", "/v1/orgs/{organizationId}/openapi"): {"slug": "pets", "source": {"text": SPEC_TEXT}},
    ("PUT", "/v1/orgs/{organizationId}/openapi/{specSlug}"): {"source": {"text": SPEC_TEXT}},
    ("PATCH", "/v1/orgs/{organizationId}/sites/{siteId}/publishing/auth"): {
        "backend": "custom",
        "fallbackURL": "https://example.com/login",
    },
    ("PUT", "/v1/orgs/{organizationId}/sites/{siteId}/adaptive-schema"): {
        "jsonSchema": {
            "type": "object",
            "properties": {"beta": {"type": "boolean", "description": "Beta tester"}},
            "additionalProperties": False,
        }
    },
    ("POST", "/v1/urls/published"): {"url": "{publishedUrl}"},
    ("POST", "/v1/orgs/{organizationId}/webhooks"): {"url": "https://hooks.example.com/in"},
    ("PATCH", "/v1/orgs/{organizationId}/webhooks/{webhookId}"): {"active": True},
    ("PUT", "/v1/spaces/{spaceId}/git-sync"): {"url": "https://git.example.com/docs.git"},
}

# Valid values of required query parameters, like VALID_BODIES for bodies.
VALID_QUERIES: dict[tuple[str, str], dict[str, str]] = {
    ("GET", "/v1/spaces/{spaceId}/search"): {"query": "intro"},
    ("GET", "/v1/orgs/{organizationId}/search"): {"query": "intro"},
    ("GET", "/v1/urls/published"): {"url": "{publishedUrl}"},
}


@dataclass
class World:
    org_a: str
    admin_a: Who
    member_a: Who
    team_a: str
    invite_a: str
    org_b: str
    admin_b: Who
    # Ids of what later domains add, by path parameter name.
    extra: dict[str, str] = field(default_factory=dict)

    def ids(self) -> dict[str, str]:
        """Real ids of organization A's things, by path parameter name."""
        return {
            "organizationId": self.org_a,
            "userId": self.member_a.id,
            "teamId": self.team_a,
            "inviteId": self.invite_a,
            "subdomain": "acme-docs",
            "emailDomain": "example.com",  # the admins' own domain: the look-up answers
            **self.extra,
        }

    def request_body(self, method: str, path: str) -> dict[str, Any]:
        """httpx keyword arguments with the route's valid body, "{name}" strings filled in."""
        extra: dict[str, Any] = {}
        values = {**self.ids(), "otherOrganizationId": self.org_b}
        if (method, path) in VALID_QUERIES:
            extra["params"] = {
                k: v.format_map(values) for k, v in VALID_QUERIES[(method, path)].items()
            }
        if (method, path) not in VALID_BODIES:
            return extra

        def fill_in(value: Any) -> Any:
            if isinstance(value, str) and value.startswith("{") and value.endswith("}"):
                return values[value[1:-1]]
            if isinstance(value, dict):
                return {fill_in(k): fill_in(v) for k, v in value.items()}
            if isinstance(value, list):
                return [fill_in(v) for v in value]
            return value

        return {**extra, "json": fill_in(VALID_BODIES[(method, path)])}


async def build_world(client: httpx.AsyncClient, db: AsyncEngine, job_env: JobEnv) -> World:
    org_a, (admin_a, member_a) = await factories.org_with_members(db, "edit")
    r = await client.put(
        f"/v1/orgs/{org_a}/teams",
        json={"title": "Writers", "members": [member_a.id]},
        headers=admin_a.headers,
    )
    assert r.status_code == 201, r.text
    team_a = r.json()["id"]
    r = await client.post(
        f"/v1/orgs/{org_a}/link-invites", json={"role": "read"}, headers=admin_a.headers
    )
    assert r.status_code == 201, r.text
    invite_a = r.json()["id"]
    r = await client.patch(
        f"/v1/orgs/{org_a}", json={"hostname": "acme-docs"}, headers=admin_a.headers
    )
    assert r.status_code == 200, r.text
    admin_b = await factories.user(db)
    org_b = await factories.organization(db, owner=admin_b, title="Other Org")
    # Admin A also administers B: transfers from A to B are then possible for A's admin only.
    await factories.member(db, org=org_b, who=admin_a, role="admin")
    world = World(org_a, admin_a, member_a, team_a, invite_a, org_b, admin_b)
    # -- webhooks: one hearing every event; its deliveries are refused by the fetch guard
    # (loopback), so they stay pending with no packet sent --
    r = await client.post(
        f"/v1/orgs/{org_a}/webhooks",
        json={"url": "http://127.0.0.1:9/hook"},
        headers=admin_a.headers,
    )
    assert r.status_code == 201, r.text
    world.extra["webhookId"] = r.json()["id"]
    # -- spaces and collections --
    r = await client.post(
        f"/v1/orgs/{org_a}/collections", json={"title": "Guides"}, headers=admin_a.headers
    )
    assert r.status_code == 201, r.text
    world.extra["collectionId"] = r.json()["id"]
    r = await client.post(
        f"/v1/orgs/{org_a}/spaces", json={"title": "Handbook"}, headers=admin_a.headers
    )
    assert r.status_code == 201, r.text
    world.extra["spaceId"] = r.json()["id"]
    # Grants for the member and the team, so the permission routes find what they name.
    for kind, target in (
        ("spaces", world.extra["spaceId"]),
        ("collections", world.extra["collectionId"]),
    ):
        r = await client.post(
            f"/v1/{kind}/{target}/permissions",
            json={"role": "comment", "users": [member_a.id], "teams": [team_a]},
            headers=admin_a.headers,
        )
        assert r.status_code == 204, r.text
    # -- content: a page and a file merged into main, then an open change request on top --
    space_id = world.extra["spaceId"]
    r = await client.post(
        f"/v1/spaces/{space_id}/change-requests", json={"subject": "Seed"}, headers=admin_a.headers
    )
    assert r.status_code == 201, r.text
    seed = r.json()["id"]
    r = await client.post(
        f"/v1/spaces/{space_id}/change-requests/{seed}/content?compat=false",
        json={
            "changes": [
                {"operation": "insert_page", "title": "Intro", "document": {"markdown": "Hi"}},
                {
                    "operation": "insert_files",
                    "files": [{"name": "a.txt", "base64": "aGk=", "contentType": "text/plain"}],
                },
                {
                    "operation": "insert_reusable_content",
                    "title": "Shared",
                    "document": {"markdown": "Shared text"},
                },
            ]
        },
        headers=admin_a.headers,
    )
    assert r.status_code == 200, r.text
    world.extra["pageId"] = r.json()["changes"][0]["page"]["id"]
    world.extra["reusableContentId"] = r.json()["insertedReusableContents"][0]["id"]
    world.extra["pagePath"] = "intro"
    # Refused by the fetch guard without a packet sent; the conformance test serves a real one.
    world.extra["importUrl"] = "http://127.0.0.1:9/page.md"
    world.extra["fileId"] = r.json()["insertedFiles"][0]["id"]
    world.extra["token"] = r.json()["insertedFiles"][0]["downloadURL"].rsplit("/", 1)[1]
    # An import run, as a queued import leaves one (tests/test_import.py makes them over HTTP).
    world.extra["importRunId"] = await factories.import_run(db, org_a, space_id, admin_a)
    r = await client.post(
        f"/v1/spaces/{space_id}/change-requests/{seed}/merge", headers=admin_a.headers
    )
    assert r.status_code == 200 and r.json()["result"] == "merge", r.text
    world.extra["revisionId"] = r.json()["revision"]
    r = await client.post(
        f"/v1/spaces/{space_id}/change-requests", json={"subject": "First"}, headers=admin_a.headers
    )
    assert r.status_code == 201, r.text
    world.extra["changeRequestId"] = r.json()["id"]
    # -- reviews --
    r = await client.post(
        f"/v1/spaces/{space_id}/change-requests/{world.extra['changeRequestId']}/reviews",
        json={"status": "changes-requested"},
        headers=admin_a.headers,
    )
    assert r.status_code == 201, r.text
    world.extra["reviewId"] = r.json()["id"]
    # -- comments: one with a reply on main, one with a reply in the change request --
    for thread, comment_key, reply_key in (
        (f"/v1/spaces/{space_id}", "commentId", "commentReplyId"),
        (
            f"/v1/spaces/{space_id}/change-requests/{world.extra['changeRequestId']}",
            "changeRequestCommentId",
            "changeRequestCommentReplyId",
        ),
    ):
        r = await client.post(
            f"{thread}/comments", json={"body": {"markdown": "Hm"}}, headers=admin_a.headers
        )
        assert r.status_code == 200, r.text
        world.extra[comment_key] = r.json()["id"]
        r = await client.post(
            f"{thread}/comments/{world.extra[comment_key]}/replies",
            json={"body": {"markdown": "Ok"}},
            headers=admin_a.headers,
        )
        assert r.status_code == 200, r.text
        world.extra[reply_key] = r.json()["id"]
    # -- custom fields --
    r = await client.post(
        f"/v1/orgs/{org_a}/custom-fields",
        json={"name": "product-area", "type": "select:multi", "options": ["api", "sdk"]},
        headers=admin_a.headers,
    )
    assert r.status_code == 201, r.text
    world.extra["fieldName"] = r.json()["name"]
    # -- translations --
    r = await client.post(
        f"/v1/orgs/{org_a}/translations",
        json={"title": "Europe", "languages": ["fr"]},
        headers=admin_a.headers,
    )
    assert r.status_code == 201, r.text
    world.extra["translationSettingsId"] = r.json()["id"]
    # -- single sign-on --
    r = await client.post(f"/v1/orgs/{org_a}/saml", json={"label": "Okta"}, headers=admin_a.headers)
    assert r.status_code == 201, r.text
    world.extra["samlProviderId"] = r.json()["id"]
    # -- sites: a site whose first section holds a new space and the handbook (siteSpaceId),
    # and a second section (siteSectionId) with the handbook, in a group --
    r = await client.post(
        f"/v1/orgs/{org_a}/sites",
        json={"title": "Docs", "spaces": "empty"},
        headers=admin_a.headers,
    )
    assert r.status_code == 201, r.text
    site_id = world.extra["siteId"] = r.json()["id"]
    world.extra["siteSourceSpaceId"] = r.json()["defaultSpace"]
    site = f"/v1/orgs/{org_a}/sites/{site_id}"
    r = await client.post(f"{site}/sections", json={"spaceId": space_id}, headers=admin_a.headers)
    assert r.status_code == 201, r.text
    world.extra["siteSectionId"] = r.json()["id"]
    r = await client.get(f"{site}/sections", headers=admin_a.headers)
    first = next(s["id"] for s in r.json()["items"] if s["default"])
    r = await client.post(
        f"{site}/site-spaces",
        json={"spaceId": space_id, "sectionId": first},
        headers=admin_a.headers,
    )
    assert r.status_code == 201, r.text
    world.extra["siteSpaceId"] = r.json()["id"]
    r = await client.post(
        f"{site}/section-groups",
        json={"title": "Guides", "sections": [world.extra["siteSectionId"]]},
        headers=admin_a.headers,
    )
    assert r.status_code == 201, r.text
    world.extra["siteSectionGroupId"] = r.json()["id"]
    r = await client.post(f"{site}/share-links", json={"name": "Press"}, headers=admin_a.headers)
    assert r.status_code == 201, r.text
    world.extra["shareLinkId"] = r.json()["id"]
    # -- OpenAPI specs: one processed by its job, so that it has a version --
    r = await client.post(
        f"/v1/orgs/{org_a}/openapi",
        json={"slug": "petstore", "source": {"text": SPEC_TEXT}},
        headers=admin_a.headers,
    )
    assert r.status_code == 201, r.text
    world.extra["specSlug"] = "petstore"
    await JobRunner(db, job_env).drain()
    r = await client.get(
        f"/v1/orgs/{org_a}/openapi/petstore/versions/latest", headers=admin_a.headers
    )
    assert r.status_code == 200, r.text
    world.extra["versionId"] = r.json()["id"]
    # -- a published public site showing a public space, for the published-URL look-ups --
    shown = await factories.api_space(client, org_a, admin_a, title="Shown", visibility="public")
    r = await client.post(
        f"/v1/orgs/{org_a}/sites",
        json={"title": "Published", "spaces": [shown["id"]]},
        headers=admin_a.headers,
    )
    assert r.status_code == 201, r.text
    r = await client.post(f"{r.json()['urls']['location']}/publish", headers=admin_a.headers)
    assert r.status_code == 200, r.text
    world.extra["publishedUrl"] = r.json()["urls"]["published"]
    await JobRunner(db, job_env).drain()
    r = await client.get(
        f"/v1/orgs/{org_a}/webhooks/{world.extra['webhookId']}/deliveries?limit=1",
        headers=admin_a.headers,
    )
    assert r.status_code == 200 and r.json()["items"], r.text
    world.extra["deliveryId"] = r.json()["items"][0]["id"]
    return world


def operations(app: FastAPI) -> list[tuple[str, str, dict[str, Any]]]:
    """(METHOD, path template, OpenAPI operation) for every route under /v1, from the app itself."""
    out = []
    for path, ops in app.openapi()["paths"].items():
        if not path.startswith("/v1"):
            continue
        for method, op in ops.items():
            out.append((method.upper(), path, op))
    return sorted(out, key=lambda t: (t[1], t[0]))


def fill(path: str, values: dict[str, str]) -> str:
    return re.sub(r"\{(\w+)\}", lambda m: values[m.group(1)], path)


def path_params(path: str) -> list[str]:
    return re.findall(r"\{(\w+)\}", path)
