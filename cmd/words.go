package cmd

import (
	"strconv"
	"strings"
)

// plural returns n and word, with an s unless n is 1: "1 file", "2 files".
func plural[N int | int64](n N, word string) string {
	if n == 1 {
		return "1 " + word
	}
	if strings.HasSuffix(word, "ch") || strings.HasSuffix(word, "sh") || strings.HasSuffix(word, "s") || strings.HasSuffix(word, "x") {
		return strconv.FormatInt(int64(n), 10) + " " + word + "es"
	}
	return strconv.FormatInt(int64(n), 10) + " " + word + "s"
}

// were is "was" for 1, "were" otherwise.
func were[N int | int64](n N) string {
	if n == 1 {
		return "was"
	}
	return "were"
}

// are is "is" for 1, "are" otherwise.
func are[N int | int64](n N) string {
	if n == 1 {
		return "is"
	}
	return "are"
}

// either is one for 1, many otherwise.
func either(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
