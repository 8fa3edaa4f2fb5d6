#!/usr/bin/env bash
# Start or stop a throwaway PostgreSQL cluster on loopback for the test suite.
#   scripts/postgres.sh start DIR PORT   -> prints the SQLAlchemy URL on stdout
#   scripts/postgres.sh stop DIR
# Uses the Debian binaries in /usr/lib/postgresql/*/bin. As root, the cluster runs as the
# `postgres` user (initdb refuses root).
set -euo pipefail

action=${1:?start|stop}
dir=${2:?data directory}

bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
if [ -z "$bindir" ] || [ ! -x "$bindir/initdb" ]; then
  echo "PostgreSQL server binaries not found (Debian package 'postgresql')" >&2
  exit 3
fi

as_pg() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

case "$action" in
  start)
    port=${3:?port}
    mkdir -p "$dir"
    [ "$(id -u)" = 0 ] && chown postgres: "$dir"
    as_pg "$bindir/initdb" -D "$dir/data" -U postgres -A trust --no-sync -E UTF8 >"$dir/initdb.log" 2>&1
    as_pg "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
      -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200" \
      start >/dev/null
    as_pg "$bindir/createdb" -h 127.0.0.1 -p "$port" -U postgres docshelf_test
    echo "postgresql+asyncpg://postgres@127.0.0.1:$port/docshelf_test"
    ;;
  stop)
    as_pg "$bindir/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1 || true
    rm -rf "$dir"
    ;;
  *)
    echo "unknown action $action" >&2
    exit 2
    ;;
esac
