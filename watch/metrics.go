package watch

import (
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/zbrecover/zbrecover/scan"
)

// Metrics are a watcher's Prometheus metrics, in a registry of their own (with the Go and
// process collectors), served by Handler with /healthz. The metric names are in
// docs/runbook.md ("Metrics").
type Metrics struct {
	reg *prometheus.Registry

	parkedFiles, parkedBytes, parkedOldest *prometheus.GaugeVec
	blockedFiles                           *prometheus.GaugeVec
	tablesParked, tablesBlocked            prometheus.Gauge
	tablesQuarantined                      prometheus.Gauge
	rowsRecovered                          *prometheus.CounterVec
	batches                                *prometheus.CounterVec
	filesDeleted                           *prometheus.CounterVec
	errors                                 *prometheus.CounterVec
	cycles                                 prometheus.Counter
	cycleDuration                          prometheus.Histogram
	lastCycleEnd                           prometheus.Gauge

	mu     sync.Mutex
	tables map[string]bool // tables with parked series
	health health
}

// health is what /healthz answers from.
type health struct {
	started      time.Time
	interval     time.Duration
	lastStart    time.Time
	lastEnd      time.Time
	cycle        int64
	scanFailures int // cycles in a row whose scan failed
	lastError    string
}

// NewMetrics returns the metrics of a watcher whose cycles start every interval.
func NewMetrics(interval time.Duration) *Metrics {
	const ns = "zbrecover_watch"
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m := &Metrics{reg: reg, tables: map[string]bool{}, health: health{started: time.Now(), interval: interval}}
	gauge := func(name, help string) prometheus.Gauge {
		g := prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: name, Help: help})
		reg.MustRegister(g)
		return g
	}
	gaugeVec := func(name, help, label string) *prometheus.GaugeVec {
		g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: name, Help: help}, []string{label})
		reg.MustRegister(g)
		return g
	}
	counterVec := func(name, help, label string) *prometheus.CounterVec {
		c := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: name, Help: help}, []string{label})
		reg.MustRegister(c)
		return c
	}
	m.parkedFiles = gaugeVec("parked_files",
		"Fallback files in the table's fallback folder older than --min-age, at the last scan.", "table")
	m.parkedBytes = gaugeVec("parked_bytes", "Bytes of those fallback files, at the last scan.", "table")
	m.parkedOldest = gaugeVec("parked_oldest_age_seconds",
		"Age of the oldest of those fallback files at the last scan (0 when none).", "table")
	m.blockedFiles = gaugeVec("blocked_files",
		"Fallback files of schema groups that block the load, waiting for the table's fix.", "table")
	m.tablesParked = gauge("tables_parked", "Tables with parked fallback files at the last scan.")
	m.tablesBlocked = gauge("tables_blocked",
		"Tables whose fallback files a schema change blocks (alerted once each until fixed).")
	m.tablesQuarantined = gauge("tables_quarantined", "Tables no longer tried after failing --max-failures cycles in a row.")
	m.rowsRecovered = counterVec("rows_recovered_total", "Rows loaded into the table by this watcher's reloads.", "table")
	m.batches = counterVec("batches_total",
		"Batches of this watcher's reloads by outcome (verified, unknown, failed, mismatch).", "state")
	m.filesDeleted = counterVec("files_deleted_total",
		"Fallback files cleanup deleted (archived first with --archive-to) after they were proved in the table.", "table")
	m.errors = counterVec("errors_total", "Failures by kind (warehouse, storage, workspace, journal, lease, other).", "kind")
	m.cycles = prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "cycles_total", Help: "Cycles run."})
	m.cycleDuration = prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: "cycle_duration_seconds",
		Help: "How long a cycle took: the scan and the recovery of every parked table.", Buckets: prometheus.ExponentialBuckets(0.1, 2, 16)})
	reg.MustRegister(m.cycles, m.cycleDuration)
	m.lastCycleEnd = gauge("last_cycle_end_timestamp_seconds", "When the last cycle ended (Unix time).")
	for _, k := range []ErrorKind{KindWarehouse, KindStorage, KindWorkspace, KindJournal, KindLease, KindOther} {
		m.errors.WithLabelValues(string(k))
	}
	return m
}

