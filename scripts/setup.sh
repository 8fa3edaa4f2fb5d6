#!/usr/bin/env bash
# Create .venv and install Docshelf with its development tools; a no-op when up to date.
# PDF export (WeasyPrint) needs Debian's Pango, HarfBuzz subsetter and a font:
#   apt-get install libpango-1.0-0 libpangoft2-1.0-0 libharfbuzz-subset0 fonts-dejavu-core
# and its tests render a page with pdftoppm: apt-get install poppler-utils (.ci/run installs all).
# The published reader's browser tests drive Debian's Chromium: apt-get install chromium.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  if ! "$PYTHON" -m venv .venv; then
    echo "Could not create a virtualenv. On Debian: apt-get install python3-venv" >&2
    exit 1
  fi
fi
# Single sign-on verifies SAML signatures with xmlsec1 (Debian package xmlsec1).
[ -x /usr/bin/chromium ] || echo "note: chromium is missing; the reader's browser tests need it (apt-get install chromium)" >&2
command -v xmlsec1 >/dev/null 2>&1 || echo "note: xmlsec1 is missing; SSO logins need it (apt-get install xmlsec1)" >&2
stamp=.venv/.docshelf-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  .venv/bin/python -m pip install --quiet --upgrade pip
  .venv/bin/python -m pip install --quiet -e '.[dev]'
  touch "$stamp"
fi
