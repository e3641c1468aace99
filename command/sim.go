package command

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"

	"github.com/droverhq/drover/server/sim"
)

// SimCommand is `drover sim`: replay a workload against a simulated
// cluster with the real scheduler, locally.
type SimCommand struct{ Meta }

func (c *SimCommand) Synopsis() string {
	return "Replay a workload against a simulated cluster with the real scheduler"
}

func (c *SimCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover sim [options]

  Replays pods against a simulated cluster with the real scheduler code and
  an in-memory state store (no agent, no network, no Raft), then prints a
  summary. Inputs are the Alibaba GPU trace v2023 CSV files or a synthetic
  cluster. Each pod becomes a batch job of one task: cpu_milli is asked as
  cpu, memory_mib as memory, num_gpu as "nvidia/gpu" count, gpu_milli below
  1000 as a compute slice of one GPU, gpu_spec as a ${device.model}
  constraint.

Options:

  -nodes=<file>
    Node CSV (sn,cpu_milli,memory_mib,gpu,model).

  -pods=<file>
    Pod CSV (name,cpu_milli,memory_mib,num_gpu,gpu_milli[,gpu_spec,...]).
    Without it, the workload is single-GPU tasks (cpu 4000, memory 16384),
    as many as the cluster has GPUs, submitted as batch jobs of 2000 tasks
    (see -job-size).

  -synthetic-nodes=<n>
    Instead of -nodes, n nodes of -gpus-per-node H100 GPUs (80 GiB), cpu
    128000 and 1 TiB of memory.

  -gpus-per-node=<n>
    GPUs per synthetic node. The default is 8.

  -arrival=<x>
    Submit pods in random order (-seed), reshuffling when the list runs
    out, until the GPUs requested reach x times the cluster's GPUs; no pod
    departs. Without it, every pod is submitted once, in file order.

  -seed=<n>
    Seed of the arrival order. The default is 1.

  -limit=<n>
    Submit at most n pods.

  -job-size=<n>
    Submit n consecutive pods at a time as one batch job (pods of one shape
    share a task group) with one evaluation; 1 submits one job per pod.
    Each pod's latency is then its share of its evaluation's time. The
    default is 1 for -pods (a trace's pods are independent) and 2000 for
    the synthetic tasks, the batch job of a training sweep.

  -gc-percent=<n>
    The Go garbage collector's GOGC for the run. The default, 400, trades
    memory for speed as a batch run can; -1 keeps Go's default (or the
    GOGC environment variable, which always wins).

  -policy=<name>
    Ranking policy: binpack, spread or fgd, set as the operator's scheduler
    configuration; default (the default) sets none, so the scheduler's
    default algorithm ranks.

  -json
    Print one JSON object: placed, failed, gpu_allocation_ratio,
    fragmentation, placements_per_second, p50_ms, p99_ms and more.`)
}

// defaultSimGCPercent is -gc-percent's default: a simulation is a batch
// run on a workstation, where four times the live heap is cheap and the
// collector's CPU is not.
const defaultSimGCPercent = 400

// simFlags are the command's options.
type simFlags struct {
	nodes, pods, policy string
	syntheticNodes      int
	gpusPerNode         int
	arrival             float64
	seed                uint64
	limit               int
	jobSize             int
	gcPercent           int
	json                bool
}

func (c *SimCommand) Run(args []string) int {
	f, ok := c.parseSim(args)
	if !ok {
		return 1
	}
	cfg, err := f.config()
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error: %s", err))
		return 1
	}
	if f.gcPercent >= 0 && os.Getenv("GOGC") == "" {
		defer debug.SetGCPercent(debug.SetGCPercent(f.gcPercent))
	}
	ctx, cancel := c.context()
	defer cancel()
	res, _, err := sim.Run(ctx, cfg)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error simulating: %s", err))
		return 1
	}
	if f.json {
		buf, err := json.Marshal(res)
		if err != nil {
			c.Ui.Error(fmt.Sprintf("Error formatting JSON: %s", err))
			return 1
		}
		c.Ui.Output(string(buf))
		return 0
	}
	c.Ui.Output(formatSimResult(res))
	return 0
}

func (c *SimCommand) parseSim(args []string) (simFlags, bool) {
	var f simFlags
	fs := flag.NewFlagSet("sim", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&f.nodes, "nodes", "", "")
	fs.StringVar(&f.pods, "pods", "", "")
	fs.StringVar(&f.policy, "policy", sim.PolicyDefault, "")
	fs.IntVar(&f.syntheticNodes, "synthetic-nodes", 0, "")
	fs.IntVar(&f.gpusPerNode, "gpus-per-node", 8, "")
	fs.Float64Var(&f.arrival, "arrival", 0, "")
	fs.Uint64Var(&f.seed, "seed", 1, "")
	fs.IntVar(&f.limit, "limit", 0, "")
	fs.IntVar(&f.jobSize, "job-size", 0, "") // 0: the workload's default
	fs.IntVar(&f.gcPercent, "gc-percent", defaultSimGCPercent, "")
	fs.BoolVar(&f.json, "json", false, "")
	rest, ok := c.parse(fs, args)
	if !ok {
		return f, false
	}
	if len(rest) != 0 {
		c.usageError("sim", "no arguments")
		return f, false
	}
	return f, true
}

// config checks the flags and loads the inputs they name.
func (f simFlags) config() (sim.Config, error) {
	cfg := sim.Config{Arrival: f.arrival, Seed: f.seed, Limit: f.limit, Policy: f.policy, JobSize: f.jobSize}
	if _, err := sim.ParsePolicy(f.policy); err != nil {
		return cfg, fmt.Errorf("-policy: %w", err)
	}
	switch {
	case f.arrival < 0:
		return cfg, errors.New("-arrival must not be negative")
	case f.limit < 0:
		return cfg, errors.New("-limit must not be negative")
	case f.jobSize < 0:
		return cfg, errors.New("-job-size must not be negative")
	case f.gcPercent < -1:
		return cfg, errors.New("-gc-percent must be -1 or more")
	case (f.nodes == "") == (f.syntheticNodes == 0):
		return cfg, errors.New("give exactly one of -nodes and -synthetic-nodes")
	case f.syntheticNodes < 0:
		return cfg, errors.New("-synthetic-nodes must be positive")
	case f.syntheticNodes > 0 && f.gpusPerNode < 0:
		return cfg, errors.New("-gpus-per-node must not be negative")
	}
	var err error
	if f.nodes != "" {
		if cfg.Nodes, err = sim.LoadNodes(f.nodes); err != nil {
			return cfg, err
		}
	} else {
		cfg.Nodes = sim.SyntheticNodes(f.syntheticNodes, f.gpusPerNode)
	}
	if f.pods != "" {
		if cfg.Pods, err = sim.LoadPods(f.pods); err != nil {
			return cfg, err
		}
	} else {
		cfg.Pods = sim.SyntheticPods(sim.ClusterGPUs(cfg.Nodes))
		if cfg.JobSize == 0 {
			cfg.JobSize = sim.SyntheticJobSize
		}
	}
	cfg.JobSize = max(cfg.JobSize, 1)
	return cfg, nil
}

// formatSimResult renders a result for people.
func formatSimResult(r *sim.Result) string {
	pct := func(v float64) string { return fmt.Sprintf("%.2f%%", 100*v) }
	return formatKV([]kv{
		{"Policy", fmt.Sprintf("%s (%s)", r.Policy, r.Algorithm)},
		{"Nodes", fmt.Sprintf("%d (%d GPUs)", r.Nodes, r.ClusterGPUs)},
		{"Submitted", fmt.Sprintf("%d pods asking %.1f GPUs, %s", r.Submitted, r.GPURequested, jobSizeText(r.JobSize))},
		{"Placed", fmt.Sprint(r.Placed)},
		{"Failed", fmt.Sprint(r.Failed)},
		{"GPU allocation", fmt.Sprintf("%s (%.1f GPUs)", pct(r.GPUAllocationRatio), r.GPUAllocated)},
		{"CPU allocation", pct(r.CPUAllocationRatio)},
		{"Fragmentation", pct(r.Fragmentation)},
		{"Placements/s", fmt.Sprintf("%.0f", r.PlacementsPerSecond)},
		{"Latency p50", fmt.Sprintf("%.3f ms", r.P50Ms)},
		{"Latency p99", fmt.Sprintf("%.3f ms", r.P99Ms)},
		{"Latency max", fmt.Sprintf("%.3f ms", r.MaxMs)},
		{"Plan rejections", fmt.Sprint(r.PlanRejections)},
		{"Duration", fmt.Sprintf("%.2f s", r.DurationSeconds)},
	})
}

func jobSizeText(n int) string {
	if n <= 1 {
		return "one job each"
	}
	return fmt.Sprintf("in batch jobs of %d", n)
}
