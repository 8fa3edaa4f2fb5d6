"""Merge rules: the pure evaluator (tables and properties), their configuration on organizations
and spaces, and merges refused over HTTP without a change."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy.ext.asyncio import AsyncEngine

from docshelf.merge_rules import rules
from docshelf.merge_rules.rules import Attempt, Review, Rule
from tests import factories
from tests.helpers import error, snapshot

A, B, C, AUTHOR = "alice", "bob", "carol", "author"
APPROVED, CHANGES = "approved", "changes-requested"


def attempt(
    *reviews: Review, actor: str = A, subject: str = "Fix", up_to_date: bool = True
) -> Attempt:
    return Attempt(
        actor=actor, author=AUTHOR, subject=subject, up_to_date=up_to_date, reviews=reviews
    )


TABLE: list[tuple[Rule, Attempt, bool]] = [
    (Rule("require_at_least_one_review"), attempt(), False),
    (Rule("require_at_least_one_review"), attempt(Review(B, CHANGES)), True),
    (Rule("require_at_least_one_review"), attempt(Review(B, APPROVED, outdated=True)), False),
    (Rule("require_at_least_one_approved_review"), attempt(Review(B, CHANGES)), False),
    (Rule("require_at_least_one_approved_review"), attempt(Review(B, APPROVED)), True),
    (
        Rule("require_at_least_one_approved_review"),
        attempt(Review(B, APPROVED, outdated=True)),
        False,
    ),
    (Rule("require_at_least_one_approved_review"), attempt(Review(None, APPROVED)), False),
    (Rule("require_all_reviews_approved"), attempt(), True),
    (Rule("require_all_reviews_approved"), attempt(Review(B, APPROVED), Review(C, CHANGES)), False),
    (
        Rule("require_all_reviews_approved"),
        attempt(Review(B, APPROVED), Review(C, CHANGES, outdated=True)),
        True,
    ),
    (Rule("require_specific_reviewers", (B, C)), attempt(Review(B, APPROVED)), False),
    (
        Rule("require_specific_reviewers", (B, C)),
        attempt(Review(B, APPROVED), Review(C, APPROVED)),
        True,
    ),
    (
        Rule("require_specific_reviewers", (B, C)),
        attempt(Review(B, APPROVED), Review(C, CHANGES)),
        False,
    ),
    (Rule("require_one_of_specific_reviewers", (B, C)), attempt(Review(A, APPROVED)), False),
    (Rule("require_one_of_specific_reviewers", (B, C)), attempt(Review(C, APPROVED)), True),
    (Rule("require_one_of_specific_reviewers", (B, C)), attempt(Review(C, CHANGES)), False),
    (Rule("require_up_to_date_change_request"), attempt(up_to_date=False), False),
    (Rule("require_up_to_date_change_request"), attempt(), True),
    (Rule("require_change_request_subject"), attempt(subject="  "), False),
    (Rule("require_change_request_subject"), attempt(subject="Fix"), True),
    (Rule("require_author_to_merge"), attempt(actor=A), False),
    (Rule("require_author_to_merge"), attempt(actor=AUTHOR), True),
    (Rule("allow_bypass", (B,)), attempt(), True),
]


@pytest.mark.parametrize(("rule", "tried", "ok"), TABLE)
def test_each_rule(rule: Rule, tried: Attempt, ok: bool) -> None:
    assert rules.holds(rule, tried) is ok
    assert rules.broken([rule], tried) == ([] if ok else [rule])


def test_bypass_and_order() -> None:
    config = [
        Rule("require_author_to_merge"),
        Rule("allow_bypass", (B,)),
        Rule("require_at_least_one_review"),
    ]
    assert rules.broken(config, attempt(actor=A)) == [config[0], config[2]]
    assert rules.broken(config, attempt(actor=B)) == []
    assert rules.refusal([config[0]]) == (
        "The change request cannot be merged: merge rule 'require_author_to_merge' (only the "
        "change request's author may merge it) is not met"
    )
    assert rules.refusal([config[0], config[2]]).startswith(
        "The change request cannot be merged: merge rules 'require_author_to_merge'"
    )


def test_effective_configuration() -> None:
    org = {"type": "rules", "rules": [{"rule": "require_at_least_one_review"}]}
    own = {"type": "rules", "rules": [{"rule": "allow_bypass", "users": [A]}]}
    assert rules.effective(None, None) == ()
    assert rules.effective(None, org) == (Rule("require_at_least_one_review"),)
    assert rules.effective({"type": "inherit"}, org) == (Rule("require_at_least_one_review"),)
    assert rules.effective({"type": "none"}, org) == ()
    assert rules.effective(own, org) == (Rule("allow_bypass", (A,)),)
    assert rules.effective({"type": "inherit"}, {"type": "none"}) == ()


USERS = st.sampled_from([A, B, C, AUTHOR])
REVIEWS = st.builds(Review, USERS, st.sampled_from([APPROVED, CHANGES]), st.booleans())
RULES = st.one_of(
    st.builds(Rule, st.sampled_from(sorted(rules.PLAIN_RULES))),
    st.builds(
        Rule,
        st.sampled_from(sorted(rules.USER_RULES)),
        st.lists(USERS, min_size=1, max_size=3).map(tuple),
    ),
)
ATTEMPTS = st.builds(
    Attempt,
    actor=USERS,
    author=USERS,
    subject=st.sampled_from(["", " ", "Fix"]),
    up_to_date=st.booleans(),
    reviews=st.lists(REVIEWS, max_size=5).map(tuple),
)


@given(st.lists(RULES, max_size=6), ATTEMPTS)
def test_rules_are_a_conjunction(config: list[Rule], tried: Attempt) -> None:
    """Without a bypass, a configuration breaks exactly the rules that break on their own."""
    bypassed = any(r.rule == "allow_bypass" and tried.actor in r.users for r in config)
    expected = [] if bypassed else [r for r in config if rules.broken([r], tried)]
    assert rules.broken(config, tried) == expected


@given(st.lists(RULES, max_size=6), ATTEMPTS, st.lists(REVIEWS, max_size=3))
def test_outdated_reviews_count_for_nothing(
    config: list[Rule], tried: Attempt, extra: list[Review]
) -> None:
    stale = tuple(Review(r.reviewer, r.status, True) for r in extra)
    more = Attempt(
        tried.actor, tried.author, tried.subject, tried.up_to_date, tried.reviews + stale
    )
    assert rules.broken(config, more) == rules.broken(config, tried)


@given(st.lists(RULES, max_size=6), ATTEMPTS, USERS)
def test_an_approval_never_breaks_a_rule(config: list[Rule], tried: Attempt, who: str) -> None:
    """Adding a current approval, all else equal, can only mend rules."""
    more = Attempt(
        tried.actor,
        tried.author,
        tried.subject,
        tried.up_to_date,
        (*tried.reviews, Review(who, APPROVED)),
    )
    assert set(rules.broken(config, more)) <= set(rules.broken(config, tried))


@given(ATTEMPTS)
def test_no_rules_never_refuse(tried: Attempt) -> None:
    assert rules.broken([], tried) == []


# -- over HTTP --


async def _setup(client: httpx.AsyncClient, db: AsyncEngine) -> dict[str, Any]:
    org, (admin, editor, reviewer, other_reviewer) = await factories.org_with_members(
        db, "edit", "review", "review"
    )
    space = await factories.api_space(client, org, admin, visibility="unlisted")
    r = await client.post(
        f"/v1/spaces/{space['id']}/change-requests",
        json={"subject": "Fix typos"},
        headers=editor.headers,
    )
    cr = r.json()
    url = f"/v1/spaces/{space['id']}/change-requests/{cr['id']}"
    r = await client.post(
        url + "/content",
        json={"changes": [{"operation": "insert_page", "document": {"markdown": "Hi"}}]},
        headers=editor.headers,
    )
    assert r.status_code == 200, r.text
    return {
        "org": org,
        "admin": admin,
        "editor": editor,
        "reviewer": reviewer,
        "other": other_reviewer,
        "space": space,
        "url": url,
    }


async def _configure(
    client: httpx.AsyncClient, path: str, who: factories.Who, config: dict[str, Any]
) -> dict[str, Any]:
    r = await client.patch(path, json={"mergeRules": config}, headers=who.headers)
    assert r.status_code == 200, r.text
    assert r.json()["mergeRules"] == config
    body: dict[str, Any] = r.json()
    return body


async def test_configuration_reads_back(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    w = await _setup(client, db)
    org_path, space_path = f"/v1/orgs/{w['org']}", f"/v1/spaces/{w['space']['id']}"
    assert (await client.get(org_path, headers=w["admin"].headers)).json()["mergeRules"] == {
        "type": "none"
    }
    assert w["space"]["mergeRules"] == {"type": "inherit"}
    config = {
        "type": "rules",
        "rules": [
            {"rule": "require_at_least_one_approved_review"},
            {"rule": "allow_bypass", "users": [w["admin"].id]},
        ],
    }
    await _configure(client, org_path, w["admin"], config)
    r = await client.get(org_path, headers=w["editor"].headers)
    assert r.json()["mergeRules"] == config
    r = await client.get("/v1/orgs", headers=w["editor"].headers)
    assert r.json()["items"][0]["mergeRules"] == config
    await _configure(client, space_path, w["admin"], {"type": "none"})
    r = await client.get(space_path, headers=w["editor"].headers)
    assert r.json()["mergeRules"] == {"type": "none"}
    await _configure(client, space_path, w["admin"], {"type": "inherit"})
    await _configure(client, org_path, w["admin"], {"type": "none"})


async def test_bad_configurations_change_nothing(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    w = await _setup(client, db)
    stranger = await factories.user(db)
    org_path, space_path = f"/v1/orgs/{w['org']}", f"/v1/spaces/{w['space']['id']}"
    before = await snapshot(db)
    cases: list[tuple[str, Any, str]] = [
        (
            org_path,
            {"type": "inherit"},
            "Invalid body field 'mergeRules.type': Input should be 'none' or 'rules'",
        ),
        (
            space_path,
            {"type": "always"},
            "Invalid body field 'mergeRules.type': Input should be 'inherit', 'none' or 'rules'",
        ),
        (space_path, None, "Invalid body field 'mergeRules': must not be null"),
        (org_path, None, "Invalid body field 'mergeRules': must not be null"),
        (
            space_path,
            {"type": "rules"},
            "Invalid body field 'mergeRules': 'rules' is required when type is 'rules'",
        ),
        (
            space_path,
            {"type": "none", "rules": []},
            "Invalid body field 'mergeRules': 'rules' is only given when type is 'rules', "
            "not 'none'",
        ),
        (
            org_path,
            {"type": "rules", "rules": [{"rule": "require_agent_review"}]},
            "Invalid body field 'mergeRules.rules.0': merge rule 'require_agent_review' is not "
            "supported",
        ),
        (
            org_path,
            {"type": "rules", "rules": [{"rule": "custom", "expression": "true"}]},
            "Unknown body field 'mergeRules.rules.0.expression'",
        ),
        (
            org_path,
            {"type": "rules", "rules": [{"rule": "require_nothing"}]},
            "Invalid body field 'mergeRules.rules.0': unknown merge rule 'require_nothing'",
        ),
        (
            org_path,
            {"type": "rules", "rules": [{"rule": "allow_bypass"}]},
            "Invalid body field 'mergeRules.rules.0': merge rule 'allow_bypass' needs 'users'",
        ),
        (
            org_path,
            {"type": "rules", "rules": [{"rule": "require_author_to_merge", "users": ["x"]}]},
            "Invalid body field 'mergeRules.rules.0': merge rule 'require_author_to_merge' takes "
            "no 'users'",
        ),
        (
            space_path,
            {
                "type": "rules",
                "rules": [
                    {"rule": "require_at_least_one_review"},
                    {"rule": "require_at_least_one_review"},
                ],
            },
            "Invalid body field 'mergeRules': merge rule 'require_at_least_one_review' is given "
            "twice",
        ),
        (
            space_path,
            {
                "type": "rules",
                "rules": [
                    {"rule": "require_change_request_subject"},
                    {
                        "rule": "require_specific_reviewers",
                        "users": [w["reviewer"].id, stranger.id],
                    },
                ],
            },
            f"Invalid body field 'mergeRules.rules.1.users': user '{stranger.id}' is not a member "
            "of the organization",
        ),
    ]
    for path, config, message in cases:
        r = await client.patch(path, json={"mergeRules": config}, headers=w["admin"].headers)
        assert (r.status_code, r.json()) == (400, error(400, message)), (path, config)
        assert await snapshot(db) == before
    # Only administrators configure them.
    good = {"type": "none"}
    r = await client.patch(org_path, json={"mergeRules": good}, headers=w["editor"].headers)
    assert r.json() == error(403, "Only organization admins can change the organization")
    r = await client.patch(space_path, json={"mergeRules": good}, headers=w["reviewer"].headers)
    assert r.status_code == 403
    r = await client.patch(space_path, json={"mergeRules": good}, headers=stranger.headers)
    assert r.json() == error(404, "Space not found")
    assert await snapshot(db) == before


async def _refused(
    client: httpx.AsyncClient, db: AsyncEngine, url: str, who: factories.Who, message: str
) -> None:
    before = await snapshot(db)
    r = await client.post(url + "/merge", headers=who.headers)
    assert (r.status_code, r.json()) == (400, error(400, message))
    assert await snapshot(db) == before


def _refusal(*names: str) -> str:
    return rules.refusal([Rule(n) for n in names])


async def test_merge_obeys_organization_rules(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    w = await _setup(client, db)
    url, admin, reviewer = w["url"], w["admin"], w["reviewer"]
    await _configure(
        client,
        f"/v1/orgs/{w['org']}",
        admin,
        {
            "type": "rules",
            "rules": [
                {"rule": "require_at_least_one_approved_review"},
                {"rule": "require_all_reviews_approved"},
            ],
        },
    )
    await _refused(client, db, url, reviewer, _refusal("require_at_least_one_approved_review"))
    r = await client.post(
        url + "/reviews", json={"status": "changes-requested"}, headers=w["other"].headers
    )
    assert r.status_code == 201
    await _refused(
        client,
        db,
        url,
        reviewer,
        _refusal("require_at_least_one_approved_review", "require_all_reviews_approved"),
    )
    r = await client.post(url + "/reviews", json={"status": "approved"}, headers=reviewer.headers)
    assert r.status_code == 201
    await _refused(client, db, url, reviewer, _refusal("require_all_reviews_approved"))
    r = await client.post(url + "/reviews", json={"status": "approved"}, headers=w["other"].headers)
    # New content outdates both approvals.
    r = await client.post(
        url + "/content",
        json={"changes": [{"operation": "insert_page", "document": {"markdown": "More"}}]},
        headers=w["editor"].headers,
    )
    assert r.status_code == 200
    await _refused(client, db, url, reviewer, _refusal("require_at_least_one_approved_review"))
    r = await client.post(url + "/reviews", json={"status": "approved"}, headers=reviewer.headers)
    r = await client.post(url + "/merge", headers=reviewer.headers)
    assert r.status_code == 200 and r.json()["result"] == "merge"
    r = await client.get(url, headers=reviewer.headers)
    assert r.json()["status"] == "merged"


async def test_space_rules_override_and_bypass(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    w = await _setup(client, db)
    url, admin, reviewer, other = w["url"], w["admin"], w["reviewer"], w["other"]
    space_path = f"/v1/spaces/{w['space']['id']}"
    await _configure(
        client,
        f"/v1/orgs/{w['org']}",
        admin,
        {"type": "rules", "rules": [{"rule": "require_at_least_one_review"}]},
    )
    await _configure(
        client,
        space_path,
        admin,
        {
            "type": "rules",
            "rules": [
                {"rule": "require_specific_reviewers", "users": [reviewer.id, other.id]},
                {"rule": "require_author_to_merge"},
                {"rule": "allow_bypass", "users": [admin.id]},
            ],
        },
    )
    await client.post(url + "/reviews", json={"status": "approved"}, headers=reviewer.headers)
    await _refused(
        client,
        db,
        url,
        other,
        rules.refusal(
            [
                Rule("require_specific_reviewers", (reviewer.id, other.id)),
                Rule("require_author_to_merge"),
            ]
        ),
    )
    # The space's `none` drops the organization's rules too.
    await _configure(client, space_path, admin, {"type": "none"})
    await _configure(
        client,
        space_path,
        admin,
        {
            "type": "rules",
            "rules": [
                {"rule": "allow_bypass", "users": [admin.id]},
                {"rule": "require_one_of_specific_reviewers", "users": [other.id]},
            ],
        },
    )
    await _refused(
        client, db, url, reviewer, _refusal_users("require_one_of_specific_reviewers", other.id)
    )
    # A bypass user merges whatever the rules say.
    r = await client.post(url + "/merge", headers=admin.headers)
    assert r.status_code == 200 and r.json()["result"] == "merge"


def _refusal_users(name: str, *users: str) -> str:
    return rules.refusal([Rule(name, users)])


async def test_subject_and_up_to_date_rules(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    w = await _setup(client, db)
    url, admin, reviewer, editor = w["url"], w["admin"], w["reviewer"], w["editor"]
    space_id = w["space"]["id"]
    await _configure(
        client,
        f"/v1/spaces/{space_id}",
        admin,
        {
            "type": "rules",
            "rules": [
                {"rule": "require_change_request_subject"},
                {"rule": "require_up_to_date_change_request"},
            ],
        },
    )
    await client.patch(url, json={"subject": ""}, headers=editor.headers)
    # Main moves on through another change request (merged by a bypass-free, rule-meeting one).
    r = await client.post(
        f"/v1/spaces/{space_id}/change-requests", json={"subject": "Other"}, headers=editor.headers
    )
    other_url = f"/v1/spaces/{space_id}/change-requests/{r.json()['id']}"
    await client.post(
        other_url + "/content",
        json={"changes": [{"operation": "insert_page", "document": {"markdown": "Other"}}]},
        headers=editor.headers,
    )
    r = await client.post(other_url + "/merge", headers=reviewer.headers)
    assert r.status_code == 200, r.text
    await _refused(
        client,
        db,
        url,
        reviewer,
        _refusal("require_change_request_subject", "require_up_to_date_change_request"),
    )
    await client.patch(url, json={"subject": "Fix typos"}, headers=editor.headers)
    r = await client.post(url + "/update", headers=editor.headers)
    assert r.json()["result"] == "update"
    r = await client.post(url + "/merge", headers=reviewer.headers)
    assert r.status_code == 200 and r.json()["result"] == "merge"
