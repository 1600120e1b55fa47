// Package fallback says which keys of a table's storage are fallback files: the only keys
// reload may load and cleanup may delete. Every check takes the fallback folder the operator
// named, never one read from a journal, so that no journal can widen what is touched.
package fallback

import (
	"errors"
	"fmt"
	"strings"
)

// Prefix is the folder Zerobus writes the records it could not publish to, relative to the
// table's storage root.
const Prefix = "_zerobus/table_rejected_parquets/"

// Parent is the folder every fallback folder lies in.
const Parent = "_zerobus/"

// ErrOutside marks a key or folder outside the fallback folder.
var ErrOutside = errors.New("outside the fallback folder")

// CheckPrefix checks a fallback folder as --prefix gives it: a relative folder strictly
// under _zerobus/ ("_zerobus/table_rejected_parquets/" by default), with no empty, "." or
// ".." element, and it returns it with one trailing "/".
func CheckPrefix(p string) (string, error) {
	if p == "" || strings.HasPrefix(p, "/") || strings.Contains(p, "\\") || strings.Contains(p, "://") {
		return "", fmt.Errorf("fallback folder %q: %w: it must be a relative folder under %s (default %s)", p, ErrOutside, Parent, Prefix)
	}
	p = strings.TrimSuffix(p, "/") + "/"
	if !strings.HasPrefix(p, Parent) || p == Parent {
		return "", fmt.Errorf("fallback folder %q: %w: it must be a folder under %s (default %s)", p, ErrOutside, Parent, Prefix)
	}
	for _, el := range strings.Split(strings.TrimSuffix(p, "/"), "/") {
		if el == "" || el == "." || el == ".." {
			return "", fmt.Errorf("fallback folder %q: %w: empty, \".\" and \"..\" elements are refused", p, ErrOutside)
		}
	}
	return p, nil
}

// Hidden reports whether a path element is one Spark's file listing skips: a name starting
// with "." or "_" (unless it holds "=": a partition folder).
func Hidden(el string) bool {
	return strings.HasPrefix(el, ".") || (strings.HasPrefix(el, "_") && !strings.Contains(el, "="))
}

// HiddenPath reports whether a "/"-separated path relative to a listed folder has an element
// Spark's file listing skips (Hidden).
func HiddenPath(rel string) bool {
	for _, el := range strings.Split(rel, "/") {
		if Hidden(el) {
			return true
		}
	}
	return false
}

// CheckKey checks that key (relative to the table's storage root) is a file inside the
// fallback folder prefix (checked with CheckPrefix): under it, not the folder itself, with
// no empty, ".", ".." or hidden element below it, nothing under a _delta_log folder.
func CheckKey(prefix, key string) error {
	p, err := CheckPrefix(prefix)
	if err != nil {
		return err
	}
	rel, ok := strings.CutPrefix(key, p)
	if !ok || rel == "" || strings.HasSuffix(rel, "/") {
		return fmt.Errorf("%q: %w %s", key, ErrOutside, p)
	}
	for _, el := range strings.Split(rel, "/") {
		switch {
		case el == "" || el == "." || el == "..":
			return fmt.Errorf("%q: %w %s (an empty, \".\" or \"..\" element)", key, ErrOutside, p)
		case Hidden(el):
			return fmt.Errorf("%q: %w %s (a hidden element, %q)", key, ErrOutside, p, el)
		case strings.EqualFold(el, "_delta_log"):
			return fmt.Errorf("%q: %w %s (a Delta log)", key, ErrOutside, p)
		}
	}
	return nil
}

// CheckRel checks a key relative to a folder (a staged copy's key under its staging
// location): not empty, no empty, ".", ".." or hidden element, no backslash.
func CheckRel(rel string) error {
	if rel == "" || strings.HasPrefix(rel, "/") || strings.Contains(rel, "\\") {
		return fmt.Errorf("%q: not a relative key", rel)
	}
	for _, el := range strings.Split(rel, "/") {
		if el == "" || el == "." || el == ".." || Hidden(el) {
			return fmt.Errorf("%q: an empty, \".\", \"..\" or hidden element", rel)
		}
	}
	return nil
}

// GlobChars are the characters a Hadoop path glob gives a meaning to.
const GlobChars = `*?[]{}\`

// HasGlob reports whether s holds a glob character: a folder or file name COPY INTO may read
// as a pattern (whether it does is not known), so such names are never put in a statement
// as they are.
func HasGlob(s string) bool { return strings.ContainsAny(s, GlobChars) }
