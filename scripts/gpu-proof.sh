#!/usr/bin/env bash
# shellcheck disable=SC2317  # functions run from traps look unreachable to shellcheck
# gpu-proof.sh: prove Drover on a machine with real NVIDIA GPUs.
#
#   scripts/gpu-proof.sh              # real GPUs (needs nvidia-smi); exit 3 when there are none
#   scripts/gpu-proof.sh --simulate   # the same flow on simulated GPUs, for machines without one
#
# It starts `drover agent -dev` on free loopback ports with its own data dir,
# checks the NVML fingerprint against nvidia-smi, the GPU stats (under a
# small CUDA load when libcuda can be driven from python3), the GPUs each
# task is given (raw_exec and exec), an unplaceable job, and MPS sharing,
# and prints one PASS/FAIL/SKIP/WARN line per check and a summary.
# Evidence (nvidia-smi output, API answers, task logs, agent logs) goes to
# ${OUT:-./gpu-proof-out}. It changes no GPU setting (no nvidia-smi -c, -mig,
# -pm, -r), bounds every wait, stops the agent and what it started on exit,
# and stops as a whole after PROOF_BUDGET seconds (default 500).
#
# Exit: 0 no FAIL, 1 a check failed, 2 cannot run (no go/python3, build
# failed), 3 no NVIDIA GPU (without --simulate).
#
# Environment: DROVER_BIN (a prebuilt drover; default ./bin/drover, built
# when missing), OUT, PROOF_BUDGET, SIM_GPUS (--simulate, default 2),
# DROVER_TOKEN (sent as X-Nomad-Token if set), KEEP=1 (keep the temp dir).
set -u -o pipefail

START_TS=$(date +%s)
SIMULATE=0
for arg in "$@"; do
	case "$arg" in
	--simulate | -simulate) SIMULATE=1 ;;
	-h | --help)
		sed -n '3,24p' "$0" | sed 's/^# \{0,1\}//'
		exit 0
		;;
	*)
		echo "gpu-proof: unknown argument $arg (try --help)" >&2
		exit 2
		;;
	esac
done

BUDGET=${PROOF_BUDGET:-500}
SIM_GPUS=${SIM_GPUS:-2}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${OUT:-./gpu-proof-out}
mkdir -p "$OUT" || {
	echo "gpu-proof: cannot create $OUT" >&2
	exit 2
}
OUT=$(cd "$OUT" && pwd)
: >"$OUT/results.txt"

log() { printf '%s gpu-proof: %s\n' "$(date +%H:%M:%S)" "$*"; }
elapsed() { echo $(($(date +%s) - START_TS)); }
# left: seconds of the budget left, less a reserve for cleanup and summary.
left() { echo $((BUDGET - 45 - $(elapsed))); }
# cap N: N, or what is left of the budget if less (at least 1).
cap() {
	local l
	l=$(left)
	((l < 1)) && l=1
	if ((l < $1)); then echo "$l"; else echo "$1"; fi
}

PASSES=0 FAILS=0 SKIPS=0 WARNS=0
record() { # record STATUS CHECK MESSAGE...
	local st=$1 ck=$2
	shift 2
	printf '%-4s [%s] %s\n' "$st" "$ck" "$*" | tee -a "$OUT/results.txt"
	[ "$st" = FAIL ] && printf '%-4s [%s] %s\n' "$st" "$ck" "$*" >>"$OUT/failures.txt"
	case "$st" in
	PASS) PASSES=$((PASSES + 1)) ;;
	FAIL) FAILS=$((FAILS + 1)) ;;
	SKIP) SKIPS=$((SKIPS + 1)) ;;
	WARN) WARNS=$((WARNS + 1)) ;;
	esac
}
# record_lines CHECK: record each "STATUS message" line read from stdin.
record_lines() {
	local ck=$1 st msg
	while read -r st msg; do
		case "$st" in PASS | FAIL | SKIP | WARN) record "$st" "$ck" "$msg" ;; *) [ -n "$st" ] && echo "     $st $msg" ;; esac
	done
}

# ---------------------------------------------------------------- no GPU?
if ((!SIMULATE)); then
	if ! command -v nvidia-smi >/dev/null 2>&1; then
		echo "gpu-proof: no NVIDIA GPU: nothing to prove (nvidia-smi not found)."
		echo "gpu-proof: run 'scripts/gpu-proof.sh --simulate' to exercise the flow on simulated GPUs."
		exit 3
	fi
	if ! timeout 30 nvidia-smi -L >"$OUT/01-nvidia-smi-L.txt" 2>&1 || ! grep -q '^GPU ' "$OUT/01-nvidia-smi-L.txt"; then
		echo "gpu-proof: no NVIDIA GPU: nothing to prove (nvidia-smi -L lists none:"
		sed 's/^/    /' "$OUT/01-nvidia-smi-L.txt"
		echo "gpu-proof: )"
		exit 3
	fi
fi

if ! command -v python3 >/dev/null 2>&1; then
	echo "gpu-proof: python3 not found: it reads the API's JSON answers; install python3 and rerun." >&2
	exit 2
fi
PY=$(command -v python3)

# ---------------------------------------------------------------- drover
BIN=${DROVER_BIN:-$ROOT/bin/drover}
if [ ! -x "$BIN" ]; then
	GO=$(command -v go || true)
	[ -z "$GO" ] && [ -x /usr/local/go/bin/go ] && GO=/usr/local/go/bin/go
	if [ -z "$GO" ]; then
		echo "gpu-proof: go not found (PATH, /usr/local/go/bin) and no drover binary at $BIN:" >&2
		echo "gpu-proof: build one elsewhere (CGO_ENABLED=1 go build -o bin/drover .) and pass DROVER_BIN=/path/to/drover." >&2
		exit 2
	fi
	log "building $BIN with $GO (no network: GOPROXY=off unless set)"
	mkdir -p "$(dirname "$BIN")"
	if ! (cd "$ROOT" && CGO_ENABLED=1 GOTOOLCHAIN=${GOTOOLCHAIN:-local} GOPROXY=${GOPROXY:-off} GOFLAGS=${GOFLAGS:--mod=mod} \
		timeout 300 "$GO" build -o "$BIN" .) >"$OUT/00-build.log" 2>&1; then
		echo "gpu-proof: build failed (log: $OUT/00-build.log):" >&2
		tail -n 15 "$OUT/00-build.log" >&2
		echo "gpu-proof: with no module cache here, build elsewhere and pass DROVER_BIN=/path/to/drover." >&2
		exit 2
	fi
fi
if ! timeout 20 "$BIN" version >"$OUT/00-drover-version.txt" 2>&1; then
	echo "gpu-proof: $BIN does not run:" >&2
	cat "$OUT/00-drover-version.txt" >&2
	exit 2
fi
BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")
log "drover: $BIN ($(head -n1 "$OUT/00-drover-version.txt")); evidence in $OUT; budget ${BUDGET}s"

# ---------------------------------------------------------------- work dir, helpers
WORK=$(mktemp -d /tmp/gp.XXXXXX) # short: MPS pipe sockets live under it
chmod 711 "$WORK" # tasks run as nobody (the safe default): they must reach their alloc dirs under it
AGENT_PID="" ADDR="" NODE_ID="" WATCHDOG="" AGENT_KIDS=""
HDR=()
[ -n "${DROVER_TOKEN:-}" ] && HDR=(-H "X-Nomad-Token: $DROVER_TOKEN")

cat >"$WORK/proof.py" <<'PYEOF'
import csv, json, re, sys

