#!/usr/bin/env bash
# Create .venv and install Docshelf with its development tools; a no-op when up to date.
# PDF export (WeasyPrint) needs Debian's Pango, HarfBuzz subsetter and a font:
#   apt-get install libpango-1.0-0 libpangoft2-1.0-0 libharfbuzz-subset0 fonts-dejavu-core
# and its tests render a page with pdftoppm: apt-get install poppler-utils (.ci/run installs all).
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  if ! "$PYTHON" -m venv .venv; then
    echo "Could not create a virtualenv. On Debian: apt-get install python3-venv" >&2
    exit 1
  fi
fi
stamp=.venv/.docshelf-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  .venv/bin/python -m pip install --quiet --upgrade pip
  .venv/bin/python -m pip install --quiet -e '.[dev]'
  touch "$stamp"
fi
