package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/zbrecover/zbrecover/databricks"
	"github.com/zbrecover/zbrecover/internal/iostreams"
	"github.com/zbrecover/zbrecover/internal/redact"
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
	// tableRoots are the other tables' roots of a schema, by table name, listed once per run
	// (otherTableRoots).
	tableRoots map[string][]string
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
	return f.openWith(ctx, loc, cfg, f.defaultPolicy())
}

// storagePolicy says how the backends a run opens are decorated: every decorator chain of cmd
// is built from one of these, by openWith.
type storagePolicy struct {
	// Adaptive is the AIMD limit the backend's requests go under: shared by every backend of
	// the policy (scan's one limit over all tables); nil for none.
	Adaptive *storage.Adaptive
	// Retry is the retry policy.
	Retry storage.RetryPolicy
	// Limit caps the requests in flight (0: no cap beyond Adaptive).
	Limit int
	// Counted, when set, is given each backend's request counter.
	Counted func(*storage.Counter)
	// Transport, when set, carries every backend's HTTP requests (connections reused from
	// table to table).
	Transport http.RoundTripper
	// SDKAttempts, when positive, caps the SDK's own attempts per request (1: the retries
	// happen in Retry, where the limits hear of them and -v shows them).
	SDKAttempts int
	// Quiet opens without an "opened" line (scan opens a thousand tables' storage).
	Quiet bool
}

// defaultPolicy is the policy of most places: a limit of its own that adapts to throttling,
// retries logged, at most --concurrency requests in flight.
func (f *Factory) defaultPolicy() storagePolicy {
	return storagePolicy{Adaptive: f.newAdaptive(), Retry: f.retryPolicy(), Limit: f.Global.Concurrency}
}

// openWith opens a backend for loc and decorates it as pol says, innermost first: counted,
// under the adaptive limit, retried, capped. A volume is not decorated: its Files API client
// limits and retries its requests itself (databricks.Volume), and the decorators would add a
// second layer.
func (f *Factory) openWith(ctx context.Context, loc storage.Location, cfg storage.Config, pol storagePolicy) (storage.Backend, error) {
	if err := checkLocalDir(loc); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = f.Logger
	}
	if cfg.Transport == nil {
		cfg.Transport = pol.Transport
	}
	if pol.SDKAttempts > 0 && cfg.MaxAttempts == 0 {
		cfg.MaxAttempts = pol.SDKAttempts
	}
	b, err := f.registry().OpenLocation(ctx, loc, cfg)
	if err != nil {
		return nil, err
	}
	if !pol.Quiet {
		f.Logger.Info("storage opened", "location", b.Location())
	}
	if loc.Scheme == storage.SchemeVolume {
		return b, nil
	}
	if pol.Counted != nil {
		var c *storage.Counter
		b, c = storage.WithCounting(b)
		pol.Counted(c)
	}
	if pol.Adaptive != nil {
		b = storage.WithAdaptiveLimit(b, pol.Adaptive)
	}
	b = storage.WithRetry(b, pol.Retry)
	if pol.Limit > 0 {
		b = storage.WithLimit(b, pol.Limit)
	}
	return b, nil
}

// retryPolicy is the storage retry policy, with one warning line per retry.
func (f *Factory) retryPolicy() storage.RetryPolicy {
	p := storage.DefaultRetryPolicy()
	p.OnRetry = func(op string, attempt int, err error, wait time.Duration) {
		f.Logger.Warn("storage request failed, retrying", "op", op, "attempt", attempt, "max_attempts", p.MaxAttempts,
			"wait", wait.Round(time.Millisecond).String(), "error", err.Error())
	}
	return p
}

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