UNITS = {"": 1, "B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40,
         "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12}

def load(p):
    with open(p) as f:
        return json.load(f)

def parse_bytes(s):
    m = re.match(r"^\s*([0-9.]+)\s*([A-Za-z]*)\s*$", s or "")
    if not m or m.group(2) not in UNITS:
        return None
    return float(m.group(1)) * UNITS[m.group(2)]

def smi(path):
    """nvidia-smi --query-gpu=name,uuid,memory.total,...,mig --format=csv,noheader,nounits"""
    gpus = []
    with open(path) as f:
        for row in csv.reader(f, skipinitialspace=True):
            if len(row) < 3 or not row[1].strip().startswith("GPU-"):
                continue
            try:
                mem = float(row[2]) * (1 << 20)
            except ValueError:
                mem = None
            gpus.append({"name": row[0].strip(), "uuid": row[1].strip(), "mem": mem,
                         "mig": row[5].strip() if len(row) > 5 else ""})
    return gpus

def node_gpus(node):
    out = []
    for d in (node.get("NodeResources") or {}).get("Devices") or []:
        if d.get("Type") != "gpu":
            continue
        for i in d.get("Instances") or []:
            out.append({"vendor": d.get("Vendor"), "name": d.get("Name"), "attrs": d.get("Attributes") or {},
                        "id": i.get("ID"), "healthy": i.get("Healthy"), "health": i.get("HealthDescription"),
                        "iattrs": i.get("Attributes") or {}})
    return out

def within(a, b, pct):
    return a is not None and b is not None and b > 0 and abs(a - b) <= b * pct / 100.0

def cmd_node_id(args):
    nodes = load(args[0])
    for n in nodes or []:
        print("%s\t%s\t%s" % (n.get("ID"), n.get("Status"), n.get("GPUs", "")))
        return

def cmd_gpus(args):
    for g in node_gpus(load(args[0])):
        print("\t".join([g["id"] or "", g["name"] or "", g["iattrs"].get("sharing", ""),
                         g["attrs"].get("simulated", "false"), str(g["healthy"]).lower()]))

def cmd_driver(args):
    d = (load(args[0]).get("Drivers") or {}).get(args[1]) or {}
    print("%s\t%s\t%s" % (str(d.get("Healthy", False)).lower(), str(d.get("Detected", False)).lower(),
                          d.get("HealthDescription", "not reported")))

def cmd_fingerprint(args):
    node, want, simulate = load(args[0]), args[1], args[2] == "1"
    got = node_gpus(node)
    ids = [g["id"] for g in got]
    if simulate:
        n = int(want)
        print(("PASS" if len(got) == n else "FAIL") + " node reports %d GPUs (asked for %d simulated)" % (len(got), n))
        sim = [g for g in got if g["attrs"].get("simulated") == "true" and g["health"] == "simulated"]
        print(("PASS" if got and len(sim) == len(got) else "FAIL") +
              " %d of %d GPUs labelled simulated (attr simulated=true, health 'simulated')" % (len(sim), len(got)))
        print("SKIP real GPU match against nvidia-smi (simulated GPUs)")
        return
    real = smi(want)
    whole = [g for g in real if g["mig"].lower() != "enabled"]
    for g in real:
        if g["mig"].lower() == "enabled":
            print("WARN GPU %s is in MIG mode: Drover offers its MIG instances, not the GPU; left out of the match" % g["uuid"])
    whole_ids = [g["uuid"] for g in whole]
    gpu_ids = [i for i in ids if i and i.startswith("GPU-")]
    print(("PASS" if len(gpu_ids) == len(whole) and len(set(gpu_ids)) == len(gpu_ids) else "FAIL") +
          " node reports %d whole GPUs, nvidia-smi %d (%d in MIG mode)" % (len(gpu_ids), len(whole), len(real) - len(whole)))
    missing = [u for u in whole_ids if u not in ids]
    extra = [u for u in gpu_ids if u not in whole_ids]
    print(("PASS" if not missing and not extra else "FAIL") +
          " GPU UUIDs match nvidia-smi" + ("" if not missing and not extra else
                                         ": missing %s, unknown %s" % (missing, extra)))
    by = {g["id"]: g for g in got}
    bad_name, bad_mem, mems = [], [], []
    for s in whole:
        g = by.get(s["uuid"])
        if not g:
            continue
        if g["name"] != s["name"]:
            bad_name.append("%s: %r vs %r" % (s["uuid"], g["name"], s["name"]))
        mb = parse_bytes(g["attrs"].get("memory"))
        mems.append("%s %s" % (s["uuid"][:12], g["attrs"].get("memory")))
        if not within(mb, s["mem"], 1.0):
            bad_mem.append("%s: drover %s vs nvidia-smi %.0f MiB" % (s["uuid"], g["attrs"].get("memory"), (s["mem"] or 0) / (1 << 20)))
    sim = [g["id"] for g in got if g["attrs"].get("simulated") == "true" or g["health"] == "simulated"]
    print(("PASS" if not sim else "FAIL") + " no GPU marked simulated (NVML): " +
          (", ".join(sim) if sim else "attrs %s" % json.dumps({k: v for k, v in (got[0]["attrs"] if got else {}).items()
                                                                 if k in ("driver_version", "cuda_version", "compute_capability", "architecture")})))
    unhealthy = ["%s (%s)" % (g["id"], g["health"]) for g in got if not g["healthy"]]
    print(("PASS" if not unhealthy else "WARN") + " GPUs healthy" + (": unhealthy " + ", ".join(unhealthy) if unhealthy else ""))
    if not mems:
        print("FAIL no GPU of nvidia-smi found on the node: names and memory not compared")
        return
    print(("PASS" if not bad_name else "FAIL") + " model names match nvidia-smi (%s)" %
          ("; ".join(bad_name) if bad_name else ", ".join(sorted({s["name"] for s in whole}))))
    print(("PASS" if not bad_mem else "FAIL") + " memory within 1%% of nvidia-smi (%s)" %
          ("; ".join(bad_mem) if bad_mem else ", ".join(mems)))

def cmd_stats(args):
    st, ids, simulate = load(args[0]), [a for a in args[2].split(",") if a], args[1] == "1"
    devs = {d.get("ID"): d for d in st.get("Devices") or []}
    missing = [u for u in ids if u not in devs]
    print(("PASS" if not missing and ids else "FAIL") + " stats name every GPU by UUID (%d entries)%s" %
          (len(devs), "; missing " + ", ".join(missing) if missing else ""))
    figs, bad = [], []
    for u in ids:
        d = devs.get(u)
        if not d:
            continue
        if d.get("GPUUtilPercent") is None or not d.get("MemoryTotalBytes"):
            bad.append(u)
        figs.append("%s util %.1f%% mem %.0f/%.0f MiB" % (u[:12], d.get("GPUUtilPercent") or 0, (d.get("MemoryUsedBytes") or 0) / 2**20,
                                                      (d.get("MemoryTotalBytes") or 0) / 2**20))
    print(("PASS" if not bad else "FAIL") + " per-GPU utilisation and memory figures: " + "; ".join(figs))
    sims = [u for u in ids if devs.get(u, {}).get("Simulated")]
    if simulate:
        print(("PASS" if len(sims) == len(ids) else "FAIL") + " figures marked Simulated on simulated GPUs")
    else:
        print(("PASS" if not sims else "FAIL") + " figures come from NVML (none marked Simulated)")
    if len(args) > 3 and args[3] and not simulate:
        real = {g["uuid"]: g for g in smi(args[3])}
        both = [u for u in ids if u in devs and u in real]
        bad = ["%s %s vs %s" % (u[:12], devs[u].get("MemoryTotalBytes"), real[u]["mem"]) for u in both
               if not within(devs[u].get("MemoryTotalBytes"), real[u]["mem"], 1.0)]
        print(("PASS" if both and not bad else "FAIL") + " stats memory total within 1%% of nvidia-smi (%d GPUs compared)" % len(both) +
              (": " + "; ".join(bad) if bad else ""))

def cmd_devfig(args):
    d = {x.get("ID"): x for x in load(args[0]).get("Devices") or []}.get(args[1]) or {}
    print("%s\t%d" % (d.get("GPUUtilPercent", -1), int(d.get("MemoryUsedBytes") or 0)))

def cmd_allocs(args):
    for a in load(args[0]) or []:
        uuids, slices = [], []
        for t in ((a.get("AllocatedResources") or {}).get("Tasks") or {}).values():
            for d in t.get("Devices") or []:
                uuids += d.get("DeviceIDs") or []
                if d.get("Compute") or d.get("MemoryMB"):
                    slices.append("compute=%s,memMB=%s" % (d.get("Compute", 0), d.get("MemoryMB", 0)))
        states = ",".join("%s:%s:%s" % (k, v.get("State"), "failed" if v.get("Failed") else "ok")
                          for k, v in (a.get("TaskStates") or {}).items())
        print("\t".join([a.get("ID", ""), a.get("ClientStatus", ""), a.get("DesiredStatus", ""),
                         ",".join(uuids) or "-", ";".join(slices) or "-", states or "-"]))

def cmd_events(args):
    a = load(args[0])
    for task, s in (a.get("TaskStates") or {}).items():
        for e in s.get("Events") or []:
            print("%s: %s: %s" % (task, e.get("Type"), e.get("DisplayMessage") or e.get("Message")))
    if a.get("ClientDescription"):
        print("client: " + a["ClientDescription"])

def cmd_reasons(args):
    for e in load(args[0]) or []:
        for tg, m in (e.get("FailedTGAllocs") or {}).items():
            for k in ("DimensionExhausted", "ConstraintFiltered", "ClassFiltered", "QuotaExhausted"):
                for reason, n in (m.get(k) or {}).items():
                    print("%s: %s (%s on %s nodes)" % (tg, reason, k, n))

def cmd_leader(args):
    try:
        v = load(args[0])
    except Exception:
        return
    if isinstance(v, str) and v:
        print(v)

def cmd_ports(args):
    import socket
    socks, ports = [], []
    for _ in range(int(args[0])):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
        ports.append(s.getsockname()[1])
    for s in socks:
        s.close()
    print(" ".join(map(str, ports)))

cmds = {"node-id": cmd_node_id, "gpus": cmd_gpus, "driver": cmd_driver, "fingerprint": cmd_fingerprint,
        "stats": cmd_stats, "devfig": cmd_devfig, "allocs": cmd_allocs, "events": cmd_events,
        "reasons": cmd_reasons, "leader": cmd_leader, "ports": cmd_ports}
try:
    cmds[sys.argv[1]](sys.argv[2:])
except Exception as e:  # a malformed answer is a finding, not a crash
    print("FAIL helper %s: %s: %s" % (sys.argv[1], type(e).__name__, e))
PYEOF

# gpu_load.py drives libcuda.so.1 through ctypes with a hand-written PTX
# kernel, so a real load needs neither torch nor the CUDA toolkit. It
# prints what CUDA sees (device count and UUID), holds MEM MiB and spins the
# GPU for SECONDS.
cat >"$WORK/gpu_load.py" <<'PYEOF'
import ctypes, os, sys, time

secs, mem_mib = float(sys.argv[1]), int(sys.argv[2])
PTX = b"""
.version 7.0
.target sm_70
.address_size 64
.visible .entry spin(.param .u64 out, .param .u32 n)
{
    .reg .pred %p<2>;
    .reg .b32 %r<5>;
    .reg .b64 %rd<3>;
    ld.param.u64 %rd1, [out];
    ld.param.u32 %r1, [n];
    mov.u32 %r2, 0;
    mov.u32 %r3, %tid.x;
LOOP:
    mad.lo.u32 %r3, %r3, 1664525, 1013904223;
    add.u32 %r2, %r2, 1;
    setp.lt.u32 %p1, %r2, %r1;
    @%p1 bra LOOP;
    cvta.to.global.u64 %rd2, %rd1;
    st.global.u32 [%rd2], %r3;
    ret;
}
\0"""
try:
    cu = ctypes.CDLL("libcuda.so.1")
except OSError as e:
    print("gpu-load: no libcuda.so.1: %s" % e)
    sys.exit(4)

def ck(ret, what):
    if ret != 0:
        name = ctypes.c_char_p()
        cu.cuGetErrorName(ret, ctypes.byref(name))
        print("gpu-load: %s failed: %d %s" % (what, ret, name.value))
        sys.exit(5)

ck(cu.cuInit(0), "cuInit")
n = ctypes.c_int()
ck(cu.cuDeviceGetCount(ctypes.byref(n)), "cuDeviceGetCount")
dev = ctypes.c_int()
ck(cu.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
raw = (ctypes.c_ubyte * 16)()
ck(cu.cuDeviceGetUuid(raw, dev), "cuDeviceGetUuid")
h = bytes(raw).hex()
print("gpu-load: pid %d sees %d CUDA device(s); device 0 is GPU-%s-%s-%s-%s-%s" % (os.getpid(), n.value, h[:8], h[8:12], h[12:16], h[16:20], h[20:]))
sys.stdout.flush()
ctx = ctypes.c_void_p()
ck(cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
ck(cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
buf = ctypes.c_uint64()
ck(cu.cuMemAlloc_v2(ctypes.byref(buf), ctypes.c_size_t(mem_mib << 20)), "cuMemAlloc(%d MiB)" % mem_mib)
ck(cu.cuMemsetD8_v2(buf, ctypes.c_ubyte(1), ctypes.c_size_t(mem_mib << 20)), "cuMemsetD8")
mod, fn = ctypes.c_void_p(), ctypes.c_void_p()
ck(cu.cuModuleLoadData(ctypes.byref(mod), ctypes.c_char_p(PTX)), "cuModuleLoadData (PTX JIT)")
ck(cu.cuModuleGetFunction(ctypes.byref(fn), mod, b"spin"), "cuModuleGetFunction")
out, iters = ctypes.c_uint64(buf.value), ctypes.c_uint32(1 << 18)
params = (ctypes.c_void_p * 2)(ctypes.cast(ctypes.byref(out), ctypes.c_void_p), ctypes.cast(ctypes.byref(iters), ctypes.c_void_p))
launches, end = 0, time.time() + secs
print("gpu-load: holding %d MiB, spinning for %.0fs" % (mem_mib, secs))
sys.stdout.flush()
while time.time() < end:
    ck(cu.cuLaunchKernel(fn, 2048, 1, 1, 256, 1, 1, 0, None, params, None), "cuLaunchKernel")
    ck(cu.cuCtxSynchronize(), "cuCtxSynchronize")
    launches += 1
print("gpu-load: done, %d kernel launches" % launches)
PYEOF

py() { "$PY" "$WORK/proof.py" "$@"; }
# api PATH FILE: GET into FILE, print the HTTP status (000: no answer).
api() {
	local code
	code=$(curl -sS --max-time 15 ${HDR[@]+"${HDR[@]}"} -o "$2" -w '%{http_code}' "$ADDR$1" 2>>"$OUT/curl-errors.log")
	echo "${code:-000}"
}
# drv SUBCMD...: drover with -address after the subcommand words.
drv() {
	local a=() n=$1
	shift
	case "$n" in job | alloc | node) a=("$n" "$1") && shift ;; *) a=("$n") ;; esac
	timeout "$(cap 60)" "$BIN" "${a[@]}" -address "$ADDR" "$@"
}

# descendants PID: every process under PID, deepest first.
descendants() {
	local c
	for c in $(pgrep -P "$1" 2>/dev/null); do
		descendants "$c"
		echo "$c"
	done
}
# ours: processes whose environment or cwd points into WORK (task processes
# and executors left behind after the agent is gone).
ours() {
	local p e
	for p in /proc/[0-9]*; do
		e=${p#/proc/}
		[ "$e" = "$$" ] && continue
		if [[ "$(readlink "$p/cwd" 2>/dev/null)" == "$WORK"* ]] || { tr '\0' '\n' <"$p/environ"; } 2>/dev/null | grep -q "=$WORK/"; then
			echo "$e"
		fi
	done
}

stop_mps_daemons() { # the MPS daemons our agents started, if any remain
	local f pid d ctl
	ctl=$(command -v nvidia-cuda-mps-control || true)
	for f in "$WORK"/data-*/client/mps/*/drover-mps.pid; do
		[ -f "$f" ] || continue
		pid=$(tr -dc '0-9' <"$f")
		d=$(dirname "$f")
		if [ -z "$pid" ] || ! kill -0 "$pid" 2>/dev/null; then continue; fi
		log "cleanup: MPS daemon $pid for $(basename "$d") still runs; sending quit"
		if [ -n "$ctl" ]; then
			echo quit | CUDA_MPS_PIPE_DIRECTORY="$d/pipe" CUDA_MPS_LOG_DIRECTORY="$d/log" timeout 10 "$ctl" >/dev/null 2>&1
		fi
		for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
		kill -TERM "$pid" 2>/dev/null && sleep 2
		kill -KILL "$pid" 2>/dev/null
	done
}

stop_agent() {
	[ -n "$AGENT_PID" ] || return 0
	local kids p
	kids=$(descendants "$AGENT_PID")
	if kill -0 "$AGENT_PID" 2>/dev/null; then
		kill -TERM "$AGENT_PID" 2>/dev/null
		for _ in $(seq 1 40); do kill -0 "$AGENT_PID" 2>/dev/null || break; sleep 0.5; done
		if kill -0 "$AGENT_PID" 2>/dev/null; then
			log "agent $AGENT_PID ignored SIGTERM for 20s: SIGKILL"
			kill -KILL "$AGENT_PID" 2>/dev/null
		fi
	fi
	wait "$AGENT_PID" 2>/dev/null
	AGENT_KIDS="$AGENT_KIDS $kids"
	AGENT_PID=""
	for p in $kids; do kill -0 "$p" 2>/dev/null && echo "$p $({ tr '\0' ' ' <"/proc/$p/cmdline"; } 2>/dev/null)"; done >"$WORK/stragglers" || true
}

kill_stragglers() {
	local p left_over
	stop_mps_daemons
	left_over="$AGENT_KIDS $(ours)"
	for p in $left_over; do
		kill -0 "$p" 2>/dev/null || continue
		[ "$p" = "$$" ] && continue
		echo "straggler $p: $({ tr '\0' ' ' <"/proc/$p/cmdline"; } 2>/dev/null)" >>"$OUT/cleanup.log"
		kill -TERM "$p" 2>/dev/null
	done
	sleep 1
	for p in $left_over; do [ "$p" != "$$" ] && kill -KILL "$p" 2>/dev/null; done
	return 0
}

summary() {
	echo
	echo "==================== gpu-proof summary ($( ((SIMULATE)) && echo simulated || echo real) GPUs, $(elapsed)s) ===================="
	cat "$OUT/results.txt"
	PASSES=$(grep -c '^PASS' "$OUT/results.txt") FAILS=$(grep -c '^FAIL' "$OUT/results.txt")
	WARNS=$(grep -c '^WARN' "$OUT/results.txt") SKIPS=$(grep -c '^SKIP' "$OUT/results.txt")
	echo "----"
	echo "PASS $PASSES  FAIL $FAILS  WARN $WARNS  SKIP $SKIPS    evidence: $OUT"
	{
		echo "PASS $PASSES FAIL $FAILS WARN $WARNS SKIP $SKIPS"
		echo "simulate=$SIMULATE elapsed=$(elapsed)s drover=$BIN"
	} >"$OUT/summary.txt"
}

CLEANED=0
cleanup() {
	((CLEANED)) && return
	CLEANED=1
	trap - EXIT INT TERM
	if [ -n "$WATCHDOG" ]; then # the subshell first, or it would go on to kill us
		local sl
		sl=$(pgrep -P "$WATCHDOG")
		kill "$WATCHDOG" 2>/dev/null
		[ -n "$sl" ] && kill "$sl" 2>/dev/null
	fi
	stop_agent
	kill_stragglers
	for d in "$WORK"/data-*/client/mps/*/log; do
		[ -d "$d" ] && mkdir -p "$OUT/mps-logs" && cp -r "$d" "$OUT/mps-logs/$(basename "$(dirname "$d")")" 2>/dev/null
	done
	if [ "${KEEP:-0}" = 1 ]; then log "kept $WORK"; else rm -rf "$WORK"; fi
}
on_exit() {
	local rc=$?
	cleanup
	summary
	if ((FAILS > 0)); then exit 1; fi
	exit "$rc"
}
on_signal() {
	record FAIL run "stopped by $1 after $(elapsed)s (budget ${BUDGET}s): checks after this point did not run"
	exit 1
}
trap on_exit EXIT
trap 'on_signal INT' INT
trap 'on_signal TERM' TERM
# The watchdog ends the run at the budget; the TERM trap cleans up.
(
	sleep "$BUDGET"
	kill -TERM $$ 2>/dev/null
) </dev/null >/dev/null 2>&1 &
WATCHDOG=$!

# start_agent TAG EXTRA_CLIENT_HCL: a dev agent on free ports; sets AGENT_PID, ADDR, NODE_ID.
PLUGIN_BLOCK=1
start_agent() {
	local tag=$1 extra=$2 http rpc serf cfg data logf t0 deadline leader nid status
	for _ in 1 2; do
		read -r http rpc serf <<<"$(py ports 3)"
		cfg=$WORK/agent-$tag.hcl data=$WORK/data-$tag logf=$OUT/agent-$tag.log
		rm -rf "$data"
		{
			echo "name      = \"gpu-proof\""
			echo "log_level = \"DEBUG\""
			printf 'ports {\n  http = %s\n  rpc  = %s\n  serf = %s\n}\n' "$http" "$rpc" "$serf"
			printf 'client {\n  enabled = true\n%s\n}\n' "$extra"
			if ((PLUGIN_BLOCK)); then
				printf 'plugin "raw_exec" {\n  config {\n    enabled = true\n  }\n}\n'
			fi
		} >"$cfg"
		cp "$cfg" "$OUT/agent-$tag.hcl"
		local args=(agent -dev -config "$cfg" -data-dir "$data")
		((SIMULATE)) && args+=(-dev-gpus "$SIM_GPUS")
		log "starting: $BIN ${args[*]} (http 127.0.0.1:$http)"
		"$BIN" "${args[@]}" >"$logf" 2>&1 &
		AGENT_PID=$!
		ADDR=http://127.0.0.1:$http
		t0=$(date +%s)
		deadline=$((t0 + $(cap 90)))
		NODE_ID=""
		while (($(date +%s) < deadline)); do
			if ! kill -0 "$AGENT_PID" 2>/dev/null; then
				wait "$AGENT_PID" 2>/dev/null
				AGENT_PID=""
				if ((PLUGIN_BLOCK)) && grep -q 'Blocks of type "plugin" are not expected' "$logf"; then
					PLUGIN_BLOCK=0
					log "this drover rejects the plugin block (raw_exec needs no enabling in -dev): retrying without it"
					cp "$logf" "$OUT/agent-$tag-plugin-rejected.log"
					continue 2
				fi
				record FAIL agent "agent ($tag) exited while starting: $(tail -n 3 "$logf" | tr '\n' ' ')"
				return 1
			fi
			if [ "$(api /v1/status/leader "$WORK/leader.json")" = 200 ]; then
				leader=$(py leader "$WORK/leader.json")
				if [ -n "$leader" ] && [ "$(api /v1/nodes "$WORK/nodes.json")" = 200 ]; then
					read -r nid status _ <<<"$(py node-id "$WORK/nodes.json")"
					if [ "${status:-}" = ready ]; then
						NODE_ID=$nid
						break
					fi
				fi
			fi
			sleep 1
		done
		if [ -z "$NODE_ID" ]; then
			record FAIL agent "agent ($tag) not ready (leader and a ready node) within the wait; log $logf"
			return 1
		fi
		record PASS agent "agent ($tag) up in $(($(date +%s) - t0))s: leader $leader, node $NODE_ID ready$( ((PLUGIN_BLOCK)) && echo ', plugin "raw_exec" block accepted' || echo ', plugin block rejected by this build (raw_exec is on in -dev)')"
		return 0
	done
	return 1
}

# wait_allocs JOB N TIMEOUT: until N allocations of JOB are terminal; leaves
# their lines (proof.py allocs) in $WORK/JOB.allocs.
wait_allocs() {
	local job=$1 n=$2 deadline
	deadline=$(($(date +%s) + $(cap "$3")))
	while (($(date +%s) < deadline)); do
		if [ "$(api "/v1/job/$job/allocations" "$WORK/$job.json")" = 200 ]; then
			py allocs "$WORK/$job.json" >"$WORK/$job.allocs"
			if (($(wc -l <"$WORK/$job.allocs") >= n)) && ! awk -F'\t' '$2!="complete" && $2!="failed" && $2!="lost" {bad=1} END {exit !bad}' "$WORK/$job.allocs"; then
				cp "$WORK/$job.json" "$OUT/$job-allocations.json"
				return 0
			fi
		fi
		sleep 1
	done
	[ -f "$WORK/$job.json" ] && cp "$WORK/$job.json" "$OUT/$job-allocations.json"
	return 1
}

# save_alloc CHECKFILE ALLOC: logs and events of an allocation into OUT.
save_alloc() {
	local pfx=$1 id=$2
	drv alloc logs "$id" >"$OUT/$pfx-${id:0:8}.stdout" 2>&1
	drv alloc logs -stderr "$id" >"$OUT/$pfx-${id:0:8}.stderr" 2>&1
	api "/v1/allocation/$id" "$OUT/$pfx-${id:0:8}.alloc.json" >/dev/null
	py events "$OUT/$pfx-${id:0:8}.alloc.json" >"$OUT/$pfx-${id:0:8}.events.txt"
}

# job_hcl NAME DRIVER COUNT DEVICE_BODY SCRIPT
job_hcl() {
	local esc
	esc=$(printf '%s' "$5" | sed -e 's/\\/\\\\/g' -e 's/"/\\"/g') # the scripts hold no ${ or %{
	cat <<EOF
job "$1" {
  type        = "batch"
  datacenters = ["dc1"]
  group "g" {
    count = $3
    restart {
      attempts = 0
      mode     = "fail"
    }
    reschedule {
      attempts  = 0
      unlimited = false
    }
    task "t" {
      driver = "$2"
      config {
        command = "/bin/sh"
        args    = ["-c", "$esc"]
      }
      resources {
        cpu    = 100
        memory = 256
        device "nvidia/gpu" {
$4
        }
      }
    }
  }
}
EOF
}

run_job() { # run_job NAME FILE: drover job run, output to OUT; returns its exit code
	drv job run "$2" >"$OUT/$1-job-run.txt" 2>&1
	local rc=$?
	sed 's/^/     | /' "$OUT/$1-job-run.txt" | head -n 12
	return $rc
}
stop_job() { drv job stop -purge -detach "$1" >/dev/null 2>&1 || true; }

# envval FILE NAME: the value of NAME=... in a task's env dump.
envval() { grep -m1 "^$2=" "$1" 2>/dev/null | cut -d= -f2-; }

# ================================================================ 1. environment
CK=1-env
if ((SIMULATE)); then
	record SKIP $CK "simulated GPUs: no nvidia-smi to record"
	{
		uname -a
		cat /etc/os-release 2>/dev/null
	} >"$OUT/01-host.txt"
	NGPU=$SIM_GPUS
else
	{
		uname -a
		cat /etc/os-release 2>/dev/null
		nproc
		free -m 2>/dev/null
	} >"$OUT/01-host.txt"
	Q=name,uuid,memory.total,driver_version,compute_mode,mig.mode.current
	if ! timeout 30 nvidia-smi --query-gpu=$Q --format=csv >"$OUT/01-query-gpu.csv" 2>&1; then
		Q=name,uuid,memory.total,driver_version,compute_mode
		timeout 30 nvidia-smi --query-gpu=$Q --format=csv >"$OUT/01-query-gpu.csv" 2>&1
	fi
	timeout 30 nvidia-smi --query-gpu=$Q --format=csv,noheader,nounits >"$WORK/smi.csv" 2>&1
	cp "$WORK/smi.csv" "$OUT/01-query-gpu-nounits.csv"
	timeout 30 nvidia-smi >"$OUT/01-nvidia-smi.txt" 2>&1
	timeout 30 nvidia-smi topo -m >"$OUT/01-nvidia-smi-topo.txt" 2>&1
	timeout 30 nvidia-smi --query-compute-apps=pid,gpu_uuid,used_memory --format=csv >"$OUT/01-compute-apps-before.csv" 2>&1
	pgrep -a -f nvidia-cuda-mps >"$OUT/01-mps-before.txt" 2>&1
	NGPU=$(grep -c '^GPU ' "$OUT/01-nvidia-smi-L.txt")
	record PASS $CK "nvidia-smi: $NGPU GPU(s): $(cut -d, -f1,4,5,6 "$WORK/smi.csv" | sort | uniq -c | sed 's/^ *//' | tr '\n' ';')"
	sed 's/^/     | /' "$OUT/01-query-gpu.csv"
	[ -s "$OUT/01-mps-before.txt" ] && record WARN $CK "an MPS daemon already runs on this host (left alone): $(head -n2 "$OUT/01-mps-before.txt" | tr '\n' ' ')"
	if grep -qi enabled <(cut -d, -f6 "$WORK/smi.csv"); then
		record WARN $CK "a GPU is in MIG mode; Drover offers its MIG instances instead (not changed by this script)"
	fi
fi

# ================================================================ 2. fingerprint
CK=2-fingerprint
if ! start_agent a ""; then
	record FAIL $CK "no agent: the remaining checks cannot run"
	exit 1
fi
api "/v1/nodes" "$OUT/02-nodes.json" >/dev/null
api "/v1/node/$NODE_ID" "$OUT/02-node.json" >/dev/null
api "/v1/gpus" "$OUT/02-gpus.json" >/dev/null
drv node status "$NODE_ID" >"$OUT/02-node-status.txt" 2>&1
if ((SIMULATE)); then
	record_lines $CK < <(py fingerprint "$OUT/02-node.json" "$SIM_GPUS" 1)
else
	record_lines $CK < <(py fingerprint "$OUT/02-node.json" "$WORK/smi.csv" 0)
	grep -E 'found GPU|NVML|nvidia' "$OUT/agent-a.log" | head -n 20 >"$OUT/02-agent-gpu-lines.txt"
fi
py gpus "$OUT/02-node.json" >"$WORK/gpus.tsv"
mapfile -t UUIDS < <(cut -f1 "$WORK/gpus.tsv" | grep '^GPU-')
NG=${#UUIDS[@]}
echo "     GPUs: ${UUIDS[*]}"
read -r RAW_OK _ RAW_DESC <<<"$(py driver "$OUT/02-node.json" raw_exec | tr '\t' ' ')"
read -r EXEC_OK _ EXEC_DESC <<<"$(py driver "$OUT/02-node.json" exec | tr '\t' ' ')"
if [ "$RAW_OK" = true ]; then record PASS $CK "raw_exec driver healthy"; else record FAIL $CK "raw_exec driver not healthy: $RAW_DESC"; fi
if ((NG == 0)); then
	record FAIL $CK "the node offers no whole GPU: the GPU checks cannot run"
	exit 1
fi

# ================================================================ 3. stats
CK=3-stats
api "/v1/client/stats?node_id=$NODE_ID" "$OUT/03-stats-idle.json" >"$WORK/code"
if [ "$(cat "$WORK/code")" = 200 ]; then
	record_lines $CK < <(py stats "$OUT/03-stats-idle.json" "$SIMULATE" "$(IFS=,; echo "${UUIDS[*]}")" "$( ((SIMULATE)) || echo "$WORK/smi.csv")")
else
	record FAIL $CK "GET /v1/client/stats?node_id=$NODE_ID answered $(cat "$WORK/code")"
fi
code=$(api "/v1/metrics?format=prometheus" "$OUT/03-metrics.txt")
case "$code" in
404) record SKIP $CK "/v1/metrics?format=prometheus: 404 (no metrics endpoint in this build)" && rm -f "$OUT/03-metrics.txt" ;;
200)
	miss=""
	for u in "${UUIDS[@]}"; do grep -q "$u" "$OUT/03-metrics.txt" || miss="$miss $u"; done
	if [ -z "$miss" ]; then record PASS $CK "/v1/metrics names every GPU UUID"; else record FAIL $CK "/v1/metrics lacks$miss"; fi
	;;
*) record FAIL $CK "/v1/metrics?format=prometheus answered $code" ;;
esac
((SIMULATE)) || timeout 30 nvidia-smi --query-gpu=uuid,utilization.gpu,memory.used,memory.total,temperature.gpu,power.draw --format=csv >"$OUT/03-smi-idle.csv" 2>&1

# GPU load: a raw_exec job running gpu_load.py on its one GPU; the stats of
# that GPU must move, and CUDA must see that GPU only.
LOAD_OK=0
if ((SIMULATE)); then
	record SKIP $CK "GPU load (simulated GPUs have no CUDA)"
elif ! timeout 60 "$PY" -c 'import ctypes; ctypes.CDLL("libcuda.so.1").cuInit(0)' >/dev/null 2>&1; then
	record SKIP $CK "GPU load: python3 cannot load libcuda.so.1 (idle figures recorded only)"
else
	LOAD_OK=1
	job_hcl proof-load raw_exec 1 "          count = 1" \
		"env | grep -E '^(CUDA|NVIDIA)_' | sort; exec $PY $WORK/gpu_load.py 15 2048" >"$WORK/proof-load.hcl"
	cp "$WORK/proof-load.hcl" "$OUT/03-proof-load.hcl"
	run_job 03-proof-load "$WORK/proof-load.hcl"
	LOAD_ALLOC="" LOAD_UUID=""
	for _ in $(seq 1 "$(cap 20)"); do
		if [ "$(api /v1/job/proof-load/allocations "$WORK/pl.json")" = 200 ]; then
			read -r LOAD_ALLOC st _ LOAD_UUID _ <<<"$(py allocs "$WORK/pl.json" | head -n1 | tr '\t' ' ')"
			[ "${st:-}" = running ] && break
		fi
		sleep 1
	done
	if [ "${st:-}" != running ]; then
		record FAIL $CK "GPU load job not running (status ${st:-none})"
		[ -n "$LOAD_ALLOC" ] && save_alloc 03-load "$LOAD_ALLOC"
	else
		idle=$(py devfig "$OUT/03-stats-idle.json" "$LOAD_UUID" | cut -f2)
		best_util=0 best_mem=0 others=""
		for i in $(seq 1 "$(cap 20)"); do
			sleep 1
			[ "$(api "/v1/client/stats?node_id=$NODE_ID" "$WORK/s.json")" = 200 ] || continue
			read -r util mem <<<"$(py devfig "$WORK/s.json" "$LOAD_UUID")"
			if awk -v u="$util" -v b="$best_util" 'BEGIN{exit !(u>b)}'; then best_util=$util && cp "$WORK/s.json" "$OUT/03-stats-load.json"; fi
			((mem > best_mem)) && best_mem=$mem
			if awk -v u="$best_util" 'BEGIN{exit !(u>=50)}' && ((best_mem - idle >= 1536 << 20)) && ((i >= 5)); then break; fi
		done
		api "/v1/client/allocation/$LOAD_ALLOC/stats" "$OUT/03-alloc-stats.json" >/dev/null
		timeout 30 nvidia-smi --query-gpu=uuid,utilization.gpu,memory.used --format=csv >"$OUT/03-smi-load.csv" 2>&1
		timeout 30 nvidia-smi --query-compute-apps=pid,gpu_uuid,used_memory --format=csv >"$OUT/03-compute-apps-load.csv" 2>&1
		for u in "${UUIDS[@]}"; do
			[ "$u" = "$LOAD_UUID" ] && continue
			others="$others ${u:0:12}=$(py devfig "$WORK/s.json" "$u" | cut -f1)%"
		done
		if awk -v u="$best_util" 'BEGIN{exit !(u>0)}'; then
			record PASS $CK "under load, stats show GPU ${LOAD_UUID:0:12} at ${best_util}% util, memory used +$(((best_mem - idle) >> 20)) MiB (others:${others:- none})"
		else
			record FAIL $CK "under load, stats still show ${LOAD_UUID:0:12} at ${best_util}% util (memory +$(((best_mem - idle) >> 20)) MiB); see 03-load-*.stdout"
		fi
		apps=$(grep -c GPU- "$OUT/03-compute-apps-load.csv" 2>/dev/null)
		if grep -q "$LOAD_UUID" "$OUT/03-compute-apps-load.csv" && ! grep GPU- "$OUT/03-compute-apps-load.csv" | grep -vq "$LOAD_UUID"; then
			record PASS $CK "nvidia-smi shows the load's process on its assigned GPU only ($apps compute app(s))"
		else
			record WARN $CK "nvidia-smi compute apps during load: $(tr '\n' ';' <"$OUT/03-compute-apps-load.csv") (other users of the GPUs?)"
		fi
		wait_allocs proof-load 1 45
		save_alloc 03-load "$LOAD_ALLOC"
		seen=$(grep -o 'device 0 is GPU-[0-9a-f-]*' "$OUT/03-load-${LOAD_ALLOC:0:8}.stdout" | awk '{print $4}')
		cnt=$(grep -o 'sees [0-9]* CUDA' "$OUT/03-load-${LOAD_ALLOC:0:8}.stdout" | awk '{print $2}')
		if [ "$seen" = "$LOAD_UUID" ] && [ "$cnt" = 1 ]; then
			record PASS $CK "CUDA in the task sees exactly 1 device, its assigned $LOAD_UUID"
		elif [ -n "$seen" ]; then
			record FAIL $CK "CUDA in the task sees ${cnt:-?} device(s), device 0 $seen, assigned $LOAD_UUID"
		else
			record WARN $CK "the load did not run CUDA: $(grep gpu-load "$OUT/03-load-${LOAD_ALLOC:0:8}.stdout" | tail -n1)"
		fi
	fi
	stop_job proof-load
fi

# ================================================================ 4. isolation (raw_exec)
CK=4-isolation
COUNT=$((NG >= 2 ? 2 : 1))
job_hcl proof-iso raw_exec "$COUNT" "          count = 1" \
	"nvidia-smi -L 2>&1; env | grep -E 'CUDA|NVIDIA' | sort" >"$WORK/proof-iso.hcl"
cp "$WORK/proof-iso.hcl" "$OUT/04-proof-iso.hcl"
if run_job 04-proof-iso "$WORK/proof-iso.hcl" && wait_allocs proof-iso "$COUNT" 60; then
	declare -a GOT=()
	while IFS=$'\t' read -r id st _ uuids _ _; do
		save_alloc 04-iso "$id"
		f=$OUT/04-iso-${id:0:8}.stdout
		nv=$(envval "$f" NVIDIA_VISIBLE_DEVICES)
		cu=$(envval "$f" CUDA_VISIBLE_DEVICES)
		if [ "$st" != complete ]; then
			record FAIL $CK "alloc ${id:0:8} ended $st: $(tail -n2 "$OUT/04-iso-${id:0:8}.events.txt" | tr '\n' ' ')"
		elif [[ "$uuids" == *,* ]] || [ "$uuids" = - ]; then
			record FAIL $CK "alloc ${id:0:8} holds '$uuids', asked for 1 GPU"
		elif [ "$nv" = "$uuids" ] && [ "$cu" = "$uuids" ]; then
			record PASS $CK "alloc ${id:0:8} given $uuids: NVIDIA_VISIBLE_DEVICES and CUDA_VISIBLE_DEVICES name exactly it"
		else
			record FAIL $CK "alloc ${id:0:8} given $uuids but task env NVIDIA_VISIBLE_DEVICES='$nv' CUDA_VISIBLE_DEVICES='$cu'"
		fi
		GOT+=("$uuids")
	done <"$WORK/proof-iso.allocs"
	if ((COUNT == 2)); then
		if [ "${GOT[0]:-x}" != "${GOT[1]:-x}" ] && ((${#GOT[@]} == 2)); then
			record PASS $CK "two concurrent 1-GPU allocations got different GPUs (${GOT[0]:0:12}, ${GOT[1]:0:12})"
		else
			record FAIL $CK "two 1-GPU allocations got ${GOT[*]}"
		fi
	else
		record SKIP $CK "one GPU: no second allocation to keep apart"
	fi
else
	record FAIL $CK "proof-iso not placed or not finished in time: $(tail -n3 "$OUT/04-proof-iso-job-run.txt" | tr '\n' ' ')"
	[ -s "$WORK/proof-iso.allocs" ] && while IFS=$'\t' read -r id _; do save_alloc 04-iso "$id"; done <"$WORK/proof-iso.allocs"
fi
stop_job proof-iso

# More GPUs than the node has: not placed, with the reason.
MORE=$((NG + 1))
job_hcl proof-toomany raw_exec 1 "          count = $MORE" "true" >"$WORK/proof-toomany.hcl"
cp "$WORK/proof-toomany.hcl" "$OUT/04-proof-toomany.hcl"
run_job 04-proof-toomany "$WORK/proof-toomany.hcl"
rc=$?
drv job status proof-toomany >"$OUT/04-proof-toomany-status.txt" 2>&1
api /v1/job/proof-toomany/evaluations "$OUT/04-proof-toomany-evals.json" >/dev/null
api /v1/job/proof-toomany/allocations "$WORK/tm.json" >/dev/null
reasons=$(py reasons "$OUT/04-proof-toomany-evals.json" | sort -u | tr '\n' ' ')
nalloc=$(py allocs "$WORK/tm.json" | grep -c .)
if ((rc == 2)) && ((nalloc == 0)) && grep -q "need $MORE" <<<"$reasons"; then
	record PASS $CK "a $MORE-GPU job is not placed (job run exit 2), reason: $reasons"
else
	record FAIL $CK "a $MORE-GPU job: job run exit $rc, $nalloc allocation(s), reasons: ${reasons:-none}"
fi
grep -q 'need' "$OUT/04-proof-toomany-status.txt" && echo "     job status shows: $(grep -m1 'need' "$OUT/04-proof-toomany-status.txt" | sed 's/^ *//')"
stop_job proof-toomany

# ================================================================ 5. exec driver
CK=5-exec
if [ "$EXEC_OK" != true ]; then
	record SKIP $CK "exec driver not healthy on this node: $EXEC_DESC"
else
	job_hcl proof-exec exec 1 "          count = 1" \
		"echo DEVICES:; ls -1 /dev/nvidia* 2>&1; echo; env | grep -E 'CUDA|NVIDIA' | sort; nvidia-smi -L 2>&1; cat /proc/self/cgroup" >"$WORK/proof-exec.hcl"
	cp "$WORK/proof-exec.hcl" "$OUT/05-proof-exec.hcl"
	if run_job 05-proof-exec "$WORK/proof-exec.hcl" && wait_allocs proof-exec 1 60; then
		IFS=$'\t' read -r id st _ uuid _ <"$WORK/proof-exec.allocs"
		save_alloc 05-exec "$id"
		f=$OUT/05-exec-${id:0:8}.stdout
		if [ "$st" != complete ]; then
			record FAIL $CK "exec alloc ${id:0:8} ended $st: $(tail -n3 "$OUT/05-exec-${id:0:8}.events.txt" | tr '\n' ' ')"
		else
			nv=$(envval "$f" NVIDIA_VISIBLE_DEVICES)
			if [ "$nv" = "$uuid" ]; then record PASS $CK "exec task env names exactly its GPU $uuid"; else record FAIL $CK "exec task given $uuid, env NVIDIA_VISIBLE_DEVICES='$nv'"; fi
			devs=$(grep -oE '^/dev/nvidia[0-9]+$' "$f" | sort | tr '\n' ' ')
			if ((SIMULATE)); then
				record SKIP $CK "device nodes (simulated GPUs have none): task sees '${devs:-none}'"
			else
				minor=$(timeout 30 nvidia-smi -q -i "$uuid" 2>/dev/null | awk -F: '/Minor Number/ {gsub(/ /,"",$2); print $2; exit}')
				if [ -z "$minor" ]; then
					record WARN $CK "could not read the minor number of $uuid; task sees: ${devs:-none}"
				elif grep -qx "/dev/nvidia$minor" "$f"; then
					record PASS $CK "exec task sees its GPU's device /dev/nvidia$minor"
					other=$(grep -oE '^/dev/nvidia[0-9]+$' "$f" | grep -vx "/dev/nvidia$minor" | tr '\n' ' ')
					if [ -n "$other" ]; then
						record WARN $CK "exec task also sees other GPUs' devices: $other(no device cgroup yet)"
					elif ((NG > 1)); then
						record PASS $CK "exec task sees no other GPU's device node"
					fi
				else
					record FAIL $CK "exec task does not see /dev/nvidia$minor (its GPU $uuid); it sees: ${devs:-none}"
				fi
			fi
		fi
	else
		record FAIL $CK "proof-exec not placed or not finished in time: $(tail -n3 "$OUT/05-proof-exec-job-run.txt" | tr '\n' ' ')"
		[ -s "$WORK/proof-exec.allocs" ] && while IFS=$'\t' read -r id _; do save_alloc 05-exec "$id"; done <"$WORK/proof-exec.allocs"
	fi
	stop_job proof-exec
fi

# ================================================================ 6. MPS
CK=6-mps
MPS_CTL=$(command -v nvidia-cuda-mps-control || true)
if ((!SIMULATE)) && [ -z "$MPS_CTL" ]; then
	record SKIP $CK "nvidia-cuda-mps-control not found in PATH"
elif (($(left) < 90)); then
	record SKIP $CK "not enough of the time budget left ($(left)s)"
else
	G0=${UUIDS[0]}
	log "restarting the agent with gpu_sharing { gpu \"$G0\" { mode = \"mps\" } }"
	stop_agent
	pgrep -f nvidia-cuda-mps-control | sort >"$WORK/mps-before"
	if start_agent mps "$(printf '  gpu_sharing {\n    gpu "%s" { mode = "mps" }\n  }\n' "$G0")"; then
		api "/v1/node/$NODE_ID" "$OUT/06-node.json" >/dev/null
		mode=$(py gpus "$OUT/06-node.json" | awk -F'\t' -v g="$G0" '$1==g {print $3}')
		if [ "$mode" = mps ]; then
			record PASS $CK "GPU $G0 reports sharing=mps"
		else
			record FAIL $CK "GPU $G0 reports sharing='$mode' after the restart with mps (see agent-mps.log: $(grep -i -m1 'mps' "$OUT/agent-mps.log" | cut -c1-200))"
		fi
		MEMQ="4 GiB"
		load_cmd=""
		((LOAD_OK)) && load_cmd="$PY $WORK/gpu_load.py 8 256 || echo gpu-load exit \$?; "
		job_hcl proof-mps raw_exec 2 "          count   = 1
          compute = 50
          memory  = \"$MEMQ\"" \
			"env | grep -E '^(CUDA|NVIDIA)' | sort; ${load_cmd}sleep 20" >"$WORK/proof-mps.hcl"
		cp "$WORK/proof-mps.hcl" "$OUT/06-proof-mps.hcl"
		if run_job 06-proof-mps "$WORK/proof-mps.hcl"; then
			# While both run: same GPU, the daemon up.
			running=0 daemon="" server=""
			for _ in $(seq 1 "$(cap 20)"); do
				if [ "$(api /v1/job/proof-mps/allocations "$WORK/pm.json")" = 200 ]; then
					py allocs "$WORK/pm.json" >"$WORK/pm.allocs"
					running=$(awk -F'\t' '$2=="running"' "$WORK/pm.allocs" | wc -l)
					((running >= 2)) && break
				fi
				sleep 1
			done
			cp "$WORK/pm.allocs" "$OUT/06-allocs-running.tsv" 2>/dev/null
			gpus=$(cut -f4 "$WORK/pm.allocs" | sort -u | tr '\n' ' ')
			if ((running >= 2)) && [ "$gpus" = "$G0 " ]; then
				record PASS $CK "both 50% slices run at once on the same GPU $G0 ($(cut -f5 "$WORK/pm.allocs" | sort -u | tr '\n' ' '))"
			else
				record FAIL $CK "slices: $running running, on GPUs '$gpus' (want both on $G0): $(cut -f1,2,4 "$WORK/pm.allocs" | tr '\t\n' ' ;')"
			fi
			pidf=$WORK/data-mps/client/mps/$G0/drover-mps.pid
			for _ in $(seq 1 8); do
				daemon=$(comm -13 "$WORK/mps-before" <(pgrep -f nvidia-cuda-mps-control | sort) | tr '\n' ' ')
				[ -n "$daemon" ] && ((!LOAD_OK)) && break
				server=$(pgrep -a -f nvidia-cuda-mps-server | tr '\n' ' ')
				[ -n "$daemon" ] && [ -n "$server" ] && break
				sleep 1
			done
			{
				echo "new nvidia-cuda-mps-control: $daemon"
				echo "pid file: $(cat "$pidf" 2>/dev/null)"
				echo "nvidia-cuda-mps-server: $server"
				pgrep -a -f nvidia-cuda-mps
			} >"$OUT/06-mps-processes.txt" 2>&1
			if ((SIMULATE)); then
				if [ -z "$daemon" ]; then record PASS $CK "simulated GPU: no MPS daemon started (as documented)"; else record FAIL $CK "simulated GPU but an MPS daemon runs: $daemon"; fi
			elif [ -n "$daemon" ]; then
				record PASS $CK "MPS control daemon runs while the slices do: pid $daemon(pid file $(cat "$pidf" 2>/dev/null || echo missing))"
				if ((LOAD_OK)); then
					if [ -n "$server" ]; then record PASS $CK "CUDA clients in the slices go through MPS (nvidia-cuda-mps-server up)"; else record WARN $CK "no nvidia-cuda-mps-server seen while the slices ran CUDA (see 06-mps-* logs)"; fi
				fi
			else
				record FAIL $CK "no nvidia-cuda-mps-control started while the slices run (see agent-mps.log)"
			fi
			if wait_allocs proof-mps 2 60; then
				while IFS=$'\t' read -r id st _ _ _ _; do
					save_alloc 06-mps "$id"
					f=$OUT/06-mps-${id:0:8}.stdout
					pipe=$(envval "$f" CUDA_MPS_PIPE_DIRECTORY)
					pct=$(envval "$f" CUDA_MPS_ACTIVE_THREAD_PERCENTAGE)
					lim=$(envval "$f" CUDA_MPS_PINNED_DEVICE_MEM_LIMIT)
					if [ "$st" = complete ] && [ "$pipe" = "$WORK/data-mps/client/mps/$G0/pipe" ] && [ "$pct" = 50 ] && [ "$lim" = "0=4096M" ]; then
						record PASS $CK "slice ${id:0:8}: CUDA_MPS_PIPE_DIRECTORY=$pipe CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=$pct CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=$lim"
					else
						record FAIL $CK "slice ${id:0:8} ($st): pipe='$pipe' pct='$pct' limit='$lim' (want $WORK/data-mps/client/mps/$G0/pipe, 50, 0=4096M)"
					fi
					ev=$(grep -m1 'GPU Share' "$OUT/06-mps-${id:0:8}.events.txt" | cut -d: -f3-)
					echo "     GPU Share event:${ev:- none}"
					if ((LOAD_OK)); then
						grep -q 'gpu-load: done' "$f" || record WARN $CK "slice ${id:0:8}: CUDA under MPS did not finish: $(grep gpu-load "$f" | tail -n1)"
					fi
				done <"$WORK/proof-mps.allocs"
				if ((!SIMULATE)) && [ -n "$daemon" ]; then
					gone=0
					for i in $(seq 1 30); do
						alive=""
						for p in $daemon; do kill -0 "$p" 2>/dev/null && alive="$alive $p"; done
						[ -z "$alive" ] && gone=$i && break
						sleep 1
					done
					if ((gone > 0)); then
						record PASS $CK "MPS daemon gone ${gone}s after the last slice ended"
					else
						record FAIL $CK "MPS daemon still running 30s after the slices ended:$alive"
					fi
				fi
			else
				record FAIL $CK "the MPS slices did not finish in time"
			fi
		else
			record FAIL $CK "proof-mps not placed: $(tail -n4 "$OUT/06-proof-mps-job-run.txt" | tr '\n' ' ')"
		fi
		stop_job proof-mps
	fi
fi

# ================================================================ 7. cleanup
CK=7-cleanup
stop_agent
kill_stragglers
left_over=$(ours | tr '\n' ' ')
mps_left=""
for f in "$WORK"/data-*/client/mps/*/drover-mps.pid; do
	[ -f "$f" ] && p=$(tr -dc 0-9 <"$f") && kill -0 "$p" 2>/dev/null && mps_left="$mps_left $p"
done
if [ -z "$left_over" ] && [ -z "$mps_left" ] && [ ! -s "$WORK/stragglers" ]; then
	record PASS $CK "agent stopped; no task process or MPS daemon of ours left"
elif [ -z "$left_over" ] && [ -z "$mps_left" ]; then
	record WARN $CK "agent stopped; processes outlived it and were killed: $(tr '\n' ';' <"$WORK/stragglers")"
else
	record FAIL $CK "left after cleanup: tasks '$left_over' MPS '$mps_left'"
fi
exit 0
