package cmd

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/zbrecover/zbrecover/internal/redact"
)

// levelNotice is the level of the status lines the log file records beside the log records
// (notices, the final error and exit status): above info, below warn.
const levelNotice = slog.LevelInfo + 2

// logHandler writes log records to stderr with the standard library's handlers, logfmt
// (slog.TextHandler) in text and slog.JSONHandler under --output json, only at -v (info) or
// -vv (debug); warnings always. Every value passes through redactAttr. Text lines carry the
// time from -v on (an incident timeline is read from them); JSON lines always do.
type logHandler struct {
	verbose func() int
	asJSON  func() bool
	text    slog.Handler
	json    slog.Handler
}

// newLogHandler returns the handler of the log lines written to w. verbose gives the current
// -v count (-1: nothing at all); asJSON (nil: never) whether stderr is JSON; stamp whether text
// lines carry the time (nil: from -v on).
func newLogHandler(w io.Writer, verbose func() int, asJSON func() bool, stamp func() bool) *logHandler {
	if asJSON == nil {
		asJSON = func() bool { return false }
	}
	if stamp == nil {
		stamp = func() bool { return verbose() >= 1 }
	}
	w = &lockedWriter{w: w}
	opts := func(withTime func() bool) *slog.HandlerOptions {
		return &slog.HandlerOptions{Level: slog.LevelDebug, ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			return redactAttr(groups, a, withTime)
		}}
	}
	return &logHandler{
		verbose: verbose,
		asJSON:  asJSON,
		text:    slog.NewTextHandler(w, opts(stamp)),
		json:    slog.NewJSONHandler(w, opts(func() bool { return true })),
	}
}

// redactAttr is the handlers' ReplaceAttr: the time in UTC (or dropped, when withTime says
// so), the level in lower case (debug, info, notice, warn, error), and every other value as
// its text with every secret removed (internal/redact): attributes are strings in JSON too.
func redactAttr(groups []string, a slog.Attr, withTime func() bool) slog.Attr {
	if len(groups) == 0 {
		switch a.Key {
		case slog.TimeKey:
			if !withTime() {
				return slog.Attr{}
			}
			if t, ok := a.Value.Any().(time.Time); ok {
				return slog.Time(slog.TimeKey, t.UTC())
			}
			return a
		case slog.LevelKey:
			l, _ := a.Value.Any().(slog.Level)
			return slog.String(slog.LevelKey, levelName(l))
		}
	}
	return slog.String(a.Key, redact.String(a.Value.Resolve().String()))
}

// levelName names a level in lower case: debug, info, notice, warn or error.
func levelName(l slog.Level) string {
	if l == levelNotice {
		return "notice"
	}
	return strings.ToLower(l.String())
}

func (h *logHandler) Enabled(_ context.Context, l slog.Level) bool {
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

func (h *logHandler) Handle(ctx context.Context, r slog.Record) error {
	if h.asJSON() {
		return h.json.Handle(ctx, r)
	}
	return h.text.Handle(ctx, r)
}

func (h *logHandler) WithAttrs(as []slog.Attr) slog.Handler {
	n := *h
	n.text, n.json = h.text.WithAttrs(as), h.json.WithAttrs(as)
	return &n
}

func (h *logHandler) WithGroup(name string) slog.Handler {
	n := *h
	n.text, n.json = h.text.WithGroup(name), h.json.WithGroup(name)
	return &n
}

// lockedWriter serializes the writes of the text and JSON handlers sharing one writer.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

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
// -v says, as timestamped logfmt lines redacted like stderr's. Before it is opened (and without
// --log-file) it takes nothing.
type logFile struct {
	mu sync.Mutex
	f  *os.File
	// notes writes line's records (nil until the first).
	notes slog.Handler
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

// line appends a line that is not a log record (a notice, the final error, the exit status) as
// a record of level (levelNotice, slog.LevelError, slog.LevelInfo), timestamped and redacted
// as the log records are.
func (l *logFile) line(level slog.Level, msg string) {
	if !l.isOpen() {
		return
	}
	l.mu.Lock()
	if l.notes == nil {
		l.notes = newLogHandler(l, func() int { return 2 }, nil, func() bool { return true })
	}
	h := l.notes
	l.mu.Unlock()
	_ = h.Handle(context.Background(), slog.NewRecord(time.Now(), level, msg, 0))
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
