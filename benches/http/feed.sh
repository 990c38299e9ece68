#!/usr/bin/env bash
# Event feed benchmark: builds the server in release mode, loads the demo, and measures on
# loopback
#   1. commit -> delivery latency in the same process: a writer renames an invoice (as admin,
#      PATCH, one every INTERVAL_MS, COMMITS times) while alice (a document-type ACL) follows
#      the log, once by long polls (GET /api/v4/events/?after=&wait=30) and once by Server-Sent
#      Events; the latency of an event is when the follower had it minus the event's own
#      timestamp (taken in the writing transaction, on the same machine's clock), so it counts
#      the commit, the wake-up, the follower's read and the answer; p50, p99, max;
#   2. with PG_URL=postgres://... (a database docmeta may use: the demo is loaded into it when
#      it holds none): the same with two servers on that database, writing through one and
#      following the other (the commit reaches the follower by a PostgreSQL notification);
#   3. FEEDS (1,000) long polls held open (wait=60, at the end of the log, as alice) while wrk
#      drives GET /api/v4/health/ and GET /api/v4/documents/1/ as alice (a read on the blocking
#      pool) for DURATION seconds each with CONNECTIONS connections: p50/p99 beside the feeds,
#      and the same without them first, for comparison; then one commit wakes them all, and the
#      time each had it (fan-out p50/p99/max).
# The server's max_connections_per_address is raised to 4,096 for the run: every client is
# 127.0.0.1 (the default, 256, would refuse most of the 1,000 feeds).
# COMMITS (300), INTERVAL_MS (20), FEEDS (1000), DURATION (15), CONNECTIONS (4), PORT (18775),
# PORT_B (18776), PROFILE (release), DOCMETA_BIN (a given build, not rebuilt).
# Needs wrk, curl and python3 (standard library only).
set -euo pipefail
cd "$(dirname "$0")/../.."
COMMITS="${COMMITS:-300}"
INTERVAL_MS="${INTERVAL_MS:-20}"
FEEDS="${FEEDS:-1000}"
DURATION="${DURATION:-15}"
CONNECTIONS="${CONNECTIONS:-4}"
PORT="${PORT:-18775}"
PORT_B="${PORT_B:-18776}"
command -v wrk >/dev/null || { echo "wrk is missing: apt-get install wrk" >&2; exit 1; }
PROFILE="${PROFILE:-release}"
if [ -n "${DOCMETA_BIN:-}" ]; then
  BIN=$DOCMETA_BIN
else
  if [ "$PROFILE" = release ]; then cargo build --release -q -p docmeta-server; else cargo build -q -p docmeta-server; fi
  BIN=${CARGO_TARGET_DIR:-target}/$PROFILE/docmeta
fi
SCRATCH="$(mktemp -d)"
SERVERS=""
HOLDER=""
cleanup() {
  for pid in $SERVERS $HOLDER; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
  rm -rf "$SCRATCH"
}
trap cleanup EXIT
export DOCMETA_ADMIN_PASSWORD=admin-password
CONFIG="max_connections_per_address: 4096
"
wait_for() { # url, seconds
  local deadline=$(( $(date +%s) + ${2:-30} ))
  while [ "$(date +%s)" -lt "$deadline" ]; do curl -sf "$1" >/dev/null && return 0; sleep 0.1; done
  echo "no answer from $1 within ${2:-30} s" >&2; exit 1
}
serve() { # data directory, port, [database URL]: starts a server, adds its pid to SERVERS
  mkdir -p "$1"
  printf '%s' "$CONFIG" >"$1/config.yml"
  if [ -n "${3:-}" ]; then
    DOCMETA_DATA="$1" DOCMETA_DATABASE_URL="$3" DOCMETA_LOG=warn "$BIN" serve --bind "127.0.0.1:$2" >"$1.log" 2>&1 &
  else
    DOCMETA_DATA="$1" DOCMETA_LOG=warn "$BIN" serve --bind "127.0.0.1:$2" >"$1.log" 2>&1 &
  fi
  SERVERS="$SERVERS $!"
  wait_for "http://127.0.0.1:$2/api/v4/health/"
}
demo() { # data directory, [database URL]
  mkdir -p "$1"
  printf '%s' "$CONFIG" >"$1/config.yml"
  if [ -n "${2:-}" ]; then
    DOCMETA_DATA="$1" DOCMETA_DATABASE_URL="$2" "$BIN" demo >/dev/null
  else
    DOCMETA_DATA="$1" "$BIN" demo >/dev/null
  fi
}

cat >"$SCRATCH/feed.py" <<'PY'
"""The clients of benches/http/feed.sh (standard library only)."""
import asyncio, base64, datetime, http.client, json, os, resource, socket, sys, threading, time

