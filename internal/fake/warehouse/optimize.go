package warehouse

import (
	"context"
	"encoding/json"
	"sort"
	"strconv"
)

// optimize implements OPTIMIZE t (CODE: Delta OptimizeTableCommand, DeltaOperations.Optimize,
// DeltaOperationMetrics.OPTIMIZE): bin-packing that rewrites the table's live data files
// into one, when there are at least two (a bin of one file is left alone, and then nothing
// is committed). The commit (operation OPTIMIZE, operationParameters predicate "[]",
// zOrderBy "[]", auto false) removes the old files and adds the new one, all with dataChange
// false; its metrics are numRemovedFiles, numAddedFiles, numRemovedBytes, numAddedBytes,
// minFileSize, p25FileSize, p50FileSize, p75FileSize, maxFileSize (of the files added) and
// numDeletionVectorsRemoved. Rows keep their stable row IDs and commit versions
// (rowtracking.go); their _metadata.file_path becomes the new file's. WHERE and ZORDER BY
// are not supported. The result is path (the table's location) and metrics (a JSON object of
// the same metrics), an approximation of Databricks' struct.
func (e *DuckDB) optimize(ctx context.Context, sess *Session, p *parser) (*Result, error) {
	p.next() // OPTIMIZE
	parts, err := p.qualifiedName()
	if err != nil {
		return nil, err
	}
	t, err := e.table(sess, parts)
	if err != nil {
		return nil, err
	}
	if !p.atEnd() {
		return nil, errUnsupported("OPTIMIZE with WHERE or ZORDER BY")
	}
	live := append([]dataFile(nil), t.files...)
	metrics := map[string]string{"numRemovedFiles": "0", "numAddedFiles": "0", "numRemovedBytes": "0", "numAddedBytes": "0",
		"numDeletionVectorsRemoved": "0", "minFileSize": "0", "p25FileSize": "0", "p50FileSize": "0", "p75FileSize": "0", "maxFileSize": "0"}
	if len(live) >= 2 {
		w, err := e.writeDataFiles(ctx, t, -1)
		if err != nil {
			return nil, err
		}
		var sizes []int64
		for _, f := range w.adds {
			sizes = append(sizes, f.size)
		}
		sort.Slice(sizes, func(i, j int) bool { return sizes[i] < sizes[j] })
		pct := func(q int) string {
			if len(sizes) == 0 {
				return "0"
			}
			return strconv.FormatInt(sizes[(len(sizes)-1)*q/100], 10)
		}
		metrics = map[string]string{
			"numRemovedFiles": strconv.Itoa(len(live)), "numAddedFiles": strconv.Itoa(w.files),
			"numRemovedBytes": strconv.FormatInt(filesSize(live), 10), "numAddedBytes": strconv.FormatInt(w.bytes, 10),
			"numDeletionVectorsRemoved": "0",
			"minFileSize":               pct(0), "p25FileSize": pct(25), "p50FileSize": pct(50), "p75FileSize": pct(75), "maxFileSize": pct(100),
		}
		if _, err := e.addCommitSpec(t, commitSpec{op: "OPTIMIZE", params: map[string]string{"predicate": "[]", "zOrderBy": "[]", "auto": "false"},
			metrics: metrics, adds: w.adds, removes: live, noDataChange: true}); err != nil {
			return nil, err
		}
	}
	m, _ := json.Marshal(metrics)
	return &Result{
		Columns: []Column{{Name: "path", Type: Prim(KindString)}, {Name: "metrics", Type: Prim(KindString)}},
		Rows:    [][]any{{t.location, string(m)}},
	}, nil
}
