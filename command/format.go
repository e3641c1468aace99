package command

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/droverhq/drover/structs"
)

// formatTable aligns rows under headers in columns two spaces apart.
func formatTable(headers []string, rows [][]string) string {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(headers, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	tw.Flush()
	return strings.TrimRight(b.String(), "\n")
}

// kv is one "Key = Value" line of a details block.
type kv struct{ key, value string }

// formatKV aligns key/value pairs on their "=" signs.
func formatKV(pairs []kv) string {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 8, 1, ' ', 0)
	for _, p := range pairs {
		fmt.Fprintf(tw, "%s\t= %s\n", p.key, p.value)
	}
	tw.Flush()
	return strings.TrimRight(b.String(), "\n")
}

// formatJSON renders v as indented JSON.
func formatJSON(v any) (string, error) {
	buf, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return "", err
	}
	return string(buf), nil
}

// formatTime renders unix nanoseconds as a local RFC 3339 time, or
// "<none>" for 0.
func formatTime(ns int64) string {
	if ns == 0 {
		return "<none>"
	}
	return formatClock(time.Unix(0, ns))
}

// formatClock renders t as a local RFC 3339 time, or "<none>" for the
// zero time.
func formatClock(t time.Time) string {
	if t.IsZero() {
		return "<none>"
	}
	return t.Local().Format(time.RFC3339)
}

// formatAgo renders unix nanoseconds relative to now: "12s ago",
// "5m3s ago", "2h7m ago", "3d4h ago".
func formatAgo(now time.Time, ns int64) string {
	if ns == 0 {
		return "<none>"
	}
	d := now.Sub(time.Unix(0, ns))
	if d < 0 {
		return "just now"
	}
	return formatDuration(d) + " ago"
}

// formatDuration renders d with its two largest units.
func formatDuration(d time.Duration) string {
	d = d.Round(time.Second)
	days := d / (24 * time.Hour)
	d -= days * 24 * time.Hour
	hours := d / time.Hour
	d -= hours * time.Hour
	mins := d / time.Minute
	secs := (d - mins*time.Minute) / time.Second
	switch {
	case days > 0:
		return fmt.Sprintf("%dd%dh", days, hours)
	case hours > 0:
		return fmt.Sprintf("%dh%dm", hours, mins)
	case mins > 0:
		return fmt.Sprintf("%dm%ds", mins, secs)
	}
	return fmt.Sprintf("%ds", secs)
}

// shortID shortens an ID unless verbose.
func shortID(id string, verbose bool) string {
	if verbose {
		return id
	}
	return structs.ShortID(id)
}

// shortGPU shortens a GPU UUID ("GPU-1a2b3c4d-...") to "GPU-1a2b3c4d"
// unless verbose.
func shortGPU(id string, verbose bool) string {
	if verbose {
		return id
	}
	if rest, ok := strings.CutPrefix(id, "GPU-"); ok {
		return "GPU-" + structs.ShortID(rest)
	}
	if rest, ok := strings.CutPrefix(id, "MIG-"); ok {
		return "MIG-" + structs.ShortID(rest)
	}
	return structs.ShortID(id)
}

// gpuList joins GPU IDs, shortened unless verbose, or "<none>".
func gpuList(ids []string, verbose bool) string {
	if len(ids) == 0 {
		return "<none>"
	}
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = shortGPU(id, verbose)
	}
	return strings.Join(out, ",")
}

// allocatedGPUs returns every device instance ID held, sorted.
func allocatedGPUs(r *structs.AllocatedResources) []string {
	if r == nil {
		return nil
	}
	var ids []string
	for _, t := range r.Tasks {
		for _, d := range t.Devices {
			ids = append(ids, d.DeviceIDs...)
		}
	}
	slices.Sort(ids)
	return ids
}

// orNone returns s, or "<none>" when s is empty.
func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

// plural returns "1 node" or "3 nodes".
func plural(n int, word string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, word)
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// sortedKeys returns a map's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
