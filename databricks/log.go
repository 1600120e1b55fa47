package databricks

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/zbrecover/zbrecover/internal/redact"

	sdklogger "github.com/databricks/databricks-sdk-go/logger"
	dbsqllog "github.com/databricks/databricks-sql-go/logger"
)

// The Databricks SDK and the SQL driver both log through process-wide loggers. zbrecover
// routes them into the caller's slog.Logger (the -v log), every line through Redact, and
// silences them when no logger is given.

// currentLog is the logger of the most recently created Client; nil discards.
var currentLog atomic.Pointer[slog.Logger]

var installLogOnce sync.Once

func installLogging(l *slog.Logger) {
	if l == nil {
		l = slog.New(discardHandler{})
	}
	currentLog.Store(l)
	installLogOnce.Do(func() {
		sdklogger.DefaultLogger = sdkLog{}
	})
	if l.Enabled(context.Background(), slog.LevelDebug) {
		// The driver's own debug level traces every call; its info level (connections,
		// retries, failures) is what helps an operator.
		_ = dbsqllog.SetLogLevel("info")
	} else {
		_ = dbsqllog.SetLogLevel("disabled")
	}
	dbsqllog.SetLogOutput(driverLogWriter{})
}

func logger() *slog.Logger {
	if l := currentLog.Load(); l != nil {
		return l
	}
	return slog.New(discardHandler{})
}

type discardHandler struct{}

func (discardHandler) Enabled(context.Context, slog.Level) bool  { return false }
func (discardHandler) Handle(context.Context, slog.Record) error { return nil }
func (d discardHandler) WithAttrs([]slog.Attr) slog.Handler      { return d }
func (d discardHandler) WithGroup(string) slog.Handler           { return d }

// sdkLog adapts the SDK's logger interface. SDK trace and debug output (request and response
// dumps) goes to slog's debug level; its info, warnings and errors keep their level.
type sdkLog struct{}

func sdkLevel(l sdklogger.Level) slog.Level {
	switch {
	case l <= sdklogger.LevelDebug:
		return slog.LevelDebug
	case l <= sdklogger.LevelInfo:
		return slog.LevelInfo
	case l <= sdklogger.LevelWarn:
		return slog.LevelWarn
	default:
		return slog.LevelError
	}
}

func (sdkLog) Enabled(ctx context.Context, level sdklogger.Level) bool {
	return logger().Enabled(ctx, sdkLevel(level))
}

func (s sdkLog) logf(ctx context.Context, level sdklogger.Level, format string, v ...any) {
	l := logger()
	lv := sdkLevel(level)
	if !l.Enabled(ctx, lv) {
		return
	}
	l.Log(ctx, lv, redact.String(fmt.Sprintf(format, v...)), "source", "databricks-sdk")
}

func (s sdkLog) Tracef(ctx context.Context, f string, v ...any) {
	s.logf(ctx, sdklogger.LevelTrace, f, v...)
}
func (s sdkLog) Debugf(ctx context.Context, f string, v ...any) {
	s.logf(ctx, sdklogger.LevelDebug, f, v...)
}
func (s sdkLog) Infof(ctx context.Context, f string, v ...any) {
	s.logf(ctx, sdklogger.LevelInfo, f, v...)
}
func (s sdkLog) Warnf(ctx context.Context, f string, v ...any) {
	s.logf(ctx, sdklogger.LevelWarn, f, v...)
}
func (s sdkLog) Errorf(ctx context.Context, f string, v ...any) {
	s.logf(ctx, sdklogger.LevelError, f, v...)
}

// driverLogWriter receives the SQL driver's zerolog JSON lines and re-emits each as one slog
// record at debug level, redacted.
type driverLogWriter struct{}

var _ io.Writer = driverLogWriter{}

func (driverLogWriter) Write(p []byte) (int, error) {
	l := logger()
	if !l.Enabled(context.Background(), slog.LevelDebug) {
		return len(p), nil
	}
	for _, line := range bytes.Split(bytes.TrimSpace(p), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		msg, level := string(line), ""
		var rec map[string]any
		if json.Unmarshal(line, &rec) == nil {
			if m, ok := rec["message"].(string); ok {
				msg = m
				if lv, ok := rec["level"].(string); ok {
					level = lv
				}
				if e, ok := rec["error"].(string); ok {
					msg += ": " + e
				}
			}
		}
		l.Debug(redact.String(strings.TrimSpace(msg)), "source", "databricks-sql-go", "driver_level", level)
	}
	return len(p), nil
}
