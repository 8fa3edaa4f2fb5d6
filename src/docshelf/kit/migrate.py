"""Apply Alembic migrations programmatically, so an installed package needs no alembic.ini."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config

from docshelf.config import Settings

MIGRATIONS_DIR = Path(__file__).resolve().parent.parent / "migrations"


def alembic_config(settings: Settings) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.set_main_option("file_template", "%%(year)d_%%(month).2d_%%(day).2d_%%(rev)s_%%(slug)s")
    cfg.attributes["settings"] = settings
    return cfg


def upgrade(settings: Settings, revision: str = "head") -> None:
    """Blocking: call it outside a running event loop (it runs its own)."""
    command.upgrade(alembic_config(settings), revision)