ADMIN = "Basic " + base64.b64encode(b"admin:admin-password").decode()
ALICE = "Basic " + base64.b64encode(b"alice:demo-password").decode()


def conn(base):
    host, port = base.removeprefix("http://").split(":")
    return http.client.HTTPConnection(host, int(port), timeout=120)


def get(c, path, auth):
    c.request("GET", path, headers={"Authorization": auth})
    r = c.getresponse()
    body = r.read()
    if r.status != 200:
        raise SystemExit(f"GET {path}: {r.status} {body[:200]!r}")
    return json.loads(body)


def head(base):
    c = conn(base)
    return get(c, "/api/v4/events/?page_size=1", ADMIN)["results"][0]["id"]


def rename(c, label):
    c.request("PATCH", "/api/v4/documents/1/", body=json.dumps({"label": label}),
              headers={"Authorization": ADMIN, "Content-Type": "application/json"})
    r = c.getresponse()
    r.read()
    if r.status != 200:
        raise SystemExit(f"PATCH: {r.status}")


def age_ms(event, now):
    stamp = datetime.datetime.fromisoformat(event["timestamp"].replace("Z", "+00:00")).timestamp()
    return (now - stamp) * 1000


def quantiles(values):
    v = sorted(values)
    if not v:
        return "no samples"
    q = lambda p: v[min(len(v) - 1, int(p * len(v)))]
    return f"p50 {q(0.50):7.2f} ms  p99 {q(0.99):7.2f} ms  max {v[-1]:7.2f} ms  ({len(v)} samples)"


def writer(base, commits, interval, tag):
    c = conn(base)
    for i in range(commits):
        time.sleep(interval)
        rename(c, f"{tag} {i}")


def latency(write_base, follow_base, mode, commits, interval):
    """Latency of each renamed invoice's event, as alice follows the log by `mode`."""
    tag = f"feed-bench-{mode}-{os.getpid()}"
    start = head(follow_base)
    seen = []
    done = threading.Event()

    def on(events, now):
        for e in events:
            if e["target"]["label"].startswith(tag):
                seen.append(age_ms(e, now))
        if len(seen) >= commits:
            done.set()

    if mode == "poll":
        def follow():
            c = conn(follow_base)
            cursor = start
            while not done.is_set():
                page = get(c, f"/api/v4/events/?after={cursor}&wait=30&page_size=500", ALICE)
                on(page["results"], time.time())
                cursor = page["cursor"]
    else:
        def follow():
            host, port = follow_base.removeprefix("http://").split(":")
            s = socket.create_connection((host, int(port)))
            s.sendall((f"GET /api/v4/events/ HTTP/1.1\r\nHost: {host}\r\nAuthorization: {ALICE}\r\n"
                       f"Accept: text/event-stream\r\nLast-Event-ID: {start}\r\n\r\n").encode())
            f = s.makefile("rb")
            while f.readline() not in (b"\r\n", b""):
                pass  # the head
            while not done.is_set():
                size = f.readline()
                if not size:
                    break
                chunk = f.read(int(size.strip() or b"0", 16))
                f.readline()
                now = time.time()
                events = [json.loads(line[6:]) for line in chunk.split(b"\n") if line.startswith(b"data: ")]
                on(events, now)
            s.close()

    t = threading.Thread(target=follow, daemon=True)
    t.start()
    time.sleep(0.3)
    writer(write_base, commits, interval, tag)
    done.wait(60)
    return seen


