#!/usr/bin/env bash
# HTTP load benchmark of issue 4: builds the server in release mode, loads the demo, and drives
# it with wrk on loopback for DURATION seconds per scenario (default 30):
#   1. GET  /api/v4/documents/1/metadata/   as alice (non-superuser, document-type ACL)
#   2. PATCH of a metadata value with a date parser, as alice
# Prints requests/s, p50/p99 latency and error counts. Needs wrk (Debian package `wrk`).
set -euo pipefail
cd "$(dirname "$0")/../.."
DURATION="${DURATION:-30}"
CONNECTIONS="${CONNECTIONS:-32}"
PORT="${PORT:-18765}"
command -v wrk >/dev/null || { echo "wrk is missing: apt-get install wrk" >&2; exit 1; }
cargo build --release -q -p docmeta-server
BIN=target/release/docmeta
DATA="$(mktemp -d)"
LOG="$DATA/server.log"
trap 'kill "$SERVER" 2>/dev/null || true; wait "$SERVER" 2>/dev/null || true; rm -rf "$DATA"' EXIT
export DOCMETA_DATA="$DATA" DOCMETA_ADMIN_PASSWORD=admin-password
"$BIN" demo >/dev/null
DOCMETA_LOG="${DOCMETA_LOG:-info}" "$BIN" serve --bind "127.0.0.1:$PORT" >"$LOG" 2>&1 &
SERVER=$!
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$PORT/api/v4/health/" >/dev/null && break; sleep 0.1; done
AUTH="Authorization: Basic $(printf 'alice:demo-password' | base64)"
BASE="http://127.0.0.1:$PORT"
DUE=$(curl -sf -H "$AUTH" "$BASE/api/v4/documents/1/metadata/" | python3 -c 'import json,sys; print(next(r["id"] for r in json.load(sys.stdin)["results"] if r["metadata_type"]["name"]=="due_date"))')

report() { # name, wrk output file
  python3 - "$1" "$2" <<'PY'
import re, sys
name, path = sys.argv[1], sys.argv[2]
text = open(path).read()
def ms(label):
    m = re.search(rf"^\s*{label}%\s+([\d.]+)(us|ms|s)\s*$", text, re.M)
    if not m: return float("nan")
    v, unit = float(m.group(1)), m.group(2)
    return v / 1000 if unit == "us" else v * 1000 if unit == "s" else v
rps = float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))
total = int(re.search(r"(\d+) requests in", text).group(1))
non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
errors = re.search(r"Socket errors: (.*)", text)
print(f"{name}: {rps:,.0f} requests/s, p50 {ms(50):.2f} ms, p99 {ms(99):.2f} ms, {total} requests, "
      f"non-2xx {non2xx.group(1) if non2xx else 0}, socket errors {errors.group(1) if errors else 'none'}")
PY
}

cat >"$DATA/patch.lua" <<LUA
local n = 0
request = function()
  n = n + 1
  local body = string.format('{"value": "%02d/%02d/2030"}', (n % 28) + 1, (n % 12) + 1)
  return wrk.format("PATCH", "/api/v4/documents/1/metadata/$DUE/", {["Content-Type"] = "application/json", ["Authorization"] = "Basic $(printf 'alice:demo-password' | base64)"}, body)
end
LUA

echo "docmeta HTTP load: ${DURATION}s per scenario, $CONNECTIONS connections, 2 wrk threads, on $(nproc) cores"
wrk -t2 -c"$CONNECTIONS" -d"${DURATION}s" --latency -H "$AUTH" "$BASE/api/v4/documents/1/metadata/" >"$DATA/get.txt"
report "GET  /api/v4/documents/1/metadata/ (alice, document-type ACL)" "$DATA/get.txt"
wrk -t2 -c"$CONNECTIONS" -d"${DURATION}s" --latency -s "$DATA/patch.lua" "$BASE" >"$DATA/patch.txt"
report "PATCH /api/v4/documents/1/metadata/$DUE/ (date parser)" "$DATA/patch.txt"
echo "server log lines written: $(wc -l <"$LOG")"
