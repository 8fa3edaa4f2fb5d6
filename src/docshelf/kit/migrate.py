"""Apply Alembic migrations programmatically, so an installed package needs no alembic.ini."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from docshelf.config import Settings

if TYPE_CHECKING:
    from alembic.config import Config

MIGRATIONS_DIR = Path(__file__).resolve().parent.parent / "migrations"


# Alembic is imported where it works: the API process only needs MIGRATIONS_DIR (ops.service).
def alembic_config(settings: Settings) -> Config:
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.set_main_option("file_template", "%%(year)d_%%(month).2d_%%(day).2d_%%(rev)s_%%(slug)s")
    cfg.attributes["settings"] = settings
    return cfg


def upgrade(settings: Settings, revision: str = "head") -> None:
    """Blocking: call it outside a running event loop (it runs its own)."""
    from alembic import command

    command.upgrade(alembic_config(settings), revision)