async def hold(base, feeds, ready_file, go_file):
    """Holds `feeds` long polls open at the end of the log, then, told to, commits once and
    reports when each had the event."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    host, port = base.removeprefix("http://").split(":")
    start = head(base)
    tag = f"feed-bench-fan-{os.getpid()}"
    got = []

    async def one():
        reader, w = await asyncio.open_connection(host, int(port))
        w.write((f"GET /api/v4/events/?after={start}&wait=60 HTTP/1.1\r\nHost: {host}\r\n"
                 f"Authorization: {ALICE}\r\nConnection: close\r\n\r\n").encode())
        await w.drain()
        opened.append(1)
        data = await reader.read()
        now = time.time()
        w.close()
        body = data.split(b"\r\n\r\n", 1)[1] if b"\r\n\r\n" in data else b""
        try:
            page = json.loads(body)
        except ValueError:
            return
        for e in page.get("results", []):
            if e["target"]["label"] == tag:
                got.append(age_ms(e, now))

    opened = []
    tasks = [asyncio.create_task(one()) for _ in range(feeds)]
    while len(opened) < feeds:
        await asyncio.sleep(0.05)
    await asyncio.sleep(1)  # every request reached the server and waits
    open(ready_file, "w").close()
    while not os.path.exists(go_file):
        await asyncio.sleep(0.05)
    c = conn(base)
    rename(c, tag)
    await asyncio.gather(*tasks)
    print(f"fan-out, one commit to {feeds} waiting long polls: {quantiles(got)}", file=sys.stderr)


if __name__ == "__main__":
    what = sys.argv[1]
    if what == "latency":
        write_base, follow_base, mode, commits, interval, name = sys.argv[2:8]
        seen = latency(write_base, follow_base, mode, int(commits), int(interval) / 1000)
        print(f"{name:<52} {quantiles(seen)}", file=sys.stderr)
    elif what == "hold":
        base, feeds, ready, go = sys.argv[2:6]
        asyncio.run(hold(base, int(feeds), ready, go))
PY

wrk_line() { # name, wrk arguments...
  local name=$1; shift
  local out="$SCRATCH/wrk-$RANDOM.txt"
  wrk -t2 -c"$CONNECTIONS" -d"${DURATION}s" --latency "$@" >"$out"
  python3 - "$name" "$out" <<'PY'
import re, sys
name, path = sys.argv[1], sys.argv[2]
text = open(path).read()
def ms(label):
    m = re.search(rf"^\s*{label}%\s+([\d.]+)(us|ms|s)\s*$", text, re.M)
    if not m: return float("nan")
    v, unit = float(m.group(1)), m.group(2)
    return v / 1000 if unit == "us" else v * 1000 if unit == "s" else v
rps = float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))
non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
errors = re.search(r"Socket errors: (.*)", text)
print(f"{name:<52} {rps:>8,.0f}/s  p50 {ms(50):7.2f} ms  p99 {ms(99):7.2f} ms  "
      f"non-2xx {non2xx.group(1) if non2xx else 0}, socket errors {errors.group(1) if errors else 'none'}",
      file=sys.stderr)
PY
}

echo "docmeta event feed: $COMMITS commits every $INTERVAL_MS ms, $FEEDS waiting feeds, wrk ${DURATION}s x $CONNECTIONS connections, $(nproc) cores"
A="$SCRATCH/a"
demo "$A"
serve "$A" "$PORT"
BASE="http://127.0.0.1:$PORT"
python3 "$SCRATCH/feed.py" latency "$BASE" "$BASE" poll "$COMMITS" "$INTERVAL_MS" "latency, same process, long poll (SQLite)"
python3 "$SCRATCH/feed.py" latency "$BASE" "$BASE" sse "$COMMITS" "$INTERVAL_MS" "latency, same process, SSE (SQLite)"

AUTH="Authorization: Basic $(printf 'alice:demo-password' | base64)"
wrk_line "GET /api/v4/health/, no feeds" "$BASE/api/v4/health/"
wrk_line "GET /api/v4/documents/1/ (alice), no feeds" -H "$AUTH" "$BASE/api/v4/documents/1/"
python3 "$SCRATCH/feed.py" hold "$BASE" "$FEEDS" "$SCRATCH/ready" "$SCRATCH/go" &
HOLDER=$!
deadline=$(( $(date +%s) + 60 ))
until [ -e "$SCRATCH/ready" ]; do
  [ "$(date +%s)" -lt "$deadline" ] || { echo "the $FEEDS feeds did not open" >&2; exit 1; }
  kill -0 "$HOLDER" || { echo "the feed holder failed" >&2; exit 1; }
  sleep 0.2
done
echo "server threads with $FEEDS feeds waiting: $(ls /proc/"$(echo $SERVERS | cut -d' ' -f1)"/task | wc -l)"
wrk_line "GET /api/v4/health/, $FEEDS feeds waiting" "$BASE/api/v4/health/"
wrk_line "GET /api/v4/documents/1/ (alice), $FEEDS feeds waiting" -H "$AUTH" "$BASE/api/v4/documents/1/"
touch "$SCRATCH/go"
wait "$HOLDER"
HOLDER=""

if [ -n "${PG_URL:-}" ]; then
  PA="$SCRATCH/pa"; PB="$SCRATCH/pb"
  # `docmeta demo` loads the demo once: on a database that holds it, it changes nothing.
  demo "$PA" "$PG_URL"
  serve "$PA" "$PORT_B" "$PG_URL"
  serve "$PB" "$((PORT_B + 1))" "$PG_URL"
  WA="http://127.0.0.1:$PORT_B"; WB="http://127.0.0.1:$((PORT_B + 1))"
  python3 "$SCRATCH/feed.py" latency "$WA" "$WA" poll "$COMMITS" "$INTERVAL_MS" "latency, same process, long poll (PostgreSQL)"
  python3 "$SCRATCH/feed.py" latency "$WA" "$WB" poll "$COMMITS" "$INTERVAL_MS" "latency, other process, long poll (PostgreSQL)"
  python3 "$SCRATCH/feed.py" latency "$WA" "$WB" sse "$COMMITS" "$INTERVAL_MS" "latency, other process, SSE (PostgreSQL)"
fi
