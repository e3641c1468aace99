#!/usr/bin/env bash
# Soak: JOBS short batch jobs (raw_exec /bin/true) through one dev agent
# with garbage collection set low, in rounds of 1,000. After each round it
# prints the round's time, the agent's RSS, the alloc dirs on disk and the
# evaluations and allocations the servers hold; at the end it compares the
# last round with the first: time within 1.2x and RSS within 2x, else it
# exits 1.
#
#   JOBS      jobs in all (default 10000)
#   ROUND     jobs per round (default 1000)
#   PAR       concurrent submitters (default 8)
#   SNAPSHOT_INTERVAL  raft_snapshot_interval (default 5s)
#   DROVER    the binary (default: bin/drover, built first)
#   KEEP=1    keep the work dir
set -euo pipefail

cd "$(dirname "$0")/../.."
if [[ -z "${DROVER:-}" ]]; then
  DROVER=bin/drover
  go build -o "$DROVER" .
fi
JOBS=${JOBS:-10000}
ROUND=${ROUND:-1000}
PAR=${PAR:-8}

work=$(mktemp -d /tmp/drover-soak.XXXXXX)
chmod 711 "$work" # tasks run as nobody: they must reach their dirs
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat >"$work/soak.hcl" <<EOF
ports {
  http = $port
  rpc  = $((port + 1))
  serf = $((port + 2))
}
server {
  gc_interval       = "2s"
  job_gc_threshold  = "1s"
  eval_gc_threshold = "1s"
  # Housekeeping scaled to the soak's pace as GC is: at the default 120s
  # the first snapshot (and log compaction) would come at round 7.
  raft_snapshot_interval = "${SNAPSHOT_INTERVAL:-5s}"
}
client {
  gc_interval   = "2s"
  gc_max_allocs = 50
}
EOF
"$DROVER" agent -dev -dev-gpus 4 -config "$work/soak.hcl" -data-dir "$work/data" -log-level WARN >"$work/agent.log" 2>&1 &
agent=$!
cleanup() {
  kill "$agent" 2>/dev/null || true
  wait "$agent" 2>/dev/null || true
  if [[ "${KEEP:-}" != 1 ]]; then rm -rf "$work"; else echo "# work dir kept: $work"; fi
}
trap cleanup EXIT

echo "# soak: $JOBS jobs in rounds of $ROUND, $PAR submitters, agent pid $agent on 127.0.0.1:$port ($("$DROVER" version | head -1))"
python3 - "$port" "$agent" "$work/data" "$JOBS" "$ROUND" "$PAR" <<'PY'
import json, os, sys, threading, time, urllib.request

port, pid, data, jobs, rnd, par = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
base = f"http://127.0.0.1:{port}"

def call(method, path, body=None):
    req = urllib.request.Request(base + path, method=method, data=None if body is None else json.dumps(body).encode())
    req.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.loads(r.read() or b"null")

deadline = time.time() + 60
while True:
    try:
        if any(n.get("Status") == "ready" for n in call("GET", "/v1/nodes")):
            break
    except Exception:
        pass
    if time.time() > deadline:
        sys.exit("soak: the agent has no ready node after 60 s")
    time.sleep(0.5)

def job(jid):
    return {"Job": {"ID": jid, "Type": "batch", "Datacenters": ["dc1"], "TaskGroups": [{"Name": "g", "Count": 1,
            "Tasks": [{"Name": "t", "Driver": "raw_exec", "Config": {"command": "/bin/true"},
                       "Resources": {"CPU": 20, "MemoryMB": 16}}]}]}}

def rss_mb(field="VmRSS"):
    # VmRSS = RssAnon (Go heap, stacks) + RssFile (mapped files: the
    # binary and BoltDB's mmap of raft.db and state.db, which the kernel
    # may reclaim) + RssShmem.
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return 0

def file_mb(*parts):
    try:
        return os.path.getsize(os.path.join(data, *parts)) / 2**20
    except FileNotFoundError:
        return 0

def alloc_dirs():
    d = os.path.join(data, "client", "alloc")
    try:
        return len(os.listdir(d))
    except FileNotFoundError:
        return 0

def live():
    allocs = call("GET", "/v1/allocations")
    return sum(1 for a in allocs if a["ClientStatus"] in ("pending", "running")), len(allocs)

rows = []
print(f"{'round':>5} {'jobs':>6} {'seconds':>8} {'rss_mb':>7} {'anon_mb':>7} {'file_mb':>7} {'raftdb_mb':>9} {'alloc_dirs':>10} {'evals':>6} {'allocs':>6}")
for r in range(jobs // rnd):
    ids = [f"soak-{r}-{i}" for i in range(rnd)]
    errors = []
    start = time.time()
    def submit(chunk):
        for jid in chunk:
            try:
                call("PUT", "/v1/jobs", job(jid))
            except Exception as e:
                errors.append(f"{jid}: {e}")
    threads = [threading.Thread(target=submit, args=(ids[i::par],)) for i in range(par)]
    for t in threads: t.start()
    for t in threads: t.join()
    # The round is done when nothing is pending or running and every job
    # was either completed (its summary) or already collected.
    while True:
        pending, _ = live()
        evals = [e for e in call("GET", "/v1/evaluations") if e["Status"] in ("pending", "blocked")]
        if pending == 0 and not evals:
            break
        if time.time() - start > 900:
            sys.exit(f"soak: round {r} not done after 900 s ({pending} allocations live)")
        time.sleep(0.2)
    secs = time.time() - start
    _, allocs = live()
    evals = len(call("GET", "/v1/evaluations"))
    row = (r + 1, (r + 1) * rnd, secs, rss_mb(), rss_mb("RssAnon"), rss_mb("RssFile"), file_mb("server", "raft", "raft.db"), alloc_dirs(), evals, allocs)
    rows.append(row)
    print(f"{row[0]:>5} {row[1]:>6} {row[2]:>8.1f} {row[3]:>7.1f} {row[4]:>7.1f} {row[5]:>7.1f} {row[6]:>9.1f} {row[7]:>10} {row[8]:>6} {row[9]:>6}", flush=True)
    if errors:
        sys.exit(f"soak: {len(errors)} submissions failed, first: {errors[0]}")

first, last = rows[0], rows[-1]
t_ratio, rss_ratio = last[2] / first[2], last[3] / first[3]
print(f"# last round / first: time {t_ratio:.2f}x (limit 1.2x), RSS {rss_ratio:.2f}x (limit 2x)")
sys.exit(0 if t_ratio <= 1.2 and rss_ratio <= 2 else 1)
PY
