package textfmt

import (
	"strings"
	"testing"
	"time"
)

func TestCount(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 7: "7", 999: "999", 1000: "1,000", 2999: "2,999", 72331: "72,331",
		1234567: "1,234,567", -4500: "-4,500"} {
		if got := Count(n); got != want {
			t.Errorf("Count(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestPlural(t *testing.T) {
	for _, tc := range []struct {
		n    int
		word string
		want string
	}{
		{1, "file", "1 file"}, {0, "file", "0 files"}, {2999, "file", "2,999 files"}, {1, "run", "1 run"},
		{2, "run", "2 runs"}, {3, "batch", "3 batches"}, {1, "batch", "1 batch"}, {2, "entry", "2 entries"},
		{2, "key", "2 keys"}, {2, "prefix", "2 prefixes"}, {72331, "row", "72,331 rows"}, {2, "status", "2 statuses"},
		{2, "unreadable fallback file", "2 unreadable fallback files"},
	} {
		if got := Plural(tc.n, tc.word); got != tc.want {
			t.Errorf("Plural(%d, %q) = %q, want %q", tc.n, tc.word, got, tc.want)
		}
	}
	if got := Plural(int64(1), "file") + " " + Were(int64(1)); got != "1 file was" {
		t.Errorf("%q", got)
	}
	if got := Plural(uint64(2), "file") + " " + Are(2); got != "2 files are" {
		t.Errorf("%q", got)
	}
	if got := Either(1, "it", "they"); got != "it" {
		t.Errorf("%q", got)
	}
}

func TestBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 812: "812 B", 1023: "1023 B", 1536: "1.5 KiB",
		10440317: "10 MiB", 3 << 30: "3.0 GiB", 123456789: "118 MiB", -1: "-"} {
		if got := Bytes(n); got != want {
			t.Errorf("Bytes(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestTime(t *testing.T) {
	if got := Time(time.Time{}); got != "-" {
		t.Errorf("zero: %q", got)
	}
	at := time.Date(2026, 3, 1, 13, 4, 5, 999, time.FixedZone("CET", 3600))
	if got := Time(at); got != "2026-03-01T12:04:05Z" {
		t.Errorf("Time = %q", got)
	}
	if got := Time(&at); got != "2026-03-01T12:04:05Z" {
		t.Errorf("Time(&at) = %q", got)
	}
	if got := Time((*time.Time)(nil)); got != "-" {
		t.Errorf("Time(nil) = %q", got)
	}
}

func TestParseDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"3d": 72 * time.Hour, "2w": 14 * 24 * time.Hour, "1d12h": 36 * time.Hour, "1.5d": 36 * time.Hour,
		"72h": 72 * time.Hour, "15m": 15 * time.Minute, "1h30m": 90 * time.Minute, "250ms": 250 * time.Millisecond,
		"0": 0, "0d": 0, " 1w ": Week, "-1d": -Day, "+2h": 2 * time.Hour, "1w2d3h4m5s": Week + 2*Day + 3*time.Hour + 4*time.Minute + 5*time.Second,
		"10us": 10 * time.Microsecond, "10µs": 10 * time.Microsecond, "7ns": 7,
	} {
		got, err := ParseDuration(in)
		if err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
		// Go reads the same where it can.
		if gd, gerr := time.ParseDuration(strings.TrimSpace(in)); gerr == nil && gd != got {
			t.Errorf("ParseDuration(%q) = %v, time.ParseDuration %v", in, got, gd)
		}
	}
	for in, want := range map[string]string{
		"":         "empty",
		"3":        "3 has no unit",
		"3x":       `unknown unit "x"`,
		"3D":       `unknown unit "D"`,
		"d":        `"d" is not a number`,
		"1..2d":    "not a number",
		"1d 2h":    `unknown unit "d "`,
		"9999999w": "too long",
		"abc":      "not a number",
	} {
		_, err := ParseDuration(in)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "3d, 2w") {
			t.Errorf("ParseDuration(%q) error = %v, want one mentioning %q and the accepted forms", in, err, want)
		}
	}
}

func TestFormatDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0", 72 * time.Hour: "3d", 36 * time.Hour: "1d12h", 14 * Day: "2w", 15 * time.Minute: "15m",
		90 * time.Minute: "1h30m", 1500 * time.Millisecond: "1.5s", -Day: "-1d", Week + Day + time.Second: "1w1d1s",
	} {
		got := FormatDuration(d)
		if got != want {
			t.Errorf("FormatDuration(%v) = %q, want %q", d, got, want)
		}
		if back, err := ParseDuration(got); err != nil || back != d {
			t.Errorf("ParseDuration(FormatDuration(%v)) = %v, %v", d, back, err)
		}
	}
}

func TestDurationFlag(t *testing.T) {
	var d time.Duration
	f := DurationFlag{D: &d}
	if f.String() != "0" || f.Type() != "duration" {
		t.Errorf("zero flag: %q %q", f.String(), f.Type())
	}
	if err := f.Set("3d"); err != nil || d != 72*time.Hour || f.String() != "3d" {
		t.Errorf("Set(3d): %v, %v, %q", err, d, f.String())
	}
	if err := f.Set("-1h"); err == nil || !strings.Contains(err.Error(), "must not be negative") || d != 72*time.Hour {
		t.Errorf("Set(-1h): %v, value %v (want an error and the value unchanged)", err, d)
	}
	if err := f.Set("1y"); err == nil || d != 72*time.Hour {
		t.Errorf("Set(1y): %v, value %v", err, d)
	}
}
