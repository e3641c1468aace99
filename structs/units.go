package structs

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
)

// Dimension is what a unit measures.
type Dimension string

// Dimensions of units Drover understands in attributes and job files.
const (
	DimNone      Dimension = ""
	DimBytes     Dimension = "bytes"
	DimHertz     Dimension = "hertz"
	DimWatts     Dimension = "watts"
	DimBandwidth Dimension = "bytes/s"
)

type unitDef struct {
	dim    Dimension
	factor float64
}

// Units are case-sensitive where SI needs it (MB vs Mb is not supported;
// bits are not units here). Decimal (KB, MB, GB, TB) and binary (KiB, MiB,
// GiB, TiB) byte units are both understood.
var units = map[string]unitDef{
	"B": {DimBytes, 1}, "byte": {DimBytes, 1}, "bytes": {DimBytes, 1},
	"KB": {DimBytes, 1e3}, "kB": {DimBytes, 1e3}, "MB": {DimBytes, 1e6}, "GB": {DimBytes, 1e9}, "TB": {DimBytes, 1e12},
	"KiB": {DimBytes, 1 << 10}, "MiB": {DimBytes, 1 << 20}, "GiB": {DimBytes, 1 << 30}, "TiB": {DimBytes, 1 << 40},
	"Hz": {DimHertz, 1}, "kHz": {DimHertz, 1e3}, "KHz": {DimHertz, 1e3}, "MHz": {DimHertz, 1e6}, "GHz": {DimHertz, 1e9},
	"mW": {DimWatts, 1e-3}, "W": {DimWatts, 1}, "kW": {DimWatts, 1e3},
	"B/s": {DimBandwidth, 1}, "KB/s": {DimBandwidth, 1e3}, "MB/s": {DimBandwidth, 1e6}, "GB/s": {DimBandwidth, 1e9},
	"KiB/s": {DimBandwidth, 1 << 10}, "MiB/s": {DimBandwidth, 1 << 20}, "GiB/s": {DimBandwidth, 1 << 30},
}

// Quantity is a number with a dimension, in base units (bytes, Hz, W).
type Quantity struct {
	Value float64
	Dim   Dimension
}

// ParseQuantity parses "80 GiB", "80GiB", "1.5 GHz", "300 W" or a bare
// number. ok is false when s is not a number with an optional known unit.
func ParseQuantity(s string) (q Quantity, ok bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Quantity{}, false
	}
	i := strings.IndexFunc(s, func(r rune) bool {
		return !(unicode.IsDigit(r) || r == '.' || r == '-' || r == '+' || r == 'e' || r == 'E')
	})
	// An exponent marker followed by a letter is the start of a unit, not
	// an exponent ("1 EiB" is not supported; "1e3" is a number).
	num, unit := s, ""
	if i >= 0 {
		num, unit = strings.TrimSpace(s[:i]), strings.TrimSpace(s[i:])
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return Quantity{}, false
	}
	if unit == "" {
		return Quantity{Value: v}, true
	}
	u, known := units[unit]
	if !known {
		return Quantity{}, false
	}
	return Quantity{Value: v * u.factor, Dim: u.dim}, true
}

// ParseBytes parses a size such as "40 GiB" or "512MB" into bytes. A bare
// number is taken as bytes.
func ParseBytes(s string) (uint64, error) {
	q, ok := ParseQuantity(s)
	if !ok || (q.Dim != DimBytes && q.Dim != DimNone) {
		return 0, fmt.Errorf("%q is not a size (want a number with B, KB, MB, GB, TB, KiB, MiB, GiB or TiB)", s)
	}
	if q.Value < 0 {
		return 0, fmt.Errorf("%q: size must not be negative", s)
	}
	return uint64(q.Value), nil
}

// FormatBytes renders bytes with the largest binary unit that keeps the
// number at least 1 ("80 GiB", "1.5 GiB").
func FormatBytes(b uint64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	v := float64(b)
	i := 0
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64) + " " + units[i]
}
