#!/usr/bin/env bash
# Create .venv and install Docshelf; a no-op when up to date. `scripts/setup.sh` installs what
# running needs (`make run`); `scripts/setup.sh dev` adds the development tools (`make test`,
# `make lint`). System packages are not installed here: `docshelf serve` names, at start and in
# one block, the features a missing one turns off (PDF export needs Pango, HarfBuzz's subsetter
# and a font; single sign-on needs xmlsec1) and the one apt-get command that turns them on.
# The tests also render PDF pages with pdftoppm (poppler-utils) and drive Debian's Chromium
# (chromium); .ci/run installs all of them.
set -euo pipefail
cd "$(dirname "$0")/.."

mode=${1:-run}
case "$mode" in
  run) target=. stamps=(.venv/.docshelf-installed .venv/.docshelf-dev-installed) ;;
  dev) target='.[dev]' stamps=(.venv/.docshelf-dev-installed) ;;
  *) echo "usage: scripts/setup.sh [run|dev]" >&2; exit 2 ;;
esac

PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  if ! "$PYTHON" -m venv .venv; then
    echo "Could not create a virtualenv. On Debian: apt-get install python3-venv" >&2
    exit 1
  fi
fi
if [ "$mode" = dev ] && [ ! -x /usr/bin/chromium ]; then
  echo "note: chromium is missing; the reader's browser tests need it (apt-get install chromium)" >&2
fi
# Up to date when an install at least as complete as this one is newer than pyproject.toml.
for stamp in "${stamps[@]}"; do
  if [ -f "$stamp" ] && [ ! pyproject.toml -nt "$stamp" ]; then
    exit 0
  fi
done
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e "$target"
touch "${stamps[0]}"
