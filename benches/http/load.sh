#!/usr/bin/env bash
# HTTP load benchmark: builds the server in release mode, loads the demo plus
# DOCUMENTS generated documents (default 1,000: alternately invoices, which alice may view, and
# contracts, which she may not), and drives it with wrk on loopback for DURATION seconds per
# scenario (default 30), CONNECTIONS connections (default 16) and 2 wrk threads:
#   0. the floor: `docmeta bench-floor`, the same runtime, listener, middleware and logging as
#      `docmeta serve`, answering a constant JSON body as large as scenario 2's answer;
#   1. GET  /api/v4/health/
#   2. GET  /api/v4/documents/1/metadata/ as alice (non-superuser, document-type ACL)
#   3. GET  /api/v4/documents/ as alice, page 1 (ACL-filtered list)
#   4. GET  /api/v4/search/documents/?q=... as alice (permission-filtered search)
#   5. PATCH of a metadata value with a date parser, as alice
# Prints requests/s, p50/p99 latency, errors, and each scenario as a share of the floor measured
# in the same run (absolute figures do not carry across machines; the ratio does).
# FLOOR_EACH=1 measures the floor again right before each scenario and gives each scenario's
# share against that one (on a shared machine whose speed drifts during a run, a share against
# the floor of the run's first minute moves with the drift; the adjacent one does not).
# SCENARIOS="metadata patch" runs only those of health, metadata, list, search, patch (the floor
# always runs first, for the shares); default all.
# DOCMETA_BIN=PATH runs that build of `docmeta` instead of building this tree (A/B comparisons).
# PERF_DIR=DIR records a `perf record -F 999 -g` profile of the server during each scenario into
# DIR/<n>.data (with FLOOR_EACH, the floor before scenario n in DIR/floor-<n>.data; read with
# `perf report -i DIR/<n>.data --no-children --sort symbol --stdio`).
# DATA_DIR=path keeps the data directory: built there (demo + DOCUMENTS documents) when it holds
# no database yet, reused as it is otherwise, and never deleted; so a large set (DOCUMENTS=1000000
# takes minutes to build) is built once and measured many times. Without it, a temporary
# directory is built and removed.
# Needs wrk (Debian package `wrk`).
set -euo pipefail
cd "$(dirname "$0")/../.."
DURATION="${DURATION:-30}"
CONNECTIONS="${CONNECTIONS:-16}"
DOCUMENTS="${DOCUMENTS:-1000}"
PORT="${PORT:-18765}"
FLOOR_PORT="${FLOOR_PORT:-18766}"
command -v wrk >/dev/null || { echo "wrk is missing: apt-get install wrk" >&2; exit 1; }
PROFILE="${PROFILE:-release}"   # PROFILE=debug to try the script itself quickly
if [ -n "${DOCMETA_BIN:-}" ]; then
  BIN=$DOCMETA_BIN               # a given build (to compare two builds in turn), not rebuilt
else
  if [ "$PROFILE" = release ]; then cargo build --release -q -p docmeta-server; else cargo build -q -p docmeta-server; fi
  BIN=target/$PROFILE/docmeta
fi
SCRATCH="$(mktemp -d)"   # logs and scripts of this run
DATA="${DATA_DIR:-$SCRATCH/data}"
mkdir -p "$DATA"
LOG="$SCRATCH/server.log"
SERVER=""
FLOOR=""
FLOOR_SERVER=""
cleanup() {
  for pid in $SERVER $FLOOR ${FLOOR_SERVER:-}; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
  rm -rf "$SCRATCH"
}
trap cleanup EXIT
export DOCMETA_DATA="$DATA" DOCMETA_ADMIN_PASSWORD=admin-password
if [ -e "$DATA/db.sqlite3" ]; then
  echo "reusing the data directory $DATA (DOCUMENTS=$DOCUMENTS is taken as what it holds)"
else
  "$BIN" demo >/dev/null
  if [ "$DOCUMENTS" -gt 0 ]; then
    start=$(date +%s)
    # bench-data prints its progress (one line per batch of 1,000) on stderr: keep the last.
    "$BIN" bench-data --documents "$DOCUMENTS" 2>"$SCRATCH/bench-data.log"
    echo "built $DOCUMENTS documents in $(( $(date +%s) - start )) s: $(tail -1 "$SCRATCH/bench-data.log"); $(du -sh "$DATA" | cut -f1) on disk"
  fi
fi
wait_for() { # url, seconds
  local deadline=$(( $(date +%s) + ${2:-10} ))
  while [ "$(date +%s)" -lt "$deadline" ]; do curl -sf "$1" >/dev/null && return 0; sleep 0.1; done
  echo "no answer from $1 within ${2:-10} s" >&2; exit 1
}
DOCMETA_LOG="${DOCMETA_LOG:-info}" "$BIN" serve --bind "127.0.0.1:$PORT" >"$LOG" 2>&1 &
SERVER=$!
BASE="http://127.0.0.1:$PORT"
# Opening a large data directory loads the access snapshot (one parent link per document) first.
wait_for "$BASE/api/v4/health/" "${READY_SECONDS:-600}"
AUTH="Authorization: Basic $(printf 'alice:demo-password' | base64)"
# Let the index catch up with the generated documents before searching (bench-data rebuilds it,
# so this normally passes at once; a failed request counts as not yet).
indexed() {
  curl -sf -H "$AUTH" "$BASE/api/v4/search/documents/?q=Bench" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["count"])' 2>/dev/null || echo 0
}
deadline=$(( $(date +%s) + ${READY_SECONDS:-600} ))
until [ "$(indexed)" -ge $((DOCUMENTS / 2)) ]; do
  [ "$(date +%s)" -lt "$deadline" ] || { echo "the index did not catch up within ${READY_SECONDS:-600} s" >&2; exit 1; }
  sleep 0.5
