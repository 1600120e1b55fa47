package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/zbrecover/zbrecover/internal/redact"
	"io"
	"log/slog"
	"strings"
	"sync"
)

// redactingHandler writes log records as plain lines to stderr, only at -v (info) or -vv
// (debug), with every message and attribute passed through internal/redact.
// Under --output json (asJSON), each record is one JSON object: {"level":…,"msg":…, attrs…}.
type redactingHandler struct {
	mu      *sync.Mutex
	w       io.Writer
	verbose func() int
	asJSON  func() bool
	attrs   []slog.Attr
}

func newRedactingHandler(w io.Writer, verbose func() int, asJSON func() bool) *redactingHandler {
	if asJSON == nil {
		asJSON = func() bool { return false }
	}
	return &redactingHandler{mu: &sync.Mutex{}, w: w, verbose: verbose, asJSON: asJSON}
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

func (h *redactingHandler) Handle(ctx context.Context, r slog.Record) error {
	if h.asJSON() {
		return h.handleJSON(r)
	}
	var b strings.Builder
	if h.verbose() >= 1 && !r.Time.IsZero() {
		// With -v, every line says when: an incident timeline is read from these.
		b.WriteString(r.Time.UTC().Format("2006-01-02T15:04:05.000Z07:00") + " ")
	}
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

func (h *redactingHandler) handleJSON(r slog.Record) error {
	m := map[string]string{}
	add := func(a slog.Attr) bool {
		m[a.Key] = redact.String(fmt.Sprint(a.Value.Resolve()))
		return true
	}
	for _, a := range h.attrs {
		add(a)
	}
	r.Attrs(add)
	m["level"] = strings.ToLower(r.Level.String())
	m["msg"] = redact.String(r.Message)
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err = h.w.Write(append(b, '\n'))
	return err
}

func (h *redactingHandler) WithAttrs(as []slog.Attr) slog.Handler {
	n := *h
	n.attrs = append(append([]slog.Attr{}, h.attrs...), as...)
	return &n
}

func (h *redactingHandler) WithGroup(string) slog.Handler { return h }
