package command

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/droverhq/drover/api"
)

// Bounds of one capture, which is held in memory until the archive is
// written: snapshots (-duration / -interval), bytes of log kept, and
// bytes of everything else (a large cluster's lists, every interval).
const (
	maxDebugSnapshots = 360
	maxDebugLog       = 64 << 20
)

var maxDebugBytes = 512 << 20 // a variable for tests

// OperatorDebugCommand is `drover operator debug`: Nomad's, simplified.
// It captures what the agent and the cluster say for a while and writes
// it as one .tar.gz to attach to a bug report.
type OperatorDebugCommand struct{ Meta }

func (c *OperatorDebugCommand) Synopsis() string {
	return "Capture the agent's and cluster's state and logs into an archive"
}

func (c *OperatorDebugCommand) Help() string {
	return helpText(`
Usage: drover operator debug [options]

  Captures, into drover-debug-<time>.tar.gz, for -duration: the agent's
  log (as drover monitor streams it), and every -interval the agent's
  metrics (JSON and Prometheus), its goroutines and heap profile, and the
  cluster's nodes, jobs and allocations; once, the agent's self and the
  servers' members. What the token may not read is noted in errors.txt
  and the capture goes on. The archive holds no ACL token secrets or node
  secret IDs: the API never answers them, and the CLI's own token is
  scrubbed from everything captured. Profiles need enable_debug on the
  agent, or with ACLs a token with agent write.`, `
Operator Debug Options:

  -duration <duration>
    How long to capture (default 30s).

  -interval <duration>
    How often to capture metrics, profiles and cluster state (default
    10s); at most -duration.

  -log-level <level>
    The lowest log level captured (default debug).

  -output <dir>
    Where to write the archive (default the current directory).`)
}

func (c *OperatorDebugCommand) Run(args []string) int {
	var d debugCapture
	var output string
	fs := c.flagSet("operator debug")
	fs.DurationVar(&d.duration, "duration", 30*time.Second, "")
	fs.DurationVar(&d.interval, "interval", 10*time.Second, "")
	fs.StringVar(&d.logLevel, "log-level", "debug", "")
	fs.StringVar(&output, "output", ".", "")
	args, ok := c.parse(fs, args)
	if !ok {
		return exitError
	}
	if len(args) != 0 {
		return c.usageError("operator debug", "no arguments")
	}
	if d.duration <= 0 || d.interval <= 0 || d.interval > d.duration {
		c.Ui.Error(fmt.Sprintf("Error: -duration (%s) and -interval (%s) must be positive, and -interval at most -duration", d.duration, d.interval))
		return exitError
	}
	if n := d.duration / d.interval; n > maxDebugSnapshots {
		c.Ui.Error(fmt.Sprintf("Error: -duration %s every -interval %s is %d snapshots, over the limit %d: raise -interval", d.duration, d.interval, n, maxDebugSnapshots))
		return exitError
	}
	if st, err := os.Stat(output); err != nil || !st.IsDir() {
		c.Ui.Error(fmt.Sprintf("Error: -output %q: not a directory", output))
		return exitError
	}
	client, ok := c.clientOrFail()
	if !ok {
		return exitError
	}
	d.client = client
	d.token = c.token
	if d.token == "" {
		d.token = api.DefaultConfig().SecretID
	}
	ctx, stop := c.context()
	defer stop()
	ctx, cancel := untilClosed(ctx, c.ShutdownCh)
	defer cancel()

	start := c.now().UTC()
	c.Ui.Output(fmt.Sprintf("Capturing for %s every %s from %s", d.duration, d.interval, client.Address()))
	files := d.run(ctx)
	name := "drover-debug-" + start.Format("20060102T150405Z")
	path := filepath.Join(output, name+".tar.gz")
	if err := writeArchive(path, name, files); err != nil {
		c.Ui.Error(fmt.Sprintf("Error writing the archive: %s", err))
		return exitError
	}
	c.Ui.Output(fmt.Sprintf("Wrote %s (%d files)", path, len(files)))
	return 0
}

// debugFile is one file of the archive.
type debugFile struct {
	name string
	data []byte
}

// debugCapture is one run of operator debug.
type debugCapture struct {
	client             *api.Client
	token              string
	duration, interval time.Duration
	logLevel           string

	mu     sync.Mutex
	files  []debugFile
	bytes  int  // of files, at most maxDebugBytes
	full   bool // a file was left out for maxDebugBytes
	errors []string
}

