package warehouse

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ZerobusOptions configure a ZerobusWriter.
type ZerobusOptions struct {
	// Principal is the user name of the commits: the service principal Zerobus writes as.
	// Default "7f3c1e2a-5b6d-4e8f-9a0b-zerobus00001" (an application id, as history shows one).
	Principal string
	// Rows is how many rows one flush appends. Default 1.
	Rows int
	// Row returns the Spark SQL expressions of one row, one per table column in order, for
	// row number n (counting from 1 over the writer's life). Default: integer columns n, strings
	// 'zerobus-n', decimals and doubles n, booleans true, dates and timestamps now, other
	// types NULL.
	Row func(n int64) []string
	// Park makes the writer behave as Zerobus does when the table's schema changes under it:
	// the producer's schema is the table's when the writer is made, and a flush whose
	// records no longer fit the table (a producer column the table lacks or holds with
	// another type, or a NOT NULL table column the producer does not send) writes them as one
	// Parquet file in the producer's schema under <root>/_zerobus/table_rejected_parquets/
	// instead of committing them (zerobus_park.go). Without it the writer follows the table's
	// schema. Row is not used with Park.
	Park bool
}

// ZerobusWriter commits blind appends to a table as Zerobus Ingest does while other
// statements run: each flush is one WRITE version with engineInfo Zerobus, isBlindAppend
// true and the service principal as userName. Blind appends do not conflict with COPY INTO.
type ZerobusWriter struct {
	e     *DuckDB
	table string
	opts  ZerobusOptions

	mu      sync.Mutex
	n       int64
	commits []int64
	// producer is the table's schema when the writer was made (Park); parked counts the
	// files and rows parked.
	producer   []Field
	parked     int
	parkedRows int64
	stop       chan struct{}
	done       chan struct{}
	err        error
	closed     bool
}

// zerobusParams are the operationParameters of every Zerobus commit, shared by all of them
// (commit parameters are never changed once committed).
var zerobusParams = map[string]string{"mode": "Append", "partitionBy": "[]"}

// ZerobusEngineInfo is the engineInfo of Zerobus commits.
const ZerobusEngineInfo = "Zerobus"

// Zerobus returns a writer appending to table (catalog.schema.table).
func (e *DuckDB) Zerobus(table string, opts ZerobusOptions) (*ZerobusWriter, error) {
	if opts.Principal == "" {
		opts.Principal = "7f3c1e2a-5b6d-4e8f-9a0b-zerobus00001"
	}
	if opts.Rows <= 0 {
		opts.Rows = 1
	}
	e.mu.Lock()
	t, err := e.table(&Session{Catalog: "main", Schema: "default"}, strings.Split(table, "."))
	var producer []Field
	if err == nil && opts.Park {
		producer = append(producer, t.cols...)
	}
	e.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return &ZerobusWriter{e: e, table: table, opts: opts, producer: producer}, nil
}

// Zerobus returns a writer appending to a table of the warehouse; see DuckDB.Zerobus.
func (s *Server) Zerobus(table string, opts ZerobusOptions) (*ZerobusWriter, error) {
	return s.duck.Zerobus(table, opts)
}

// Flush commits one WRITE version of Options.Rows rows and returns its version (-1 when a
// parking writer parked them).
func (w *ZerobusWriter) Flush(ctx context.Context) (int64, error) {
	vs, err := w.FlushN(ctx, 1)
	if err != nil {
		return 0, err
	}
	return vs[0], nil
}

// FlushN commits n WRITE versions of Options.Rows rows each, one after the other with no
// statement in between, and returns their versions (-1 for each flush a parking writer
// parked). It stops at the first error.
func (w *ZerobusWriter) FlushN(ctx context.Context, n int) ([]int64, error) {
	e := w.e
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, errInternal(errors.New("engine closed"))
	}
	t, err := e.table(&Session{Catalog: "main", Schema: "default"}, strings.Split(w.table, "."))
	if err != nil {
		return nil, err
	}
	out := make([]int64, 0, n)
	for i := 0; i < n; i++ {
		v, err := w.flushLocked(ctx, t)
		if err != nil {
			return out, err
		}
		out = append(out, v)
	}
	return out, nil
}

// flushLocked commits one version (e.mu held); see appendValues.
func (w *ZerobusWriter) flushLocked(ctx context.Context, t *tableMeta) (int64, error) {
	e := w.e
	w.mu.Lock()
	first := w.n + 1
	w.n += int64(w.opts.Rows)
	w.mu.Unlock()
	if w.opts.Park {
		return w.flushProducer(ctx, t, first)
	}
	rows := make([][]string, 0, w.opts.Rows)
	for n := first; n < first+int64(w.opts.Rows); n++ {
		if w.opts.Row != nil {
			rows = append(rows, w.opts.Row(n))
		} else {
			rows = append(rows, defaultZerobusRow(t.cols, n))
		}
	}
	wr, err := e.appendValues(ctx, t, rows)
	if err != nil {
		return 0, err
	}
	return w.commitRows(ctx, t, wr)
}

// commitRows commits the data file appendValues wrote as one Zerobus WRITE version.
func (w *ZerobusWriter) commitRows(_ context.Context, t *tableMeta, wr written) (int64, error) {
	e := w.e
	v, err := e.addCommitSpec(t, commitSpec{op: "WRITE", params: zerobusParams,
		metrics: map[string]string{"numFiles": strconv.Itoa(wr.files), "numOutputRows": strconv.Itoa(w.opts.Rows), "numOutputBytes": strconv.FormatInt(wr.bytes, 10)},
		blind:   true, user: w.opts.Principal, engine: ZerobusEngineInfo, adds: wr.adds})
	if err != nil {
		return 0, err
	}
	w.mu.Lock()
	w.commits = append(w.commits, v)
	w.mu.Unlock()
	return v, nil
}