done
METADATA_BYTES=$(curl -sf -H "$AUTH" "$BASE/api/v4/documents/1/metadata/" | wc -c)
DUE=$(curl -sf -H "$AUTH" "$BASE/api/v4/documents/1/metadata/" | python3 -c 'import json,sys; print(next(r["id"] for r in json.load(sys.stdin)["results"] if r["metadata_type"]["name"]=="due_date"))')

DOCMETA_LOG="${DOCMETA_LOG:-info}" "$BIN" bench-floor --bind "127.0.0.1:$FLOOR_PORT" --body-bytes "$METADATA_BYTES" >"$SCRATCH/floor.log" 2>&1 &
FLOOR=$!
wait_for "http://127.0.0.1:$FLOOR_PORT/"

cat >"$SCRATCH/patch.lua" <<LUA
local n = 0
request = function()
  n = n + 1
  local body = string.format('{"value": "%02d/%02d/2030"}', (n % 28) + 1, (n % 12) + 1)
  return wrk.format("PATCH", "/api/v4/documents/1/metadata/$DUE/", {["Content-Type"] = "application/json", ["Authorization"] = "Basic $(printf 'alice:demo-password' | base64)"}, body)
end
LUA

FLOOR_RPS=""
SCENARIO=0
SCENARIOS="${SCENARIOS:-health metadata list search patch}"
wanted() { case " $SCENARIOS " in *" $1 "*) return 0;; *) SCENARIO=$((SCENARIO + 1)); return 1;; esac; }
run() { # name, wrk arguments...
  local name=$1; shift
  local out="$SCRATCH/wrk-$RANDOM.txt"
  local perf=""
  if [ -n "${PERF_DIR:-}" ]; then
    mkdir -p "$PERF_DIR"
    local target=$SERVER
    [ -n "$FLOOR" ] && target=$FLOOR
    perf record -q -F 999 -g -p "$target" -o "$PERF_DIR/${RUN_TAG:-$SCENARIO}.data" -- sleep $((DURATION > 3 ? DURATION - 2 : 1)) 2>/dev/null &
    perf=$!
  fi
  wrk -t2 -c"$CONNECTIONS" -d"${DURATION}s" --latency "$@" >"$out"
  [ -n "$perf" ] && { wait "$perf" || true; }
  SCENARIO=$((SCENARIO + 1))
  FLOOR_RPS=$(python3 - "$name" "$out" "$FLOOR_RPS" <<'PY'
import re, sys
name, path, floor = sys.argv[1], sys.argv[2], sys.argv[3]
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
share = f"{100 * rps / float(floor):5.1f}% of floor" if floor else "   the floor   "
print(f"{name:<58} {rps:>9,.0f}/s  {share}  p50 {ms(50):6.2f} ms  p99 {ms(99):6.2f} ms  "
      f"{total} requests, non-2xx {non2xx.group(1) if non2xx else 0}, "
      f"socket errors {errors.group(1) if errors else 'none'}", file=sys.stderr)
print(floor or rps)
PY
)
}

echo "docmeta HTTP load: ${DURATION}s per scenario, $CONNECTIONS connections, 2 wrk threads, $(nproc) cores, demo + $DOCUMENTS documents"
FLOOR_NAME="floor (constant ${METADATA_BYTES}-byte JSON, same middleware)"
FLOOR_URL="http://127.0.0.1:$FLOOR_PORT/api/v4/documents/1/metadata/"
run "$FLOOR_NAME" "$FLOOR_URL"
if [ -n "${FLOOR_EACH:-}" ]; then
  # The floor server stays up (idle between its runs); `floor_again` measures it once more.
  floor_again() {
    local keep=$SCENARIO
    RUN_TAG="floor-$SCENARIO"; FLOOR=$FLOOR_SERVER; FLOOR_RPS=""
    run "$FLOOR_NAME" "$FLOOR_URL"
    SCENARIO=$keep; RUN_TAG=""; FLOOR=""
  }
  wanted() { case " $SCENARIOS " in *" $1 "*) floor_again; return 0;; *) SCENARIO=$((SCENARIO + 1)); return 1;; esac; }
  FLOOR_SERVER=$FLOOR; FLOOR=""
else
  kill "$FLOOR"; wait "$FLOOR" 2>/dev/null || true; FLOOR=""
fi
wanted health && run "GET  /api/v4/health/" "$BASE/api/v4/health/"
wanted metadata && run "GET  /api/v4/documents/1/metadata/ (alice, ACL)" -H "$AUTH" "$BASE/api/v4/documents/1/metadata/"
wanted list && run "GET  /api/v4/documents/ page 1 (alice, ACL-filtered)" -H "$AUTH" "$BASE/api/v4/documents/"
# The first answer of a query is computed (every visible hit counted and ranked), the next ones
# come from the index's answer cache until the index changes: one request first, so that wrk
# measures the steady state (as the requests above already signed alice in).
if wanted search; then
  curl -sf -H "$AUTH" "$BASE/api/v4/search/documents/?q=metadata_value:draft" >/dev/null
  run "GET  /api/v4/search/documents/?q=draft (alice, filtered)" -H "$AUTH" "$BASE/api/v4/search/documents/?q=metadata_value:draft"
fi
wanted patch && run "PATCH /api/v4/documents/1/metadata/$DUE/ (date parser)" -s "$SCRATCH/patch.lua" "$BASE"
echo "server log lines written: $(wc -l <"$LOG")"
