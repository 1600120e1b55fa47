package inspect

import (
	"context"
	"sort"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/zbrecover/zbrecover/storage"
)

// DefaultListSplits is the most key ranges one range of a large fallback folder is cut into at
// once; a listing makes at most twice as many ranges in all.
const DefaultListSplits = 32

// serialPages is how many pages a range lists one after the other before the rest of it is
// cut: a folder that fits in them costs its pages and nothing more.
const serialPages = 3

// listSplit lists every object under prefix exactly once, calling fn for each, from several
// goroutines at once. On a backend whose listing can start after a key (storage.AfterLister),
// a range (at first the whole folder) whose first serialPages pages show that more follow
// has the rest of its key space cut into up to splits ranges, at the characters the names
// listed so far use, at each position of the last listed name (day folders, hex digits of
// generated names, digits of counters); each range is listed page by page in parallel with
// the others, from the key it starts after until a key past its end, and may be cut again
// the same way while the listing has ranges left to make (2·splits in all). One pass: each
// object is delivered by one range only, and a range costs at most one list request more
// than the pages its objects fill. Elsewhere (local files, a backend without pages) it is
// one List.
func listSplit(ctx context.Context, b storage.Backend, prefix string, splits int, fn func(storage.ObjectInfo) error) error {
	al, ok := storage.AsAfterLister(b)
	if !ok || splits <= 1 {
		return b.List(ctx, prefix, fn)
	}
	g, gctx := errgroup.WithContext(ctx)
	l := &rangeLister{ctx: gctx, g: g, al: al, prefix: prefix, fn: fn, fanout: splits, budget: 2 * splits}
	g.Go(func() error { return l.run("", "") })
	return g.Wait()
}

type rangeLister struct {
	ctx    context.Context
	g      *errgroup.Group
	al     storage.AfterLister
	prefix string
	fn     func(storage.ObjectInfo) error
	fanout int

	mu     sync.Mutex
	budget int       // ranges still to be made
	seen   [256]bool // bytes used by the names listed so far
}

// run lists the range that starts at token and ends at hi (inclusive; "" for no end).
func (l *rangeLister) run(token, hi string) error {
	last := ""
	for pages := 1; ; pages++ {
		page, next, err := l.al.ListPage(l.ctx, l.prefix, token)
		if err != nil {
			return err
		}
		var names [256]bool
		for _, o := range page {
			if hi != "" && o.Key > hi {
				return nil
			}
			if err := l.ctx.Err(); err != nil {
				return err
			}
			if err := l.fn(o); err != nil {
				return err
			}
			name := strings.TrimSuffix(strings.TrimPrefix(o.Key, l.prefix), ".parquet")
			for j := 0; j < len(name); j++ {
				names[name[j]] = true
			}
			last = o.Key
		}
		if next == "" || next == token {
			return nil
		}
		token = next
		l.mu.Lock()
		for c, ok := range names {
			l.seen[c] = l.seen[c] || ok
		}
		l.mu.Unlock()
		if pages == serialPages && last != "" {
			hi = l.split(last, hi)
		}
	}
}

// split cuts (last, hi] into ranges, starts listing all but the first, and returns the
// first's end.
func (l *rangeLister) split(last, hi string) string {
	l.mu.Lock()
	n := min(l.fanout-1, l.budget)
	var bounds []string
	if n > 0 {
		bounds = splitBounds(l.prefix, &l.seen, strings.TrimPrefix(last, l.prefix), n, hi)
		l.budget -= len(bounds)
	}
	l.mu.Unlock()
	if len(bounds) == 0 {
		return hi
	}
	for i, lo := range bounds {
		end := hi
		if i+1 < len(bounds) {
			end = bounds[i+1]
		}
		l.g.Go(func() error { return l.run(l.al.AfterToken(lo), end) })
	}
	return bounds[0]
}

// splitBounds returns up to n keys, sorted, after prefix+last and before hi ("" for no end),
// that cut the key space between into ranges: at each position p of last (shortest prefixes
// first, so the ranges are as coarse as the count allows), the first p characters of last
// followed by each character the listed names use (seen) that sorts after the character of
// last there.
func splitBounds(prefix string, seen *[256]bool, last string, n int, hi string) []string {
	var out []string
	for p := 0; p < len(last) && len(out) < n; p++ {
		for c := int(last[p]) + 1; c < 256 && len(out) < n; c++ {
			if !seen[c] {
				continue
			}
			b := prefix + last[:p] + string([]byte{byte(c)})
			if hi == "" || b < hi {
				out = append(out, b)
			}
		}
	}
	sort.Strings(out)
	return out
}
