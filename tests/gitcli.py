"""Debian's `git` as the tests run it: no user or system configuration, no prompts, a fixed
author."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

GIT = "/usr/bin/git"


def git(*args: str, cwd: Path, ok: bool = True) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(cwd),
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "Writer",
        "GIT_AUTHOR_EMAIL": "writer@example.com",
        "GIT_COMMITTER_NAME": "Writer",
        "GIT_COMMITTER_EMAIL": "writer@example.com",
    }
    done = subprocess.run(
        [GIT, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )
    if ok:
        assert done.returncode == 0, f"git {' '.join(args)}:\n{done.stdout}\n{done.stderr}"
    return done


def git_text(*args: str, cwd: Path) -> str:
    """What a git command that must succeed printed."""
    return git(*args, cwd=cwd).stdout.strip()
