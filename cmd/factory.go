package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"

	"github.com/zbrecover/zbrecover/databricks"
	"github.com/zbrecover/zbrecover/internal/iostreams"
	"github.com/zbrecover/zbrecover/internal/redact"
	"github.com/zbrecover/zbrecover/recovery"
	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/storage/all"
)

// Version is the release version, set at build time with
// -ldflags "-X github.com/zbrecover/zbrecover/cmd.Version=v1.2.3".
var Version = "dev"

// Factory builds what commands depend on. Tests replace its fields.
type Factory struct {
	IO *iostreams.IOStreams
	// Registry returns the storage backends by URL scheme.
	Registry func() *storage.Registry
	// Global holds the root command's persistent flags, filled before any command runs.
	Global *GlobalOptions
	// Logger writes -v output to stderr and every line to --log-file, with secrets redacted.
	Logger *slog.Logger
	// NoDatabricks makes table names fail with ErrNeedsDatabricks (tests of builds or
	// configurations without a workspace).
	NoDatabricks bool

	// databricks is the workspace connection, created lazily (Databricks()).
	databricks *DatabricksOptions
	// jsonStderr is set when --output json is parsed: stderr then holds only JSON lines.
	jsonStderr *atomic.Bool
	// status is stderr for status lines (the log, notices): above the progress bars while
	// they are live.
	status *statusWriter
	// logFile is --log-file.
	logFile *logFile
	// args is the command line Run was given, for run headers and summaries.
	args []string
	// runPlaces opens the run's places (places()).
	runPlaces *recovery.Places
	// quietStop keeps Run from printing the error of a command a signal cut short: the
	// caller (the demo, which runs commands in-process) prints its own one line.
	quietStop bool
}

// GlobalOptions are the flags every command accepts.
type GlobalOptions struct {
	Output      string // text or json
	Concurrency int
	Verbose     int
	NoProgress  bool
	LogFile     string

	S3Region      string
	S3Endpoint    string
	GCSEndpoint   string
	AzureEndpoint string
}

// JSON reports whether output is JSON.
func (g *GlobalOptions) JSON() bool { return g.Output == "json" }

// StorageConfig returns the storage settings taken from the global flags.
func (g *GlobalOptions) StorageConfig() storage.Config {
	return storage.Config{
		S3Region:      g.S3Region,
		S3Endpoint:    g.S3Endpoint,
		GCSEndpoint:   g.GCSEndpoint,
		AzureEndpoint: g.AzureEndpoint,
		UserAgent:     "zbrecover/" + Version,
	}
}

// setJSONStderr records, once the flags are parsed, whether stderr must hold only JSON; the
// signal handler and the log read it from other goroutines.
// Under JSON, the plain status lines a command writes to stderr become {"notice": …}.
func (f *Factory) setJSONStderr(v bool) {
	if f.jsonStderr != nil {
		f.jsonStderr.Store(v)
	}
	if _, wrapped := f.IO.ErrOut.(*jsonLineWriter); v && !wrapped {
		f.IO.ErrOut = &jsonLineWriter{w: &lockedWriter{w: f.IO.ErrOut}}
	}
}

func (f *Factory) isJSONStderr() bool { return f.jsonStderr != nil && f.jsonStderr.Load() }

// notice writes a status line to stderr (above the progress bars while they are live, so
// that it stays on screen): as is, or as {"notice":…} under --output json. The log file
// records it too.
func (f *Factory) notice(msg string) {
	f.logFile.line(levelNotice, msg)
	if f.isJSONStderr() {
		b, _ := json.Marshal(struct {
			Notice string `json:"notice"`
		}{redact.String(msg)})
		fmt.Fprintln(f.status, string(b))
		return
	}
	fmt.Fprintln(f.status, redact.String(msg))
}