// appendValues appends rows (Spark SQL expressions, one per table column) to t (e.mu held)
// and returns the data file it wrote, for the caller to commit: the values are written as
// the data file, then inserted into the table (each expression is evaluated once for each);
// a CHECK or NOT NULL violation appends nothing. Two DuckDB statements keep it near a
// millisecond. No rows write no file.
func (e *DuckDB) appendValues(ctx context.Context, t *tableMeta, rows [][]string) (written, error) {
	if len(rows) == 0 {
		return written{}, nil
	}
	tuples := make([]string, len(rows))
	for i, exprs := range rows {
		if len(exprs) != len(t.cols) {
			return written{}, fmt.Errorf("fakewarehouse: a row has %d values for %d columns", len(exprs), len(t.cols))
		}
		tuples[i] = "(" + strings.Join(exprs, ", ") + ")"
	}
	p, err := newParser("VALUES " + strings.Join(tuples, ", "))
	if err != nil {
		return written{}, err
	}
	values, _, err := e.rewrite(ctx, &Session{Catalog: t.catalog, Schema: t.schema}, p.toks, rewriteOpts{})
	if err != nil {
		return written{}, e.classify(err)
	}
	aliases := make([]string, len(t.cols))
	typed := make([]string, len(t.cols))
	phys := make([]string, len(t.cols))
	names := make([]string, len(t.cols))
	for i, c := range t.cols {
		aliases[i] = "c" + strconv.Itoa(i)
		typed[i] = fmt.Sprintf("CAST(v.c%d AS %s) AS %s", i, c.Type.Duck(), duckIdent(c.Name))
		phys[i] = physicalExpr(duckIdent(c.Name), c.Type) + " AS " + duckIdent(c.physical())
		names[i] = duckIdent(c.Name)
	}
	relation := fmt.Sprintf("SELECT %s FROM (%s) AS v(%s)", strings.Join(typed, ", "), values, strings.Join(aliases, ", "))
	if err := e.constraintViolation(ctx, t, relation); err != nil {
		return written{}, e.classify(err)
	}
	name := newDataFileName()
	df, keep, err := e.newDataFile(ctx, t, name, fmt.Sprintf("SELECT %s FROM (%s) AS r", strings.Join(phys, ", "), relation))
	if err != nil {
		return written{}, e.classify(err)
	}
	// The rows go in with their data file and, with row tracking, fresh row IDs in the
	// order they were written (rowtracking.go).
	hidden := []string{duckIdent(hiddenFile)}
	hvals := []string{duckString(name)}
	var tr dataFile
	if t.rowTracking() {
		tr = dataFile{tracked: true, baseRowID: t.nextRowID, rowVersion: t.nextVersion()}
		hidden = append(hidden, duckIdent(hiddenRowID), duckIdent(hiddenRowVersion))
		hvals = append(hvals, fmt.Sprintf("%d + row_number() OVER () - 1", tr.baseRowID), fmt.Sprintf("%d", tr.rowVersion))
	}
	if _, err := e.duckExec(ctx, fmt.Sprintf("INSERT INTO %s (%s, %s) SELECT r.*, %s FROM (%s) AS r", duckIdent(t.phys),
		strings.Join(names, ", "), strings.Join(hidden, ", "), strings.Join(hvals, ", "), relation)); err != nil {
		_ = os.Remove(df.file)
		return written{}, e.classify(err)
	}
	if tr.tracked {
		t.nextRowID += int64(len(rows))
	}
	w, err := df.written(keep, int64(len(rows)))
	if err == nil && tr.tracked {
		w.adds[0].tracked, w.adds[0].baseRowID, w.adds[0].rowVersion = true, tr.baseRowID, tr.rowVersion
	}
	return w, err
}

// Start flushes every interval in a goroutine until Close. The first error stops it and is
// returned by Close.
func (w *ZerobusWriter) Start(interval time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stop != nil || w.closed {
		return
	}
	w.stop, w.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(w.done)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-w.stop:
				return
			case <-tick.C:
				if _, err := w.Flush(context.Background()); err != nil {
					w.mu.Lock()
					w.err = err
					w.mu.Unlock()
					return
				}
			}
		}
	}()
}

// Close stops the goroutine Start began and waits for it.
func (w *ZerobusWriter) Close() error {
	w.mu.Lock()
	stop, done := w.stop, w.done
	already := w.closed
	w.closed = true
	w.mu.Unlock()
	if stop != nil && !already {
		close(stop)
		<-done
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Versions returns the versions the writer committed, in order.
func (w *ZerobusWriter) Versions() []int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]int64(nil), w.commits...)
}

func defaultZerobusRow(cols []Field, n int64) []string {
	out := make([]string, len(cols))
	for i, c := range cols {
		switch c.Type.Kind {
		case KindByte, KindShort, KindInt, KindLong:
			out[i] = strconv.FormatInt(n, 10)
		case KindString:
			out[i] = "'zerobus-" + strconv.FormatInt(n, 10) + "'"
		case KindDecimal, KindDouble, KindFloat:
			out[i] = "CAST(" + strconv.FormatInt(n%1000, 10) + " AS " + c.Type.SQL() + ")"
		case KindBoolean:
			out[i] = "true"
		case KindDate:
			out[i] = "CAST('" + time.Now().UTC().Format("2006-01-02") + "' AS DATE)"
		case KindTimestamp, KindTimestampNTZ:
			out[i] = "CAST('" + time.Now().UTC().Format("2006-01-02 15:04:05.000000") + "' AS " + c.Type.SQL() + ")"
		default:
			out[i] = "CAST(NULL AS " + c.Type.SQL() + ")"
		}
	}
	return out
}
