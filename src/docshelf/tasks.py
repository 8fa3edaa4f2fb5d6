"""The table of contents of job kinds: importing this registers every handler, and connects
every signal's receivers (docshelf.wiring)."""

from docshelf import wiring
from docshelf.config import Settings
from docshelf.content import lifecycle as content_tasks
from docshelf.content.listing import stored as stored_listing
from docshelf.events import outbox as event_tasks
from docshelf.gitsync import remote as gitsync_tasks
from docshelf.imports import service as import_tasks
from docshelf.openapi_spec import tasks as openapi_tasks
from docshelf.space import tasks as space_tasks
from docshelf.webhooks import delivery as webhook_tasks
from docshelf.worker import tasks as worker_tasks

__all__ = [
    "configure",
    "content_tasks",
    "event_tasks",
    "gitsync_tasks",
    "import_tasks",
    "openapi_tasks",
    "space_tasks",
    "stored_listing",
    "webhook_tasks",
    "wiring",
    "worker_tasks",
]


def configure(settings: Settings) -> None:
    """Hands the process's settings to the job kinds that read them (fetch allowances and
    deadlines), in whichever process runs jobs: the serving app's or a worker."""
    stored_listing.use_settings(settings)
