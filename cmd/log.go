package cmd

import (
	"context"
	"fmt"
	"github.com/zbrecover/zbrecover/internal/redact"
	"io"
	"log/slog"
	"strings"
	"sync"
)

// redactingHandler writes log records as plain lines to stderr, only at -v (info) or -vv
// (debug), with every message and attribute passed through internal/redact.
type redactingHandler struct {
	mu      *sync.Mutex
	w       io.Writer
	verbose func() int
	attrs   []slog.Attr
}

func newRedactingHandler(w io.Writer, verbose func() int) *redactingHandler {
	return &redactingHandler{mu: &sync.Mutex{}, w: w, verbose: verbose}
}

func (h *redactingHandler) Enabled(_ context.Context, l slog.Level) bool {
	switch v := h.verbose(); {
	case l >= slog.LevelWarn:
		return true
	case l >= slog.LevelInfo:
		return v >= 1
	default:
		return v >= 2
	}
}

func (h *redactingHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(strings.ToLower(r.Level.String()))
	b.WriteString(": ")
	b.WriteString(r.Message)
	write := func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value.Resolve())
		return true
	}
	for _, a := range h.attrs {
		write(a)
	}
	r.Attrs(write)
	line := redact.String(b.String()) + "\n"
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := io.WriteString(h.w, line)
	return err
}

func (h *redactingHandler) WithAttrs(as []slog.Attr) slog.Handler {
	n := *h
	n.attrs = append(append([]slog.Attr{}, h.attrs...), as...)
	return &n
}

func (h *redactingHandler) WithGroup(string) slog.Handler { return h }
