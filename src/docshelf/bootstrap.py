"""First start: an admin user, an organization and the admin's API token."""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy.ext.asyncio import AsyncEngine

from docshelf.auth.service import create_token
from docshelf.kit import instance
from docshelf.kit.db import unit_of_work
from docshelf.organization.schemas import CreateOrganization
from docshelf.organization.service import create_organization
from docshelf.user import repository as user_repository
from docshelf.user.service import create_user

ADMIN_EMAIL = "admin@docshelf.local"


@dataclass
class Bootstrapped:
    email: str
    organization_id: str
    token_file: Path


async def bootstrap_if_empty(engine: AsyncEngine, data_dir: Path) -> Bootstrapped | None:
    """Creates the first admin only on an empty database; the instance_settings claim keeps two
    processes starting at once from both doing it."""
    async with unit_of_work(engine) as conn:
        if await user_repository.count(conn) > 0:
            return None
        if not await instance.claim(conn, "bootstrapped", secrets.token_hex(8)):
            return None
        email = os.environ.get("DOCSHELF_ADMIN_EMAIL", ADMIN_EMAIL)
        user_id = await create_user(conn, email=email, name="Admin")
        org_id = await create_organization(conn, user_id, CreateOrganization(title="Docshelf"))
        token = await create_token(conn, user_id)
        token_file = data_dir / "admin-token"
        # Written before commit: if the file cannot be written the admin is not created either.
        _write_secret(token_file, token)
    return Bootstrapped(email=email, organization_id=org_id, token_file=token_file)


def _write_secret(path: Path, value: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(value + "\n")
    os.chmod(path, 0o600)
