package textfmt

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Day and Week are the units ParseDuration adds to Go's: a day is 24 hours and a week 7 days,
// as a clock counts them (no calendar, no daylight saving).
const (
	Day  = 24 * time.Hour
	Week = 7 * Day
)

// durationUnits are the units ParseDuration reads, longest spelling first where one is the
// prefix of another (ms before m).
var durationUnits = []struct {
	name string
	unit time.Duration
}{
	{"w", Week}, {"d", Day}, {"h", time.Hour}, {"ms", time.Millisecond}, {"m", time.Minute},
	{"s", time.Second}, {"us", time.Microsecond}, {"µs", time.Microsecond}, {"μs", time.Microsecond},
	{"ns", time.Nanosecond},
}

// DurationSyntax says, for help texts and errors, what ParseDuration reads.
const DurationSyntax = "a number and a unit, w (week), d (day), h, m, s or ms, or several: 90m, 72h, 3d, 2w, 1d12h"

// ParseDuration reads a duration as Go's time.ParseDuration does (an optional sign, then
// numbers with units: 1h30m, 1.5h, 250ms) and also in days and weeks: 3d, 2w, 1d12h, 1.5d.
// "0" alone is zero. An error says what was wrong and what is accepted.
func ParseDuration(s string) (time.Duration, error) {
	in := s
	bad := func(why string) (time.Duration, error) {
		return 0, fmt.Errorf("invalid duration %q: %s (want %s)", in, why, DurationSyntax)
	}
	s = strings.TrimSpace(s)
	if s == "" {
		return bad("empty")
	}
	neg := false
	if s[0] == '-' || s[0] == '+' {
		neg = s[0] == '-'
		s = s[1:]
	}
	if s == "0" {
		return 0, nil
	}
	var total float64 // nanoseconds; float so that 1.5d works, checked against the int64 range
	for s != "" {
		i := 0
		for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
			i++
		}
		if i == 0 {
			return bad(fmt.Sprintf("%q is not a number", s))
		}
		num, err := strconv.ParseFloat(s[:i], 64)
		if err != nil || strings.Count(s[:i], ".") > 1 {
			return bad(fmt.Sprintf("%q is not a number", s[:i]))
		}
		s = s[i:]
		j := 0
		for j < len(s) && !(s[j] >= '0' && s[j] <= '9' || s[j] == '.') {
			j++
		}
		name := s[:j]
		s = s[j:]
		if name == "" {
			return bad(fmt.Sprintf("%s has no unit", strconv.FormatFloat(num, 'f', -1, 64)))
		}
		var unit time.Duration
		for _, u := range durationUnits {
			if u.name == name {
				unit = u.unit
				break
			}
		}
		if unit == 0 {
			return bad(fmt.Sprintf("unknown unit %q", name))
		}
		total += num * float64(unit)
	}
	if total > math.MaxInt64 {
		return bad("too long (at most about 292 years)")
	}
	d := time.Duration(math.Round(total))
	if neg {
		d = -d
	}
	return d, nil
}

// FormatDuration writes d the way ParseDuration reads it, in whole days and weeks where it
// can: 72h is "3d", 36h is "1d12h", 14 days "2w", 90 minutes "1h30m", 1.5 seconds "1.5s".
func FormatDuration(d time.Duration) string {
	if d == 0 {
		return "0"
	}
	var b strings.Builder
	if d < 0 {
		b.WriteByte('-')
		if d == math.MinInt64 {
			return time.Duration(d).String()
		}
		d = -d
	}
	for _, u := range []struct {
		name string
		unit time.Duration
	}{{"w", Week}, {"d", Day}, {"h", time.Hour}, {"m", time.Minute}} {
		if d >= u.unit {
			b.WriteString(strconv.FormatInt(int64(d/u.unit), 10) + u.name)
			d %= u.unit
		}
	}
	if d > 0 {
		b.WriteString(d.String()) // seconds and below as Go writes them: 1.5s, 250ms
	}
	return b.String()
}

// ErrNegativeDuration is returned (wrapped) by DurationFlag for a negative value.
var ErrNegativeDuration = errors.New("must not be negative")

// DurationFlag is a pflag.Value (Set, String, Type) for a duration flag that reads
// ParseDuration's syntax (3d, 2w, 1d12h, 90m) and refuses negative values.
type DurationFlag struct{ D *time.Duration }

// Set parses s; an invalid or negative duration is an error that says what is accepted.
func (f DurationFlag) Set(s string) error {
	d, err := ParseDuration(s)
	if err != nil {
		return err
	}
	if d < 0 {
		return fmt.Errorf("invalid duration %q: %w", s, ErrNegativeDuration)
	}
	*f.D = d
	return nil
}

// String returns the value as FormatDuration writes it ("0" when unset).
func (f DurationFlag) String() string {
	if f.D == nil {
		return "0"
	}
	return FormatDuration(*f.D)
}

// Type names the value in help texts.
func (f DurationFlag) Type() string { return "duration" }
