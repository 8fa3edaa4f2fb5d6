#!/usr/bin/env bash
# The whole test suite: lint, types, then every test on SQLite and again on PostgreSQL.
# PostgreSQL comes from DOCSHELF_TEST_DATABASE_URL, or a throwaway cluster started here from the
# Debian binaries. Without PostgreSQL the second run is skipped with a message, except under CI
# (CI=true), where that is a failure. The Redis tests start their own redis-server (Debian's
# package; tests/conftest.py) on a free port; without it they skip, and under CI they fail.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh

echo "== ruff"
.venv/bin/ruff check .
.venv/bin/ruff format --check .
echo "== mypy"
.venv/bin/mypy

echo "== tests on SQLite"
env -u DOCSHELF_TEST_DATABASE_URL .venv/bin/pytest "$@"

pg_dir=""
cleanup() { [ -n "$pg_dir" ] && scripts/postgres.sh stop "$pg_dir"; }
trap cleanup EXIT

url=${DOCSHELF_TEST_DATABASE_URL:-}
if [ -z "$url" ]; then
  pg_dir=$(mktemp -d /tmp/docshelf-pg.XXXXXX)
  port=$(.venv/bin/python -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  if ! url=$(scripts/postgres.sh start "$pg_dir" "$port"); then
    rm -rf "$pg_dir"; pg_dir=""
    if [ "${CI:-}" = "true" ]; then
      echo "FAILED: PostgreSQL is required in CI but could not be started" >&2
      exit 1
    fi
    echo "SKIPPED: the PostgreSQL run (install the Debian package 'postgresql', or set DOCSHELF_TEST_DATABASE_URL)"
    exit 0
  fi
fi

echo "== tests on PostgreSQL"
DOCSHELF_TEST_DATABASE_URL="$url" .venv/bin/pytest "$@"
