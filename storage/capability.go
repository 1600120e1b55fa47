package storage

import (
	"errors"
	"strings"
)

// ErrNotSupported is returned (wrapped) by an optional method called on a backend that cannot
// do it: a decorator carries every optional method, and one whose wrapped backend lacks it
// fails this way. CapabilitiesOf and the As helpers tell beforehand.
var ErrNotSupported = errors.New("not supported by this backend")

// Capabilities is a set of optional interfaces a backend really implements.
type Capabilities uint8

// The optional capabilities.
const (
	CanBatchDelete Capabilities = 1 << iota // BatchDeleter
	CanListPages                            // Pager
	CanPut                                  // Putter
	CanCopy                                 // Copier
	CanListAfter                            // AfterLister
	CanCopyFrom                             // CopierFrom
)

var capNames = []struct {
	c    Capabilities
	name string
}{{CanBatchDelete, "batch-delete"}, {CanListPages, "list-pages"}, {CanPut, "put"}, {CanCopy, "copy"}, {CanListAfter, "list-after"}, {CanCopyFrom, "copy-from"}}

// Has reports whether c holds every capability of x.
func (c Capabilities) Has(x Capabilities) bool { return c&x == x }

func (c Capabilities) String() string {
	var names []string
	for _, n := range capNames {
		if c.Has(n.c) {
			names = append(names, n.name)
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ",")
}

// Capable is implemented by backends whose optional methods exist on the type but work only
// sometimes: the decorators (WithLimit, WithRetry, WithCounting, WithLatency, DryRun) carry
// every optional method and answer with what the backend they wrap can do. A type assertion
// on such a backend says nothing; Capabilities does.
type Capable interface {
	Capabilities() Capabilities
}

// CapabilitiesOf returns what b can do: b.Capabilities() when b is Capable, else the optional
// interfaces b's type implements.
func CapabilitiesOf(b Backend) Capabilities {
	if c, ok := b.(Capable); ok {
		return c.Capabilities()
	}
	var c Capabilities
	if _, ok := b.(BatchDeleter); ok {
		c |= CanBatchDelete
	}
	if _, ok := b.(Pager); ok {
		c |= CanListPages
	}
	if _, ok := b.(Putter); ok {
		c |= CanPut
	}
	if _, ok := b.(Copier); ok {
		c |= CanCopy
	}
	if _, ok := b.(AfterLister); ok {
		c |= CanListAfter
	}
	if _, ok := b.(CopierFrom); ok {
		c |= CanCopyFrom
	}
	return c
}

// The As helpers are how callers reach an optional interface: never with a bare type
// assertion, which a decorator answers yes to whatever it wraps.

// AsBatchDeleter returns b as a BatchDeleter if it can delete in batches.
func AsBatchDeleter(b Backend) (BatchDeleter, bool) { return as[BatchDeleter](b, CanBatchDelete) }

// AsPager returns b as a Pager if it lists one page per request.
func AsPager(b Backend) (Pager, bool) { return as[Pager](b, CanListPages) }

// AsPutter returns b as a Putter if it can write objects.
func AsPutter(b Backend) (Putter, bool) { return as[Putter](b, CanPut) }

// AsCopier returns b as a Copier if it can copy objects inside the store.
func AsCopier(b Backend) (Copier, bool) { return as[Copier](b, CanCopy) }

// AsAfterLister returns b as an AfterLister if its listing can start after a given key.
func AsAfterLister(b Backend) (AfterLister, bool) { return as[AfterLister](b, CanListAfter) }

// AsCopierFrom returns b as a CopierFrom if it can copy from other backends of its store.
func AsCopierFrom(b Backend) (CopierFrom, bool) { return as[CopierFrom](b, CanCopyFrom) }

func as[T any](b Backend, c Capabilities) (T, bool) {
	var zero T
	t, ok := b.(T)
	if !ok || !CapabilitiesOf(b).Has(c) {
		return zero, false
	}
	return t, true
}
