"""The table of contents of job kinds: importing this registers every handler."""

from docshelf.content import lifecycle as content_tasks
from docshelf.imports import service as import_tasks
from docshelf.openapi_spec import tasks as openapi_tasks
from docshelf.space import tasks as space_tasks
from docshelf.worker import tasks as worker_tasks

__all__ = ["content_tasks", "import_tasks", "openapi_tasks", "space_tasks", "worker_tasks"]
