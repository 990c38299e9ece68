#!/usr/bin/env bash
# First render of the web interface (benches/ui/first-render.mjs): builds the server in release
# mode, loads the demo into a temporary data directory, serves it on loopback and measures, as
# alice, the time from navigating to `/` until the documents table shows its first row, ROUNDS
# times (default 20) with an empty cache and again with the assets revalidated.
# Needs Debian's chromium and the pinned browser tools in target/browser-tools (see
# scripts/pins/README.md; .ci/run installs both). DOCMETA_BIN=PATH measures that build instead.
set -euo pipefail
cd "$(dirname "$0")/../.."
PORT="${PORT:-18770}"
if [ -n "${DOCMETA_BIN:-}" ]; then
  BIN=$DOCMETA_BIN
else
  cargo build --release -q -p docmeta-server
  BIN=target/release/docmeta
fi
tools="${DOCMETA_BROWSER_TOOLS:-$PWD/target/browser-tools}"
[ -d "$tools/node_modules/playwright-core" ] || {
  echo "no playwright-core in $tools (see scripts/pins/README.md)" >&2
  exit 1
}
dir=$(mktemp -d)
trap 'kill "$server" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$dir"' EXIT
export DOCMETA_ADMIN_PASSWORD=bench-admin-password DOCMETA_LOG=warn
"$BIN" demo --data "$dir" > /dev/null
"$BIN" serve --data "$dir" --bind "127.0.0.1:$PORT" > /dev/null &
server=$!
for _ in $(seq 1 100); do
  curl -fs "http://127.0.0.1:$PORT/api/v4/health/" > /dev/null && break
  sleep 0.1
done
DOCMETA_URL="http://127.0.0.1:$PORT" DOCMETA_BROWSER_TOOLS="$tools" \
  node benches/ui/first-render.mjs
