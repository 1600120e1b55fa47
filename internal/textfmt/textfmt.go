// Package textfmt writes the numbers, sizes, counts, times, durations and shell words of
// zbrecover's text output one way, in every command: counts with thousands separators
// (72,331 rows), sizes in binary units (10 MiB; JSON keeps exact bytes), "1 file" beside
// "2 files", RFC 3339 times in UTC, durations with days and weeks, and one shell quoting rule.
// It also holds Writer, the printf that escapes untrusted strings for the terminal.
//
// The package is a leaf: it formats values and never decides what to print.
package textfmt

import (
	"strings"
	"time"

	"github.com/dustin/go-humanize"
)

// Integer is what Count and Plural take.
type Integer interface {
	~int | ~int32 | ~int64 | ~uint | ~uint32 | ~uint64
}

// Count returns n with thousands separators: 999, 2,999, 72,331.
func Count[N Integer](n N) string { return humanize.Comma(int64(n)) }

// Plural returns the count (with thousands separators) and the word, in its plural form unless
// n is 1: "1 file", "2,999 files", "1 batch", "3 batches", "2 entries".
func Plural[N Integer](n N, word string) string {
	return Count(n) + " " + Noun(n, word)
}

// Noun returns word as it follows the count n: singular for 1, plural otherwise ("file",
// "files"), by the regular English rules (-s; -es after s, x, z, ch and sh; -ies after a
// consonant and y). Words whose plural is not regular go through Either.
func Noun[N Integer](n N, word string) string {
	if n == 1 || word == "" {
		return word
	}
	lower := strings.ToLower(word)
	switch {
	case strings.HasSuffix(lower, "s"), strings.HasSuffix(lower, "x"), strings.HasSuffix(lower, "z"),
		strings.HasSuffix(lower, "ch"), strings.HasSuffix(lower, "sh"):
		return word + "es"
	case len(lower) > 1 && strings.HasSuffix(lower, "y") && !strings.ContainsRune("aeiou", rune(lower[len(lower)-2])):
		return word[:len(word)-1] + "ies"
	}
	return word + "s"
}

// Either returns one for n == 1 and many otherwise, for words Noun does not inflect: verbs
// (Either(n, "was", "were")) and irregular nouns.
func Either[N Integer](n N, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Were is "was" for 1, "were" otherwise.
func Were[N Integer](n N) string { return Either(n, "was", "were") }

// Are is "is" for 1, "are" otherwise.
func Are[N Integer](n N) string { return Either(n, "is", "are") }

// Bytes returns a size for people, in binary units with two significant digits: "0 B",
// "812 B", "1.5 KiB", "10 MiB", "3.2 GiB". Negative sizes (unknown) are "-". Text output uses
// it everywhere it shows a size; JSON output keeps the exact byte count.
func Bytes(n int64) string {
	if n < 0 {
		return "-"
	}
	return humanize.IBytes(uint64(n))
}

// Time returns t in RFC 3339, UTC, to the second: 2026-03-01T12:00:00Z; the zero time and a
// nil *time.Time are "-".
func Time[T time.Time | *time.Time](t T) string {
	var v time.Time
	switch x := any(t).(type) {
	case time.Time:
		v = x
	case *time.Time:
		if x != nil {
			v = *x
		}
	}
	if v.IsZero() {
		return "-"
	}
	return v.UTC().Format(time.RFC3339)
}
