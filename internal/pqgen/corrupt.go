package pqgen

import (
	"encoding/binary"
	"math/rand"
)

// Region names a part of a Parquet file for targeted corruption.
type Region int

// The regions of a file: [0, FooterStart) is data (magic and pages), [FooterStart, size-8) is
// the thrift footer, the last 8 bytes are the footer length and the trailing magic.
const (
	Anywhere Region = iota
	Data
	Footer
	Trailer
)

// FooterStart returns the offset where the thrift-encoded footer begins, from the length in the
// file's last 8 bytes, or -1 if data is not a well-formed Parquet file.
func FooterStart(data []byte) int {
	if len(data) < 12 || string(data[len(data)-4:]) != "PAR1" {
		return -1
	}
	l := int(binary.LittleEndian.Uint32(data[len(data)-8:]))
	start := len(data) - 8 - l
	if l < 0 || start < 4 {
		return -1
	}
	return start
}

// Truncate returns a copy of data without its last n bytes (all of them when n ≥ len(data)).
func Truncate(data []byte, n int) []byte {
	if n > len(data) {
		n = len(data)
	}
	return append([]byte(nil), data[:len(data)-n]...)
}

// Flip returns a copy of data with the byte at off XORed with mask.
func Flip(data []byte, off int, mask byte) []byte {
	out := append([]byte(nil), data...)
	out[off] ^= mask
	return out
}

// SetFooterLength returns a copy of data whose footer-length field claims l bytes.
func SetFooterLength(data []byte, l uint32) []byte {
	out := append([]byte(nil), data...)
	binary.LittleEndian.PutUint32(out[len(out)-8:], l)
	return out
}

// Corrupt returns a copy of data with k random bytes set to random values inside region
// (Anywhere when the region is empty or the file has no valid footer).
func Corrupt(data []byte, rng *rand.Rand, k int, region Region) []byte {
	out := append([]byte(nil), data...)
	if len(out) == 0 {
		return out
	}
	lo, hi := 0, len(out)
	if fs := FooterStart(data); fs > 0 {
		switch region {
		case Data:
			lo, hi = 0, fs
		case Footer:
			lo, hi = fs, len(out)-8
		case Trailer:
			lo, hi = len(out)-8, len(out)
		}
	}
	if hi <= lo {
		lo, hi = 0, len(out)
	}
	for i := 0; i < k; i++ {
		off := lo + rng.Intn(hi-lo)
		b := byte(rng.Intn(256))
		if b == out[off] {
			b ^= 0xff
		}
		out[off] = b
	}
	return out
}
