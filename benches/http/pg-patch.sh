#!/usr/bin/env bash
# Concurrent writers on PostgreSQL over HTTP: the metadata PATCH of load.sh (a
# date-parsed value, as alice) driven by wrk against N `docmeta serve` processes on one
# PostgreSQL database at default durability (fsync = on, synchronous_commit = on), for N = 1
# and N = 2 (PROCESSES="1 2"), CONNECTIONS connections per process (default 16), DURATION
# seconds per run (default 20). Each process has its own data directory (a copy), as on
# separate machines.
#
# The requests edit the due date of the DOCUMENTS/2 invoices that bench-data makes (alice may
# edit them), each request another one in turn; HOT=1 makes every request edit document 1's,
# as load.sh does: one row that every writer updates, whose row lock is held until the commit's
# WAL flush, so no design can go faster than one write per flush there.
#
# POOL=N caps each process's PostgreSQL connections (config.yml's postgres_pool_size).
# SOCKET=1 connects the servers through PostgreSQL's Unix socket instead of TCP on loopback.
# Each run also prints how busy the cores were and the CPU time per write, of the whole machine
# (servers, PostgreSQL, wrk, kernel): what a write costs, whatever the machine's speed.
# STATS=1 loads pg_stat_statements and prints, after each run, the statements PostgreSQL ran
# per write (calls / 2xx answers) and the transactions per write, busiest first.
# LOGS=DIR keeps the servers' logs, wrk's outputs and PostgreSQL's log there.
# BIN=path/to/docmeta runs that binary instead of building this tree's (an A/B comparison
# under the same conditions). Prints, per run: writes/s (2xx answers), p50/p99 latency (the worst process's), non-2xx
# answers and socket errors. Needs wrk and PostgreSQL's server binaries (initdb, pg_ctl, psql).
set -euo pipefail
cd "$(dirname "$0")/../.."
DURATION="${DURATION:-20}"
CONNECTIONS="${CONNECTIONS:-16}"
DOCUMENTS="${DOCUMENTS:-1000}"
PROCESSES="${PROCESSES:-1 2}"
PG_PORT="${PG_PORT:-54399}"
PORT="${PORT:-18865}"
HOT="${HOT:-0}"
command -v wrk >/dev/null || { echo "wrk is missing: apt-get install wrk" >&2; exit 1; }
PROFILE="${PROFILE:-release}"   # PROFILE=debug to try the script itself quickly
if [ -n "${BIN:-}" ]; then
  echo "server binary: $BIN (BIN given: not built)"  # e.g. another build, for an A/B run
elif [ "$PROFILE" = release ]; then
  cargo build --release -q -p docmeta-server; BIN=target/release/docmeta
else
  cargo build -q -p docmeta-server; BIN=target/debug/docmeta
fi
WORK="$(mktemp -d)"
chmod 755 "$WORK"
PG_DIR="$WORK/pg"
PG_BIN=$(dirname "$(command -v pg_ctl 2>/dev/null || ls /usr/lib/postgresql/*/bin/pg_ctl | tail -1)")
as_pg() { if [ "$(id -u)" = 0 ]; then su postgres -s /bin/bash -c "$*"; else bash -c "$*"; fi; }
SERVERS=()
cleanup() {
  for pid in "${SERVERS[@]}"; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
  if [ -n "${LOGS:-}" ]; then mkdir -p "$LOGS"; cp "$WORK"/server-*.log "$WORK"/wrk-*.txt "$PG_DIR/log" "$LOGS/" 2>/dev/null || true; fi
  as_pg "'$PG_BIN/pg_ctl' -D '$PG_DIR/data' stop -m fast" >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT

PG_EXTRA=""
if [ "${STATS:-0}" = 1 ]; then PG_EXTRA="-c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track=all"; fi
# scripts/postgres-up turns fsync off (for tests); restart the cluster with the defaults.
DOCMETA_PG_PORT=$PG_PORT scripts/postgres-up "$PG_DIR" >/dev/null
as_pg "'$PG_BIN/pg_ctl' -D '$PG_DIR/data' -w -o \"-p $PG_PORT -k '$PG_DIR' -c listen_addresses=127.0.0.1 -c max_connections=200 $PG_EXTRA\" -l '$PG_DIR/log' restart" >/dev/null
# SOCKET=1: the servers reach PostgreSQL through its Unix socket (a deployment on one machine)
# instead of TCP on loopback (what separate machines use); psql always uses TCP.
URL="postgres://postgres@127.0.0.1:$PG_PORT/postgres"
SERVER_URL="$URL"
if [ "${SOCKET:-0}" = 1 ]; then SERVER_URL="postgresql://postgres@${PG_DIR//\//%2F}:$PG_PORT/postgres"; fi
psql_q() { psql -X -q -t -A "$URL" -c "$1"; }
DURABILITY="fsync=$(psql_q 'SHOW fsync'), synchronous_commit=$(psql_q 'SHOW synchronous_commit'), wal_sync_method=$(psql_q 'SHOW wal_sync_method')"
case "$DURABILITY" in
  fsync=on,\ synchronous_commit=on*) ;;
  *) echo "PostgreSQL is not at default durability: $DURABILITY" >&2; exit 1 ;;
