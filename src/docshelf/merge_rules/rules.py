"""Merge rules, pure: which of a change request's effective rules a merge attempt breaks.
No I/O: the service reads the configuration and the reviews, this decides (table-driven and
property tests in tests/test_merge_rules.py)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# Rules that name users, and rules that stand alone (GitBook 0.202 `MergeRule`).
USER_RULES = frozenset(
    {"require_specific_reviewers", "require_one_of_specific_reviewers", "allow_bypass"}
)
PLAIN_RULES = frozenset(
    {
        "require_at_least_one_review",
        "require_at_least_one_approved_review",
        "require_all_reviews_approved",
        "require_up_to_date_change_request",
        "require_change_request_subject",
        "require_author_to_merge",
    }
)

# What each rule asks, for the refusal's sentence.
EXPLANATIONS = {
    "require_at_least_one_review": "at least one review of the latest changes is needed",
    "require_at_least_one_approved_review": "at least one approval of the latest changes is needed",
    "require_all_reviews_approved": "every current review must be an approval",
    "require_specific_reviewers": "each required reviewer must approve the latest changes",
    "require_one_of_specific_reviewers": "one of the required reviewers must approve the latest "
    "changes",
    "require_up_to_date_change_request": "the change request must be up to date with main",
    "require_change_request_subject": "the change request needs a subject",
    "require_author_to_merge": "only the change request's author may merge it",
}


@dataclass(frozen=True)
class Rule:
    rule: str
    users: tuple[str, ...] = ()


@dataclass(frozen=True)
class Review:
    reviewer: str | None
    status: str  # "approved" or "changes-requested"
    # Superseded by the reviewer's newer review or request, or made on an older revision.
    outdated: bool = False


@dataclass(frozen=True)
class Attempt:
    """A merge as the rules see it."""

    actor: str
    author: str | None
    subject: str
    up_to_date: bool
    reviews: tuple[Review, ...] = ()


def parse(config: Mapping[str, Any] | None) -> tuple[Rule, ...]:
    """The rules of a stored configuration (`none`, or an unset one, has none)."""
    if not config or config.get("type") != "rules":
        return ()
    return tuple(Rule(r["rule"], tuple(r.get("users") or ())) for r in config.get("rules") or [])


def effective(
    space_config: Mapping[str, Any] | None, org_config: Mapping[str, Any] | None
) -> tuple[Rule, ...]:
    """A space's own rules, or its organization's when it inherits (an unset space does)."""
    if space_config is None or space_config.get("type") == "inherit":
        return parse(org_config)
    return parse(space_config)


def _approvers(reviews: Iterable[Review]) -> set[str]:
    return {r.reviewer for r in reviews if r.status == "approved" and r.reviewer is not None}


def holds(rule: Rule, attempt: Attempt) -> bool:
    current = [r for r in attempt.reviews if not r.outdated]
    match rule.rule:
        case "require_at_least_one_review":
            return bool(current)
        case "require_at_least_one_approved_review":
            return bool(_approvers(current))
        case "require_all_reviews_approved":
            return all(r.status == "approved" for r in current)
        case "require_specific_reviewers":
            return set(rule.users) <= _approvers(current)
        case "require_one_of_specific_reviewers":
            return bool(set(rule.users) & _approvers(current))
        case "require_up_to_date_change_request":
            return attempt.up_to_date
        case "require_change_request_subject":
            return bool(attempt.subject.strip())
        case "require_author_to_merge":
            return attempt.author == attempt.actor
        case _:
            # allow_bypass asks nothing of a merge; it only lets its users past the others.
            return True


def broken(rules: Sequence[Rule], attempt: Attempt) -> list[Rule]:
    """The rules `attempt` breaks, in their configured order; none for a bypass user."""
    if any(r.rule == "allow_bypass" and attempt.actor in r.users for r in rules):
        return []
    return [r for r in rules if not holds(r, attempt)]


def refusal(rules: Sequence[Rule]) -> str:
    named = "; ".join(f"'{r.rule}' ({EXPLANATIONS[r.rule]})" for r in rules)
    if len(rules) == 1:
        return f"The change request cannot be merged: merge rule {named} is not met"
    return f"The change request cannot be merged: merge rules {named} are not met"
