"""Child processes that end with the process that started them.

`serve`'s job runner and every offload worker are helpers of one parent. A parent that exits
normally stops them itself; one that is killed (SIGKILL, the OOM killer) cannot, and an orphan
would go on holding leases, connections and memory, and writing to the database behind the
back of the next `serve`. So a child compares its parent's pid with the one it was started by
(`parent_gone`, polled: an orphan is adopted by init or a subreaper); on Linux the job runner
also asks the kernel for a signal when its parent dies (`die_with_parent`).
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
import time

# Set by `docshelf serve` for the API processes its server starts (app.factory).
SERVE_PID = "DOCSHELF_SERVE_PID"

_PR_SET_PDEATHSIG = 1
_PR_SET_NAME = 15


def _prctl(option: int, value: int | bytes) -> None:
    if sys.platform == "linux":
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(option, value, 0, 0, 0)


def die_with_parent(parent_pid: int, sig: int = signal.SIGTERM) -> None:
    """Asks for `sig` when the parent dies; sends it at once when the parent is already gone
    (it may die between starting this process and this call). The kernel ties the signal to
    the parent's thread that started this process: only for children started by a thread
    that lives as long as the parent (its main thread)."""
    _prctl(_PR_SET_PDEATHSIG, int(sig))
    if parent_gone(parent_pid):
        os.kill(os.getpid(), sig)


def parent_gone(parent_pid: int) -> bool:
    return os.getppid() != parent_pid


def exit_with_parent(parent_pid: int, interval: float = 1.0) -> None:
    """A daemon thread that ends this process as soon as its parent is gone: for workers whose
    every task is their parent's, and who have nothing to clean up."""

    def watch() -> None:
        while not parent_gone(parent_pid):
            time.sleep(interval)
        os._exit(1)

    threading.Thread(target=watch, name="lifeline", daemon=True).start()


def name_process(name: str) -> None:
    """The name `ps -o comm`, `top` and /proc/<pid>/comm show (15 bytes at most), so an operator
    can tell the job runner and the offload workers from the API processes."""
    _prctl(_PR_SET_NAME, name.encode()[:15])
