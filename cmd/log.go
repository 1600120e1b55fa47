package cmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/zbrecover/zbrecover/internal/redact"
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
	case v < 0:
		return false
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

// teeHandler hands every record to each of its handlers that is enabled for its level: the
// terminal's (at the verbosity of -v) and the log file's (always at debug level).
type teeHandler []slog.Handler

func (t teeHandler) Enabled(ctx context.Context, l slog.Level) bool {
	for _, h := range t {
		if h.Enabled(ctx, l) {
			return true
		}
	}
	return false
}

func (t teeHandler) Handle(ctx context.Context, r slog.Record) error {
	var errs []error
	for _, h := range t {
		if h.Enabled(ctx, r.Level) {
			errs = append(errs, h.Handle(ctx, r.Clone()))
		}
	}
	return errors.Join(errs...)
}

func (t teeHandler) WithAttrs(as []slog.Attr) slog.Handler {
	out := make(teeHandler, len(t))
	for i, h := range t {
		out[i] = h.WithAttrs(as)
	}
	return out
}

func (t teeHandler) WithGroup(name string) slog.Handler {
	out := make(teeHandler, len(t))
	for i, h := range t {
		out[i] = h.WithGroup(name)
	}
	return out
}

// logFile is --log-file: once opened, it receives every log line at debug level, whatever
// -v says, as plain timestamped lines redacted like stderr's. Before it is opened (and without
// --log-file) it takes nothing.
type logFile struct {
	mu sync.Mutex
	f  *os.File
}

// open appends to path, creating it readable by its owner only.
func (l *logFile) open(path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fileError("--log-file", path, err, "")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f != nil {
		_ = l.f.Close()
	}
	l.f = f
	return nil
}

func (l *logFile) isOpen() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.f != nil
}

// verbosity is the log file handler's: debug once open, nothing before.
func (l *logFile) verbosity() int {
	if l.isOpen() {
		return 2
	}
	return -1
}

func (l *logFile) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return len(b), nil
	}
	return l.f.Write(b)
}

// line appends one timestamped, redacted line that is not a log record (a notice).
func (l *logFile) line(level, msg string) {
	if !l.isOpen() {
		return
	}
	_, _ = io.WriteString(l, time.Now().UTC().Format("2006-01-02T15:04:05.000Z07:00")+" "+level+": "+redact.String(msg)+"\n")
}

func (l *logFile) close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}
