package warehouse

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// zerobusFallbackPrefix is where Zerobus parks the records a table refuses, under the table's
// root. The fake keeps its own copy of the tool's rule (internal/fallback), as an oracle.
const zerobusFallbackPrefix = "_zerobus/table_rejected_parquets/"

// flushProducer flushes the producer's rows first … first+Rows-1 (e.mu held): committed when
// they fit the table as it is now (unfit), with NULL in the nullable columns the table gained
// since; parked as one fallback file otherwise. It returns the version committed, or -1 for
// parked rows.
func (w *ZerobusWriter) flushProducer(ctx context.Context, t *tableMeta, first int64) (int64, error) {
	rows := make([][]string, 0, w.opts.Rows)
	for n := first; n < first+int64(w.opts.Rows); n++ {
		rows = append(rows, defaultZerobusRow(w.producer, n))
	}
	if why := unfit(w.producer, t.cols); why != "" {
		return -1, w.park(ctx, t, rows)
	}
	// The table's columns in its order: the producer's values, NULL for the nullable columns
	// the table gained since.
	byName := map[string]int{}
	for i, f := range w.producer {
		byName[strings.ToLower(f.Name)] = i
	}
	tableRows := make([][]string, len(rows))
	for r, row := range rows {
		out := make([]string, len(t.cols))
		for i, c := range t.cols {
			if j, ok := byName[strings.ToLower(c.Name)]; ok {
				out[i] = row[j]
			} else {
				out[i] = "CAST(NULL AS " + c.Type.SQL() + ")"
			}
		}
		tableRows[r] = out
	}
	wr, err := w.e.appendValues(ctx, t, tableRows)
	if err != nil {
		return 0, err
	}
	return w.commitRows(ctx, t, wr)
}

// unfit says why records in the producer's schema no longer fit the table ("" when they
// do): a producer column the table lacks or holds with another type, or a NOT NULL table
// column the producer does not send.
func unfit(producer, table []Field) string {
	cols := map[string]Field{}
	for _, c := range table {
		cols[strings.ToLower(c.Name)] = c
	}
	sent := map[string]bool{}
	for _, p := range producer {
		sent[strings.ToLower(p.Name)] = true
		c, ok := cols[strings.ToLower(p.Name)]
		switch {
		case !ok:
			return fmt.Sprintf("the table has no column %s", p.Name)
		case !c.Type.Equal(p.Type):
			return fmt.Sprintf("column %s is %s in the table, %s in the records", p.Name, c.Type.SQL(), p.Type.SQL())
		}
	}
	for _, c := range table {
		if !c.Nullable && !sent[strings.ToLower(c.Name)] {
			return fmt.Sprintf("column %s is NOT NULL and the records do not have it", c.Name)
		}
	}
	return ""
}

// park writes rows (in the producer's schema) as one Parquet file under the table's fallback
// folder, in a folder for today's date, written under a hidden name and renamed into place so
// that a listing never sees a file half written.
func (w *ZerobusWriter) park(ctx context.Context, t *tableMeta, rows [][]string) error {
	root, local := localPath(t.location)
	if !local {
		return errors.New("fakewarehouse: Zerobus parks records only under a table root on the local file system")
	}
	tuples := make([]string, len(rows))
	for i, exprs := range rows {
		tuples[i] = "(" + strings.Join(exprs, ", ") + ")"
	}
	p, err := newParser("VALUES " + strings.Join(tuples, ", "))
	if err != nil {
		return err
	}
	values, _, err := w.e.rewrite(ctx, &Session{Catalog: t.catalog, Schema: t.schema}, p.toks, rewriteOpts{})
	if err != nil {
		return w.e.classify(err)
	}
	aliases := make([]string, len(w.producer))
	typed := make([]string, len(w.producer))
	for i, c := range w.producer {
		aliases[i] = "c" + strconv.Itoa(i)
		typed[i] = fmt.Sprintf("CAST(v.c%d AS %s) AS %s", i, c.Type.Duck(), duckIdent(c.Name))
	}
	now := time.Now().UTC()
	dir := filepath.Join(root, filepath.FromSlash(zerobusFallbackPrefix), now.Format("2006-01-02"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return errInternal(err)
	}
	name := fmt.Sprintf("zerobus-%s.parquet", newUUID())
	tmp := filepath.Join(dir, "_"+name+".tmp")
	q := fmt.Sprintf("COPY (SELECT %s FROM (%s) AS v(%s)) TO %s (FORMAT PARQUET, COMPRESSION SNAPPY)",
		strings.Join(typed, ", "), values, strings.Join(aliases, ", "), duckString(tmp))
	if _, err := w.e.duckExec(ctx, q); err != nil {
		_ = os.Remove(tmp)
		return w.e.classify(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		_ = os.Remove(tmp)
		return errInternal(err)
	}
	w.mu.Lock()
	w.parked++
	w.parkedRows += int64(len(rows))
	w.mu.Unlock()
	return nil
}

// Parked returns the files and rows the writer parked (Park).
func (w *ZerobusWriter) Parked() (files int, rows int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.parked, w.parkedRows
}

// Rows returns the rows the writer produced, committed or parked.
func (w *ZerobusWriter) Rows() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n
}
