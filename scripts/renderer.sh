#!/usr/bin/env bash
# GitBook's own open-source renderer (GitbookIO/gitbook, GPLv3), run beside Docshelf, unchanged.
#
#   scripts/renderer.sh build [TARBALL]           install and build it once (cached)
#   scripts/renderer.sh start API_URL PORT [TARBALL]
#                                                 serve it on localhost:PORT, reading API_URL
#
# TARBALL is a snapshot of the repository (default: ../shared/gitbook-renderer/gitbook-*.tgz
# beside the checkout). The build goes to $DOCSHELF_CACHE_DIR (default .cache/) under the
# snapshot's SHA-256, so it runs once per snapshot; a lock lets two runs share it. It needs npm
# (Debian package npm): bun comes from npm, the rest from the npm registry.
#
# A page published at https://HOST/PATH is served at http://localhost:PORT/PATH when the request
# carries `X-GitBook-URL: https://HOST/PATH`, as a reverse proxy in front of it would send. The
# renderer refuses hosts with a port, so give Docshelf a public URL without one
# (DOCSHELF_PUBLIC_URL=https://docs.example.test).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
action=${1:?build|start}
case "$action" in
  build) tarball=${2:-} ;;
  start) api=${2:?API_URL}; port=${3:?PORT}; tarball=${4:-} ;;
  *) echo "unknown action $action" >&2; exit 2 ;;
esac
if [ -z "$tarball" ]; then
  tarball=$(ls "$root"/../shared/gitbook-renderer/gitbook-*.tgz 2>/dev/null | head -n 1 || true)
fi
[ -f "$tarball" ] || { echo "no renderer snapshot (gitbook-*.tgz) found" >&2; exit 3; }
command -v npm >/dev/null || { echo "npm is needed (Debian package npm)" >&2; exit 3; }

sum=$(sha256sum "$tarball" | cut -c1-16)
cache=${DOCSHELF_CACHE_DIR:-$root/.cache}/gitbook-renderer/$sum
app=$cache/src/packages/gitbook
export PATH=$cache/bun/node_modules/.bin:$PATH
export NEXT_TELEMETRY_DISABLED=1 GITBOOK_DISABLE_TRACKING=1

build() {
  [ -f "$cache/built" ] && return
  rm -rf "$cache/src" "$cache/bun"
  mkdir -p "$cache/src"
  tar xzf "$tarball" -C "$cache/src"
  npm install --silent --no-audit --no-fund --prefix "$cache/bun" bun@1.3.7 >/dev/null
  cd "$cache/src"
  # The snapshot pins @gitbook/api 0.195.0, which the registry no longer serves.
  sed -i 's/"@gitbook\/api": "0.195.0"/"@gitbook\/api": "0.201.0"/' package.json
  bun install >/dev/null
  bunx turbo run build --filter='gitbook^...' >/dev/null
  cd "$app"
  # The renderer's own asset steps (packages/gitbook/scripts/generate.sh) that need no network:
  # the fonts download does, so system fonts are used.
  bun ./scripts/generate-mermaid-runtime.ts >/dev/null
  bun ./scripts/generate-scalar-runtime.ts >/dev/null
  bunx gitbook-icons ./public/~gitbook/static/icons >/dev/null
  bunx gitbook-math ./public/~gitbook/static/math >/dev/null
  # Compiled only: its type check fails on the snapshot's own types, and no page is static.
  # No GITBOOK_* variable is set here: next.config.mjs inlines those set at build time, and
  # `start` sets them.
  bunx --bun next build --webpack --experimental-build-mode compile \
    >"$cache/build.log" 2>&1 || { tail -n 40 "$cache/build.log" >&2; exit 1; }
  touch "$cache/built"
}

mkdir -p "$cache"
exec 9>"$cache.lock"
flock 9
build
flock -u 9

if [ "$action" = start ]; then
  cd "$app"
  export GITBOOK_API_URL=$api
  export GITBOOK_URL=http://localhost:$port
  # `localhost`, not 127.0.0.1: its middleware hands each page on to http://localhost:PORT.
  # Icons from the renderer's own copy (the build step above), not GitBook's CDN.
  export GITBOOK_ICONS_URL=http://localhost:$port/~gitbook/static/icons
  exec bunx --bun next start -H localhost -p "$port"
fi
