"""Who hears what: the receivers of every signal (kit.signals), heard inside the announcing
transaction, and the subscribers of the domain events (events.outbox), handed each committed
event by the worker afterwards; connected once a process by
whichever starts it (the app, a worker, the command line). Importing a receiver's module here,
at the top, is what lets the announcing packages import none of their listeners."""

from __future__ import annotations

from docshelf.collection import signals as collection_signals
from docshelf.content import lifecycle as content_lifecycle
from docshelf.content import signals as content_signals
from docshelf.events import outbox
from docshelf.gitsync import remote as git_remote
from docshelf.links import indexing as links_indexing
from docshelf.search import indexing as search_indexing
from docshelf.site import lifecycle as site_lifecycle
from docshelf.space import signals as space_signals
from docshelf.space import tasks as space_tasks
from docshelf.webhooks import delivery as webhook_delivery


def connect() -> None:
    # Main moved, content copied or released: the derived indexes follow.
    content_signals.main_moved.connect(links_indexing.main_moved)
    content_signals.main_moved.connect(search_indexing.main_moved)
    # A space linked to a git remote queues its push (gitsync/remote.py).
    content_signals.main_moved.connect(git_remote.main_moved)
    content_signals.copied.connect(links_indexing.content_copied)
    content_signals.copied.connect(search_indexing.content_copied)
    content_signals.released.connect(search_indexing.content_released)
    # A space's life: its content starts, is copied and goes with it; its sites let it go.
    space_signals.created.connect(content_lifecycle.start_space)
    space_signals.duplicated.connect(content_lifecycle.copy_content)
    space_signals.purging.connect(content_lifecycle.release_space)
    space_signals.left.connect(site_lifecycle.spaces_left)
    # Spaces deleted or transferred with their collection.
    collection_signals.spaces_deleted.connect(space_tasks.collection_spaces_deleted)
    collection_signals.spaces_transferred.connect(space_tasks.collection_spaces_transferred)
    # After commit, in the worker: every committed domain event (events/) to the webhooks
    # subscribed to it.
    outbox.subscribe(webhook_delivery.fan_out)


connect()