// NewFactory returns the production factory over the given streams.
func NewFactory(io *iostreams.IOStreams) *Factory {
	g := &GlobalOptions{}
	f := &Factory{IO: io, Registry: all.Registry, Global: g, jsonStderr: new(atomic.Bool),
		status: newStatusWriter(io.ErrOut), logFile: &logFile{}}
	f.Logger = slog.New(teeHandler{
		newLogHandler(f.status, func() int { return g.Verbose }, f.isJSONStderr, nil),
		newLogHandler(f.logFile, f.logFile.verbosity, nil, func() bool { return true }),
	})
	return f
}

// OpenStorage opens a backend for a URL with the global storage settings, wrapped in the
// retry and concurrency-limit decorators.
func (f *Factory) OpenStorage(ctx context.Context, raw string) (storage.Backend, error) {
	return f.OpenStorageWith(ctx, raw, f.Global.StorageConfig())
}

// OpenStorageWith opens a backend for a URL with the given settings (vended credentials, for
// example), wrapped in the retry and concurrency-limit decorators.
func (f *Factory) OpenStorageWith(ctx context.Context, raw string, cfg storage.Config) (storage.Backend, error) {
	loc, err := storage.Parse(raw)
	if err != nil {
		return nil, err
	}
	return f.openLocation(ctx, loc, cfg)
}

// registry returns the storage registry of this run: f.Registry's backends and the volume
// scheme, whose /Volumes/… locations open through the run's Databricks workspace (and fail,
// saying so, in a run without one).
func (f *Factory) registry() *storage.Registry {
	if ws := f.workspace(); ws != nil {
		return f.Registry().With(databricks.VolumeFactory(ws.Client))
	}
	return f.Registry().With(storage.NewFactory(storage.SchemeVolume, func(_ context.Context, loc storage.Location, _ storage.Config) (storage.Backend, error) {
		return nil, fmt.Errorf("volume %s: %w", loc, ErrNeedsDatabricks)
	}))
}

// openLocation opens a backend for a parsed location, any place (a volume included),
// decorated with the run's default storage policy (defaultPolicy).
func (f *Factory) openLocation(ctx context.Context, loc storage.Location, cfg storage.Config) (storage.Backend, error) {
	return f.opener(f.defaultPolicy()).Open(ctx, loc, cfg)
}

// opener is the run's storage opener with policy pol: every backend of a run is opened and
// decorated by a storage.Opener built here.
func (f *Factory) opener(pol storage.Policy) storage.Opener {
	return storage.Opener{Registry: f.registry(), Policy: pol, Log: f.Logger}
}

// defaultPolicy is the policy of most places: a limit of its own that adapts to throttling,
// retries logged, at most --concurrency requests in flight.
func (f *Factory) defaultPolicy() storage.Policy {
	return storage.Policy{OwnAdaptive: f.Global.Concurrency, Retry: f.retryPolicy(), Limit: f.Global.Concurrency}
}

// retryPolicy is the storage retry policy, with one warning line per retry.
func (f *Factory) retryPolicy() storage.RetryPolicy { return storage.LoggedRetry(f.Logger) }

// jsonLineWriter is stderr under -o json: a line that is not already a JSON object is written
// as {"notice": line}. Text without a newline at its end (a prompt) is written at once, as
// one notice. Each line is one write to w, a lockedWriter: lines of concurrent writers never
// mix.
type jsonLineWriter struct {
	w io.Writer
}

func (j *jsonLineWriter) Write(p []byte) (int, error) {
	for _, line := range strings.SplitAfter(string(p), "\n") {
		text := strings.TrimRight(line, "\r\n")
		if strings.TrimSpace(text) == "" {
			continue
		}
		var out []byte
		if strings.HasPrefix(text, "{") && json.Valid([]byte(text)) {
			out = []byte(text + "\n")
		} else {
			b, err := json.Marshal(struct {
				Notice string `json:"notice"`
			}{redact.String(text)})
			if err != nil {
				return 0, err
			}
			out = append(b, '\n')
		}
		if _, err := j.w.Write(out); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}