// Registry is the metrics' registry (tests gather from it).
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// scanned records a scan's tables: every table that has held parked files keeps its series,
// at 0 once its folder is clean.
func (m *Metrics) scanned(rep *scan.Report, now time.Time) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, t := range rep.Tables {
		if t.Status == scan.Unreadable || (t.Files == 0 && !m.tables[t.Name]) {
			continue
		}
		m.tables[t.Name] = true
		m.parkedFiles.WithLabelValues(t.Name).Set(float64(t.Files))
		m.parkedBytes.WithLabelValues(t.Name).Set(float64(t.Bytes))
		age := 0.0
		if t.Oldest != nil {
			age = now.Sub(*t.Oldest).Seconds()
		}
		m.parkedOldest.WithLabelValues(t.Name).Set(age)
	}
	m.tablesParked.Set(float64(rep.Totals.Parked))
}

func (m *Metrics) cycleStarted(cycle int64, at time.Time) {
	if m == nil {
		return
	}
	m.mu.Lock()
	m.health.cycle, m.health.lastStart = cycle, at
	m.mu.Unlock()
}

func (m *Metrics) cycleEnded(d time.Duration, at time.Time, scanErr error) {
	if m == nil {
		return
	}
	m.cycles.Inc()
	m.cycleDuration.Observe(d.Seconds())
	m.lastCycleEnd.Set(float64(at.Unix()))
	m.mu.Lock()
	defer m.mu.Unlock()
	m.health.lastEnd = at
	if scanErr != nil {
		m.health.scanFailures++
		m.health.lastError = scanErr.Error()
	} else {
		m.health.scanFailures, m.health.lastError = 0, ""
	}
}

func (m *Metrics) blocked(table string, files int) {
	if m != nil {
		m.blockedFiles.WithLabelValues(table).Set(float64(files))
	}
}

func (m *Metrics) tableCounts(blocked, quarantined int) {
	if m != nil {
		m.tablesBlocked.Set(float64(blocked))
		m.tablesQuarantined.Set(float64(quarantined))
	}
}

func (m *Metrics) loaded(table string, rows int64, states map[string]int) {
	if m == nil {
		return
	}
	m.rowsRecovered.WithLabelValues(table).Add(float64(rows))
	for s, n := range states {
		m.batches.WithLabelValues(s).Add(float64(n))
	}
}

func (m *Metrics) deleted(table string, n int) {
	if m != nil {
		m.filesDeleted.WithLabelValues(table).Add(float64(n))
	}
}

func (m *Metrics) failed(kind ErrorKind) {
	if m != nil {
		m.errors.WithLabelValues(string(kind)).Inc()
	}
}

// Health is what /healthz answers: ok while cycles run on time and scans succeed.
type Health struct {
	Status string `json:"status"` // ok, stalled (no cycle ended for 3 intervals), failing (3 scans in a row failed)
	Cycle  int64  `json:"cycle"`
	// LastCycleEnd is absent before the first cycle ended.
	LastCycleEnd *time.Time `json:"last_cycle_end,omitempty"`
	LastError    string     `json:"last_error,omitempty"`
}

// Health reports the watcher's health at now.
func (m *Metrics) Health(now time.Time) Health {
	m.mu.Lock()
	defer m.mu.Unlock()
	h := Health{Status: "ok", Cycle: m.health.cycle, LastError: m.health.lastError}
	last := m.health.started
	if !m.health.lastEnd.IsZero() {
		end := m.health.lastEnd.UTC()
		h.LastCycleEnd = &end
		last = m.health.lastEnd
	}
	switch {
	case now.Sub(last) > 3*m.health.interval+time.Minute:
		h.Status = "stalled"
	case m.health.scanFailures >= 3:
		h.Status = "failing"
	}
	return h
}

// Handler serves /metrics (the Prometheus text format) and /healthz (200 with {"status":
// "ok"}, else 503 with the status and the last error).
func (m *Metrics) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		h := m.Health(time.Now())
		w.Header().Set("Content-Type", "application/json")
		if h.Status != "ok" {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		_ = json.NewEncoder(w).Encode(h)
	})
	return mux
}
