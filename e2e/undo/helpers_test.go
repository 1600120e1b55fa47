//go:build demo && cgo

package undo

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zbrecover/zbrecover/delta/deltatest"
	"github.com/zbrecover/zbrecover/e2e/e2etest"
	"github.com/zbrecover/zbrecover/internal/fallback"
	"github.com/zbrecover/zbrecover/internal/pqgen"
	sd "github.com/zbrecover/zbrecover/schemadiff"
)

// firstID is the first fallback record's id: far above the ids of Zerobus' rows (its writer
// numbers them from 1), so that a key names a fallback record or a Zerobus row, never both.
const firstID = 1_000_000

// tableSchema is the table after the breaking change: customer_id was renamed customer_key,
// and a note column was added; a rename into note is the wrong fix.
var tableSchema = sd.NewSchema().Col("id", sd.LongType, sd.NotNull).Col("customer_key", sd.StringType).
	Col("note", sd.StringType).Col("amount", sd.DecimalType(18, 4))

// writeTable writes a managed table at root with the table properties conf and n one-row
// fallback files of the producers that still write customer_id and DECIMAL(10,2): ids
// firstID+1 … firstID+n, customer "c<id>", amount id%100 + 0.25.
func writeTable(t *testing.T, root string, conf map[string]string, n int) {
	t.Helper()
	if _, err := deltatest.Write(root, deltatest.Table{Schema: tableSchema, Configuration: conf}); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= n; i++ {
		id := firstID + i
		data, err := pqgen.Bytes(e2etest.OldFiles, fmt.Sprintf(`[{"id":%d,"customer_id":"c%d","amount":"%d.25"}]`, id, id, id%100), pqgen.Options{})
		if err != nil {
			t.Fatal(err)
		}
		key := fmt.Sprintf("2026/01/%02d/f-%07d.parquet", 1+i%2, id)
		if err := pqgen.WriteFile(filepath.Join(root, filepath.FromSlash(fallback.Prefix), filepath.FromSlash(key)), data); err != nil {
			t.Fatal(err)
		}
	}
}

// served wraps the release binary driven against demo serve with the checks of these tests.
type served struct{ *e2etest.Served }

// fileRows counts the table's rows of fallback records, their distinct ids, and those loaded
// right (customer_key from customer_id, note NULL, the amount exact).
func (s served) fileRows(table string) (rows, distinct, right int64) {
	s.T.Helper()
	n := s.Numbers(fmt.Sprintf("SELECT count(*), count(DISTINCT id), count(CASE WHEN customer_key = concat('c', CAST(id AS STRING)) AND note IS NULL "+
		"AND amount = CAST(id %% 100 AS DECIMAL(18,4)) + 0.25 THEN 1 END) FROM %s WHERE id > %d", table, firstID), 3)
	return n[0], n[1], n[2]
}

// wrongRows counts the fallback records loaded with the wrong rename (customer into note).
func (s served) wrongRows(table string) int64 {
	s.T.Helper()
	return s.Count(fmt.Sprintf("SELECT count(*) FROM %s WHERE id > %d AND note = concat('c', CAST(id AS STRING)) AND customer_key IS NULL", table, firstID))
}

// zerobusRows counts the rows Zerobus' writers put in the table.
func (s served) zerobusRows(table string) int64 {
	s.T.Helper()
	return s.Count("SELECT count(*) FROM " + table + " WHERE customer_key LIKE 'zerobus-%'")
}

// zerobusWriter is a writer of the served workspace, as GET /api/2.0/fake/zerobus lists it.
type zerobusWriter struct {
	ID       int    `json:"id"`
	Table    string `json:"table"`
	Versions int    `json:"versions"`
	Running  bool   `json:"running"`
	Error    string `json:"error"`
}

// stopZerobus stops the writers of table and returns the rows they committed (one a version).
func (s served) stopZerobus(table string) int64 {
	s.T.Helper()
	var list struct {
		Writers []zerobusWriter `json:"writers"`
	}
	if err := json.Unmarshal([]byte(s.Control(http.MethodGet, "zerobus", nil)), &list); err != nil {
		s.T.Fatal(err)
	}
	var rows int64
	for _, w := range list.Writers {
		if w.Table != table {
			continue
		}
		var stopped zerobusWriter
		if err := json.Unmarshal([]byte(s.Control(http.MethodDelete, fmt.Sprintf("zerobus/%d", w.ID), nil)), &stopped); err != nil {
			s.T.Fatal(err)
		}
		if stopped.Error != "" {
			s.T.Fatalf("Zerobus writer of %s: %s", table, stopped.Error)
		}
		rows += int64(stopped.Versions)
	}
	return rows
}

// undoPlan is the plan of undo -o json --dry-run (or of an undo that can undo nothing).
type undoPlan struct {
	Run         string `json:"run"`
	RowTracking bool   `json:"row_tracking"`
	Undo        int    `json:"batches_to_undo"`
	Refused     int    `json:"batches_refused"`
	Rows        int64  `json:"rows"`
	Redo        string `json:"redo"`
	Archives    []string
	Batches     []struct {
		Batch    int    `json:"batch"`
		Rows     int64  `json:"rows"`
		Evidence string `json:"evidence"`
		Refused  string `json:"refused"`
		Matched  int64  `json:"matched"`
		Options  []struct {
			Evidence string `json:"evidence"`
			Usable   bool   `json:"usable"`
			Why      string `json:"why"`
		} `json:"evidence_considered"`
	} `json:"batches"`
}

// undoReport is undo's report under -o json.
type undoReport struct {
	Run     string `json:"run"`
	Status  string `json:"run_status"`
	Undone  int    `json:"undone_batches"`
	Refused int    `json:"refused_batches"`
	Deleted int64  `json:"deleted_rows"`
	Tagging string `json:"commit_tags"`
	Batches []struct {
		Batch    int    `json:"batch"`
		Status   string `json:"status"`
		Evidence string `json:"evidence"`
		Rows     int64  `json:"rows"`
		Deleted  *int64 `json:"deleted_rows"`
	} `json:"batches"`
}

// reloadReport is the part of reload's -o json report these tests read.
type reloadReport struct {
	Run      string `json:"run"`
	Status   string `json:"status"`
	Verified int    `json:"verified_batches"`
	Inserted int64  `json:"inserted_rows"`
	Staged   int    `json:"staged_files"`
}

// reload runs a staged reload with args and returns its report; it must exit 0.
func (s served) reload(table, stageTo string, args ...string) reloadReport {
	s.T.Helper()
	all := append([]string{"-o", "json", "reload", table, "--stage-to", stageTo, "--yes"}, args...)
	code, out, errOut := s.Run(all...)
	if code != 0 {
		s.T.Fatalf("reload %v: exit %d\nstdout: %.3000s\nstderr: %.3000s", args, code, out, errOut)
	}
	var r reloadReport
	e2etest.DecodeInto(s.T, out, &r)
	if r.Status != "verified" {
		s.T.Fatalf("reload %v: %+v", args, r)
	}
	return r
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if strings.Contains(x, s) {
			return true
		}
	}
	return false
}