esac

export DOCMETA_ADMIN_PASSWORD=admin-password DOCMETA_DATABASE_URL="$SERVER_URL"
DOCMETA_DATA="$WORK/data-0" "$BIN" demo >/dev/null
DOCMETA_DATA="$WORK/data-0" "$BIN" bench-data --documents "$DOCUMENTS" 2>/dev/null
# A copy must not share the index id (docs/postgresql.md, "Search work names its index").
for n in 1 2 3; do cp -a "$WORK/data-0" "$WORK/data-$n"; rm -f "$WORK/data-$n/search/INSTANCE"; done
# POOL=N: each process holds at most N PostgreSQL connections (`postgres_pool_size`, default 32).
if [ -n "${POOL:-}" ]; then
  for n in 1 2 3; do sed -i "s/^postgres_pool_size: .*/postgres_pool_size: $POOL/" "$WORK/data-$n/config.yml"; done
fi

# The due-date values alice may edit: (document, value) of every invoice.
if [ "$HOT" = 1 ]; then
  TARGETS=$(psql_q "SELECT m.document_id || ' ' || m.id FROM document_metadata m JOIN metadata_types t ON t.id = m.metadata_type_id WHERE t.name = 'due_date' AND m.document_id = 1")
else
  TARGETS=$(psql_q "SELECT m.document_id || ' ' || m.id FROM document_metadata m JOIN metadata_types t ON t.id = m.metadata_type_id JOIN documents d ON d.id = m.document_id JOIN document_types y ON y.id = d.document_type_id WHERE t.name = 'due_date' AND y.label = 'Invoice' ORDER BY m.id")