// run captures for d.duration (or until ctx ends) and returns the files.
func (d *debugCapture) run(ctx context.Context) []debugFile {
	ctx, cancel := context.WithTimeout(ctx, d.duration)
	defer cancel()
	logs := &cappedBuffer{max: maxDebugLog}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // ends with ctx
		defer wg.Done()
		err := streamMonitor(ctx, d.client, api.MonitorOptions{LogLevel: d.logLevel}, logs)
		d.note(ctx, "monitor.log", nil, err)
	}()
	d.get(ctx, "agent-self.json", "/v1/agent/self", nil)
	d.get(ctx, "members.json", "/v1/agent/members", nil)
	tick := time.NewTicker(d.interval)
	defer tick.Stop()
	for i := 0; ; i++ {
		d.mu.Lock()
		full := d.full
		d.mu.Unlock()
		if !full {
			d.snapshot(ctx, fmt.Sprintf("interval/%04d/", i))
		}
		select {
		case <-ctx.Done():
			wg.Wait()
			d.add("monitor.log", logs.buf.Bytes())
			if logs.dropped > 0 {
				d.note(context.Background(), "monitor.log", nil, fmt.Errorf("cut at %d bytes: %d more bytes of log were not kept", maxDebugLog, logs.dropped))
			}
			d.mu.Lock()
			failures := d.errors
			d.mu.Unlock()
			if len(failures) > 0 {
				d.add("errors.txt", []byte(strings.Join(failures, "\n")+"\n"))
			}
			return d.scrubbed()
		case <-tick.C:
		}
	}
}

// snapshot captures what changes over time under dir.
func (d *debugCapture) snapshot(ctx context.Context, dir string) {
	all := url.Values{"namespace": {"*"}}
	d.get(ctx, dir+"nodes.json", "/v1/nodes", nil)
	d.get(ctx, dir+"jobs.json", "/v1/jobs", all)
	d.get(ctx, dir+"allocations.json", "/v1/allocations", all)
	d.get(ctx, dir+"evaluations.json", "/v1/evaluations", all)
	d.get(ctx, dir+"gpus.json", "/v1/gpus", nil)
	b, err := d.client.Agent().Metrics(ctx, false)
	d.note(ctx, dir+"metrics.json", b, err)
	b, err = d.client.Agent().Metrics(ctx, true)
	d.note(ctx, dir+"metrics.prom", b, err)
	b, err = d.client.Agent().Pprof(ctx, "goroutine", 0, 2)
	d.note(ctx, dir+"goroutine.txt", b, err)
	b, err = d.client.Agent().Pprof(ctx, "heap", 0, 0)
	d.note(ctx, dir+"heap.prof", b, err)
}

func (d *debugCapture) get(ctx context.Context, name, path string, params url.Values) {
	b, err := d.client.Raw(ctx, path, params)
	d.note(ctx, name, b, err)
}

// note adds the file, or notes why it is missing. A capture cut short by
// the end of the run (ctx) is not an error, and not kept.
func (d *debugCapture) note(ctx context.Context, name string, data []byte, err error) {
	switch {
	case err == nil && data != nil:
		d.add(name, data)
	case err != nil && ctx.Err() == nil:
		d.mu.Lock()
		d.errors = append(d.errors, fmt.Sprintf("%s: %v", name, err))
		d.mu.Unlock()
	}
}

// add keeps a file, unless it would take the capture past
// maxDebugBytes: then it and every later file but the log are left out,
// and errors.txt says so once.
func (d *debugCapture) add(name string, data []byte) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if name != "monitor.log" && name != "errors.txt" && (d.full || d.bytes+len(data) > maxDebugBytes) {
		if !d.full {
			d.errors = append(d.errors, fmt.Sprintf("%s and later files: left out, the capture reached %d bytes", name, maxDebugBytes))
		}
		d.full = true
		return
	}
	d.bytes += len(data)
	d.files = append(d.files, debugFile{name: name, data: data})
}

// scrubbed returns the files with the CLI's own token replaced: no
// answer should carry it, and none will in the archive.
func (d *debugCapture) scrubbed() []debugFile {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := d.files
	if d.token == "" {
		return out
	}
	secret := []byte(d.token)
	for i := range out {
		out[i].data = bytes.ReplaceAll(out[i].data, secret, []byte("<redacted>"))
	}
	return out
}

// writeArchive writes files under dir/ into a new .tar.gz at path,
// readable by its owner only.
func writeArchive(path, dir string, files []debugFile) (err error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(path)
		}
	}()
	zw := gzip.NewWriter(f)
	tw := tar.NewWriter(zw)
	now := time.Now()
	for _, file := range files {
		hdr := &tar.Header{Name: dir + "/" + file.name, Mode: 0o600, Size: int64(len(file.data)), ModTime: now, Typeflag: tar.TypeReg}
		if err := tw.WriteHeader(hdr); err != nil {
			return fmt.Errorf("%s: %w", file.name, err)
		}
		if _, err := tw.Write(file.data); err != nil {
			return fmt.Errorf("%s: %w", file.name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return zw.Close()
}

// cappedBuffer keeps the first max bytes written to it and counts the
// rest.
type cappedBuffer struct {
	max     int
	buf     bytes.Buffer
	dropped int64
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	keep := min(len(p), b.max-b.buf.Len())
	b.buf.Write(p[:keep])
	b.dropped += int64(len(p) - keep)
	return len(p), nil
}
