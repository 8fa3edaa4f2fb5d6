#!/usr/bin/env bash
# The whole test suite: lint, types, then every test on SQLite and on PostgreSQL, the two passes
# side by side (each is one pytest process, mostly one core: together they take the time of the
# longer one, not the sum). PostgreSQL comes from DOCSHELF_TEST_DATABASE_URL, or a throwaway
# cluster started here from the Debian binaries. Without PostgreSQL its pass is skipped with a
# message, except under CI (CI=true), where that is a failure. The Redis tests start their own
# redis-server (Debian's package; tests/conftest.py) on a free port; without it they skip, and
# under CI they fail. DOCSHELF_TEST_SERIAL=1 runs the passes one after the other.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh dev

echo "== ruff"
.venv/bin/ruff check .
.venv/bin/ruff format --check .
echo "== mypy"
.venv/bin/mypy

pg_dir=""
work=$(mktemp -d /tmp/docshelf-test.XXXXXX)
pg_pid=""
cleanup() {
  if [ -n "$pg_pid" ]; then kill "$pg_pid" 2>/dev/null || true; fi
  if [ -n "$pg_dir" ]; then scripts/postgres.sh stop "$pg_dir" || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

url=${DOCSHELF_TEST_DATABASE_URL:-}
if [ -z "$url" ]; then
  pg_dir=$(mktemp -d /tmp/docshelf-pg.XXXXXX)
  port=$(.venv/bin/python -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  if ! url=$(scripts/postgres.sh start "$pg_dir" "$port"); then
    rm -rf "$pg_dir"; pg_dir=""; url=""
    if [ "${CI:-}" = "true" ]; then
      echo "FAILED: PostgreSQL is required in CI but could not be started" >&2
      exit 1
    fi
  fi
fi

# Each pass keeps its own temporary folders.
sqlite_pass() { env -u DOCSHELF_TEST_DATABASE_URL .venv/bin/pytest --basetemp="$work/sqlite" "$@"; }
pg_pass() { DOCSHELF_TEST_DATABASE_URL="$url" .venv/bin/pytest --basetemp="$work/pg" "$@"; }

if [ -z "$url" ]; then
  echo "== tests on SQLite"
  sqlite_pass "$@"
  echo "SKIPPED: the PostgreSQL run (install the Debian package 'postgresql', or set DOCSHELF_TEST_DATABASE_URL)"
  exit 0
fi

if [ "${DOCSHELF_TEST_SERIAL:-}" = "1" ]; then
  echo "== tests on SQLite"
  sqlite_pass "$@"
  echo "== tests on PostgreSQL"
  pg_pass "$@"
  exit 0
fi

echo "== tests on SQLite (shown as they run) and on PostgreSQL (shown when done), side by side"
pg_pass "$@" >"$work/pg.log" 2>&1 &
pg_pid=$!
sqlite_status=0
sqlite_pass "$@" || sqlite_status=$?
pg_status=0
wait "$pg_pid" || pg_status=$?
pg_pid=""
echo "== tests on PostgreSQL"
cat "$work/pg.log"
if [ "$sqlite_status" -ne 0 ] || [ "$pg_status" -ne 0 ]; then
  echo "FAILED: SQLite pass exit $sqlite_status, PostgreSQL pass exit $pg_status" >&2
  exit 1
fi
