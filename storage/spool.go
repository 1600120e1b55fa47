package storage

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"sync/atomic"
)

// The bounds of Spool's memory. An object of at most SpoolMemoryPerObject bytes is held in
// memory while all spooled objects together hold at most SpoolMemoryTotal bytes there; any
// other goes to a temporary file in os.TempDir() (TMPDIR), removed when the Spooled is closed.
const (
	SpoolMemoryPerObject = 8 << 20
	SpoolMemoryTotal     = 64 << 20
)

// spoolInMemory is the bytes spooled objects hold in memory now.
var spoolInMemory atomic.Int64

// Spooled is a copy of data read once, for a write that may have to send it more than once
// (a retried upload) or that must not start before the read has finished (a copy, whose read
// and write would otherwise hold two request slots at once). It is an io.ReadSeeker over
// exactly the bytes read, positioned at the start; Close frees the memory or removes the
// temporary file.
type Spooled struct {
	io.ReadSeeker
	size    int64
	mem     int64    // bytes counted in spoolInMemory
	file    *os.File // the temporary file, or nil
	removed bool     // the file's name is already gone
	closed  bool
}

// Size returns the number of bytes held.
func (s *Spooled) Size() int64 { return s.size }

// InMemory reports whether the bytes are held in memory (else in a temporary file).
func (s *Spooled) InMemory() bool { return s.file == nil }

// Close frees the bytes. It is safe to call more than once.
func (s *Spooled) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	spoolInMemory.Add(-s.mem)
	if s.file == nil {
		return nil
	}
	err := s.file.Close()
	if !s.removed {
		if rerr := os.Remove(s.file.Name()); err == nil {
			err = rerr
		}
	}
	return err
}

// Spool reads exactly size bytes from r (an error wrapping io.ErrUnexpectedEOF when r ends
// early, an error when it holds more) into memory or a temporary file, within the bounds
// above, and returns them as a Spooled. It stops when ctx is done. A failed Spool holds
// nothing.
func Spool(ctx context.Context, r io.Reader, size int64) (*Spooled, error) {
	if size < 0 {
		return nil, fmt.Errorf("spool: negative size %d", size)
	}
	src := &ctxReader{ctx: ctx, r: ExactReader(r, size)}
	if size <= SpoolMemoryPerObject && reserveMemory(size) {
		buf := make([]byte, size)
		if _, err := io.ReadFull(src, buf); err != nil {
			spoolInMemory.Add(-size)
			return nil, err
		}
		if err := drained(src); err != nil {
			spoolInMemory.Add(-size)
			return nil, err
		}
		return &Spooled{ReadSeeker: bytes.NewReader(buf), size: size, mem: size}, nil
	}
	f, err := os.CreateTemp("", "zbrecover-spool-*")
	if err != nil {
		return nil, fmt.Errorf("spool %d bytes to a temporary file: %w", size, err)
	}
	s := &Spooled{ReadSeeker: f, size: size, file: f}
	// The name is not needed once the file is open; where the system allows it, it goes now,
	// so that nothing is left behind by a process that is killed.
	s.removed = os.Remove(f.Name()) == nil
	if _, err := io.Copy(f, src); err != nil {
		s.Close()
		return nil, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// reserveMemory counts n more bytes in memory if the total stays within SpoolMemoryTotal.
func reserveMemory(n int64) bool {
	for {
		cur := spoolInMemory.Load()
		if cur+n > SpoolMemoryTotal {
			return false
		}
		if spoolInMemory.CompareAndSwap(cur, cur+n) {
			return true
		}
	}
}

// drained reads r to its end, failing if it yields more bytes (ExactReader reports that).
func drained(r io.Reader) error {
	var one [1]byte
	for {
		n, err := r.Read(one[:])
		if n > 0 {
			return fmt.Errorf("spool: more data than announced")
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// ContextReader returns a reader of r that fails with ctx's error once ctx is done, so that
// a copy from it stops between two reads.
func ContextReader(ctx context.Context, r io.Reader) io.Reader { return &ctxReader{ctx: ctx, r: r} }

// ctxReader stops a read once ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