fi
[ -n "$TARGETS" ] || { echo "no due dates to edit" >&2; exit 1; }
AUTH="Basic $(printf 'alice:demo-password' | base64)"
{
  echo "local paths = {"
  while read -r doc value; do echo "  \"/api/v4/documents/$doc/metadata/$value/\","; done <<<"$TARGETS"
  echo "}"
  cat <<LUA
local n = 0
local offset = 0
-- Each wrk (one per server process) starts elsewhere in the list: two walking it in step would
-- edit the same value at the same moment, every time.
init = function(args)
  offset = (tonumber(args[1]) or 0) * (math.floor(#paths / 2) + 1)
end
request = function()
  n = n + 1
  local path = paths[(offset + n * 31) % #paths + 1]
  local body = string.format('{"value": "%02d/%02d/2030"}', (n % 28) + 1, (n % 12) + 1)
  return wrk.format("PATCH", path, {["Content-Type"] = "application/json", ["Authorization"] = "$AUTH"}, body)
end
LUA
} >"$WORK/patch.lua"

# CPU time spent by the whole machine (every process, kernel included), in clock ticks, and
# how many ticks the cores could have spent: "busy idle+busy".
busy_ticks() { awk '/^cpu / {busy = $2 + $3 + $4 + $7 + $8; print busy, busy + $5 + $6}' /proc/stat; }

start_server() { # index
  local i=$1 port=$((PORT + $1))
  DOCMETA_DATA="$WORK/data-$i" DOCMETA_LOG="${DOCMETA_LOG:-warn}" "$BIN" serve --bind "127.0.0.1:$port" >>"$WORK/server-$i.log" 2>&1 &
  SERVERS+=($!)
  for _ in $(seq 200); do curl -sf "http://127.0.0.1:$port/api/v4/health/" >/dev/null && return 0; sleep 0.1; done
  echo "server $i did not start: $(tail -5 "$WORK/server-$i.log")" >&2; exit 1
}

echo "docmeta PATCH on PostgreSQL ($DURABILITY, $([ "${SOCKET:-0}" = 1 ] && echo "Unix socket" || echo "TCP loopback")): ${DURATION}s per run, $CONNECTIONS connections per process, $(nproc) cores, demo + $DOCUMENTS documents, $(wc -l <<<"$TARGETS") values edited in turn"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for n in $PROCESSES; do
  SERVERS=()
  for i in $(seq 0 $((n - 1))); do start_server "$i"; done
  # A short warm-up: every server's connections and prepared statements.
  for i in $(seq 0 $((n - 1))); do
    wrk -t1 -c"$CONNECTIONS" -d2s -s "$WORK/patch.lua" "http://127.0.0.1:$((PORT + i))" -- "$i" >/dev/null
  done
  if [ "${STATS:-0}" = 1 ]; then
    psql_q "CREATE EXTENSION IF NOT EXISTS pg_stat_statements" >/dev/null
    psql_q "SELECT pg_stat_statements_reset(); SELECT pg_stat_reset()" >/dev/null
    commits_before=$(psql_q "SELECT xact_commit FROM pg_stat_database WHERE datname = 'postgres'")
  fi
  cpu_before=$(busy_ticks)
  outs=()
  drivers=()
  for i in $(seq 0 $((n - 1))); do
    out="$WORK/wrk-$n-$i.txt"
    outs+=("$out")
    wrk -t1 -c"$CONNECTIONS" -d"${DURATION}s" --latency -s "$WORK/patch.lua" "http://127.0.0.1:$((PORT + i))" -- "$i" >"$out" &
    drivers+=($!)
  done
  for pid in "${drivers[@]}"; do wait "$pid"; done
  cpu_after=$(busy_ticks)
  python3 - "$n" "$CONNECTIONS" "${outs[@]}" <<'PY'
import re, sys
n, connections, paths = sys.argv[1], sys.argv[2], sys.argv[3:]
def ms(text, label):
    m = re.search(rf"^\s*{label}%\s+([\d.]+)(us|ms|s)\s*$", text, re.M)
    if not m: return float("nan")
    v, unit = float(m.group(1)), m.group(2)
    return v / 1000 if unit == "us" else v * 1000 if unit == "s" else v
total = ok = non2xx = 0
rps = 0.0
p50 = p99 = 0.0
socket = []
for path in paths:
    text = open(path).read()
    requests = int(re.search(r"(\d+) requests in", text).group(1))
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
    bad = int(bad.group(1)) if bad else 0
    seconds = float(re.search(r"requests in ([\d.]+)s", text).group(1))
    total += requests; non2xx += bad
    rps += (requests - bad) / seconds
    p50 = max(p50, ms(text, 50)); p99 = max(p99, ms(text, 99))
    e = re.search(r"Socket errors: (.*)", text)
    if e: socket.append(e.group(1))
print(f"{n} process(es) x {connections} connections: {rps:8,.0f} writes/s  p50 {p50:6.2f} ms  "
      f"p99 {p99:6.2f} ms  {total} requests, non-2xx {non2xx}, "
      f"socket errors {'; '.join(socket) if socket else 'none'}")
PY
  writes_done=$(awk '/requests in/ {n += $1} /Non-2xx/ {n -= $NF} END {print n + 0}' "${outs[@]}")
  read -r b0 t0 <<<"$cpu_before"; read -r b1 t1 <<<"$cpu_after"
  python3 -c "
busy, total, writes, hz = $b1 - $b0, $t1 - $t0, $writes_done, $(getconf CLK_TCK)
print(f'  cores busy {100 * busy / max(total, 1):.0f}%, CPU per write {busy / hz / max(writes, 1) * 1e6:.0f} us (all processes, kernel included)')"
  if [ "${STATS:-0}" = 1 ]; then
    writes=$(( writes_done > 0 ? writes_done : 1 ))  # every request refused: still print the rest
    sleep 1.5  # each backend reports its transaction counts to pg_stat_database at most once a second
    commits=$(psql_q "SELECT xact_commit FROM pg_stat_database WHERE datname = 'postgres'")
    echo "  per write: $(python3 -c "print(f'{($commits - $commits_before) / $writes:.2f}')") transactions (all of the database's, the followers' too); statements, busiest first:"
    psql_q "SELECT to_char(calls::float8 / $writes, 'FM990.000') || '  ' || to_char(total_exec_time / $writes * 1000, 'FM99990.0') || ' us  ' || left(regexp_replace(query, '\s+', ' ', 'g'), 110) FROM pg_stat_statements WHERE calls > $writes / 100 ORDER BY calls DESC LIMIT 25" | sed 's/^/    /'
  fi
  for pid in "${SERVERS[@]}"; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
  for i in $(seq 0 $((n - 1))); do
    echo "  server $i: refused as busy (503): $(grep -c "conflicting concurrent" "$WORK/server-$i.log" || true)"
  done
  SERVERS=()
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
