package structs

import (
	"math"
	"testing"
)

func TestParseQuantity(t *testing.T) {
	tests := []struct {
		in     string
		want   Quantity
		wantOK bool
	}{
		{"80 GiB", Quantity{80 * (1 << 30), DimBytes}, true},
		{"80GiB", Quantity{80 * (1 << 30), DimBytes}, true},
		{"  512 MB ", Quantity{512e6, DimBytes}, true},
		{"1.5 KiB", Quantity{1536, DimBytes}, true},
		{"1.5 GHz", Quantity{1.5e9, DimHertz}, true},
		{"300 W", Quantity{300, DimWatts}, true},
		{"250 mW", Quantity{0.25, DimWatts}, true},
		{"10 GB/s", Quantity{10e9, DimBandwidth}, true},
		{"5e3MB", Quantity{5e9, DimBytes}, true},
		{"42", Quantity{42, DimNone}, true},
		{"-3", Quantity{-3, DimNone}, true},
		{"9.0", Quantity{9, DimNone}, true},
		{"", Quantity{}, false},
		{"GiB", Quantity{}, false},
		{"abc", Quantity{}, false},
		{"10 parsecs", Quantity{}, false},
		{"1 EiB", Quantity{}, false},
		{"80 gib", Quantity{}, false},
		{"NaN", Quantity{}, false},
		{"1e999", Quantity{}, false},
		{"3eggs", Quantity{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, ok := ParseQuantity(tt.in)
			if ok != tt.wantOK || got.Dim != tt.want.Dim || math.Abs(got.Value-tt.want.Value) > 1e-9*math.Abs(tt.want.Value) {
				t.Errorf("ParseQuantity(%q) = %+v, %v; want %+v, %v", tt.in, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

// TestParseQuantityOrdersUnits checks the property the scheduler relies on:
// quantities in different units of one dimension compare by size.
func TestParseQuantityOrdersUnits(t *testing.T) {
	ascending := []string{"1 KB", "1 KiB", "1 MB", "1 MiB", "40 GiB", "80 GB", "80 GiB", "1 TB", "1 TiB"}
	for i := 1; i < len(ascending); i++ {
		lo, _ := ParseQuantity(ascending[i-1])
		hi, _ := ParseQuantity(ascending[i])
		if lo.Value >= hi.Value {
			t.Errorf("got %q (%v) >= %q (%v), want less", ascending[i-1], lo.Value, ascending[i], hi.Value)
		}
	}
}

func TestParseBytes(t *testing.T) {
	tests := []struct {
		in      string
		want    uint64
		wantErr bool
	}{
		{"40 GiB", 40 << 30, false},
		{"512MB", 512_000_000, false},
		{"1024", 1024, false},
		{"1.5 KiB", 1536, false},
		{"0 B", 0, false},
		{"2 TiB", 2 << 40, false},
		{"-1 GiB", 0, true},
		{"5 GHz", 0, true},
		{"", 0, true},
		{"lots", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseBytes(tt.in)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("ParseBytes(%q) = %d, %v; want %d, error %v", tt.in, got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestFormatBytes(t *testing.T) {
	tests := []struct {
		in   uint64
		want string
	}{
		{0, "0 B"},
		{1023, "1023 B"},
		{1024, "1 KiB"},
		{1536, "1.5 KiB"},
		{1234567, "1.18 MiB"},
		{80 << 30, "80 GiB"},
		{3 << 29, "1.5 GiB"},
		{1 << 50, "1024 TiB"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if got := FormatBytes(tt.in); got != tt.want {
				t.Errorf("FormatBytes(%d) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestFormatBytesRoundTrip(t *testing.T) {
	for _, b := range []uint64{0, 1, 512, 1 << 10, 3 << 19, 40 << 30, 80 << 30, 5 << 40} {
		s := FormatBytes(b)
		got, err := ParseBytes(s)
		if err != nil || got != b {
			t.Errorf("ParseBytes(FormatBytes(%d) = %q) = %d, %v; want %d", b, s, got, err, b)
		}
	}
}
