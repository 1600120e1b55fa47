package inspect

import (
	"context"
	"sort"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/zbrecover/zbrecover/storage"
)

// DefaultListSplits is the most key ranges a large fallback folder is listed in at once.
const DefaultListSplits = 32

// listSplit lists every object under prefix exactly once, calling fn for each, from several
// goroutines at once. On a backend whose listing can start after a key (storage.AfterLister),
// when the first serialPages pages show that more follow, the rest of the key space is cut into up to
// splits ranges at the characters the first pages' names use (at each position of the last
// listed name: day folders, hex digits of generated names), and each range is listed page
// by page in parallel with the others, from the key it starts after until a key past its
// end: one pass, each object delivered by one range only, and at most one more list request
// per range than its objects fill. Elsewhere (local files, a backend without pages) it is
// one List.
func listSplit(ctx context.Context, b storage.Backend, prefix string, splits int, fn func(storage.ObjectInfo) error) error {
	al, ok := storage.AsAfterLister(b)
	if !ok || splits <= 1 {
		return b.List(ctx, prefix, fn)
	}
	var (
		seen  [256]bool
		last  string
		token string
	)
	for i := 0; i < serialPages; i++ {
		page, next, err := al.ListPage(ctx, prefix, token)
		if err != nil {
			return err
		}
		for _, o := range page {
			if err := fn(o); err != nil {
				return err
			}
			name := strings.TrimSuffix(strings.TrimPrefix(o.Key, prefix), ".parquet")
			for j := 0; j < len(name); j++ {
				seen[name[j]] = true
			}
			last = o.Key
		}
		if next == "" || next == token {
			return nil
		}
		token = next
	}
	if last == "" {
		return listRange(ctx, al, prefix, token, "", fn)
	}
	bounds := splitBounds(prefix, &seen, strings.TrimPrefix(last, prefix), splits-1)
	g, gctx := errgroup.WithContext(ctx)
	// Range 0 continues the first listing; range i lists (bounds[i-1], bounds[i]].
	hi := ""
	if len(bounds) > 0 {
		hi = bounds[0]
	}
	g.Go(func() error { return listRange(gctx, al, prefix, token, hi, fn) })
	for i, lo := range bounds {
		hi := ""
		if i+1 < len(bounds) {
			hi = bounds[i+1]
		}
		g.Go(func() error { return listRange(gctx, al, prefix, al.AfterToken(lo), hi, fn) })
	}
	return g.Wait()
}

// serialPages is how many pages are listed one after the other before the rest is split:
// a folder that fits in them costs its pages and nothing more.
const serialPages = 3

// listRange lists from token until a key after hi ("" for no end).
func listRange(ctx context.Context, al storage.AfterLister, prefix, token, hi string, fn func(storage.ObjectInfo) error) error {
	for {
		page, next, err := al.ListPage(ctx, prefix, token)
		if err != nil {
			return err
		}
		for _, o := range page {
			if hi != "" && o.Key > hi {
				return nil
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := fn(o); err != nil {
				return err
			}
		}
		if next == "" || next == token {
			return nil
		}
		token = next
	}
}

// splitBounds returns up to n keys, sorted, all after the last listed name last (relative
// to prefix), that cut the key space after it into ranges: at each position p of last
// (shortest prefixes first, so the ranges are as coarse as the count allows), the first p
// characters of last followed by each character the listed names use (seen) that sorts
// after the character of last there.
func splitBounds(prefix string, seen *[256]bool, last string, n int) []string {
	var out []string
	for p := 0; p < len(last) && len(out) < n; p++ {
		var level []string
		for c := int(last[p]) + 1; c < 256; c++ {
			if seen[c] {
				level = append(level, prefix+last[:p]+string([]byte{byte(c)}))
			}
		}
		if len(out)+len(level) > n {
			level = level[:n-len(out)]
		}
		out = append(out, level...)
	}
	sort.Strings(out)
	return out
}
