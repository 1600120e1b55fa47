package inspect_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/zbrecover/zbrecover/inspect"
)

// TestPreviewFromReport: a preview from a saved inspect -o json report reads only the files
// it previews (one Stat to check each unchanged, then footer and row group), lists nothing,
// and refuses a file that changed since the report.
func TestPreviewFromReport(t *testing.T) {
	f := newFixture(t)
	s := newStore()
	s.setPageSize(100)
	for i := 0; i < 50; i++ {
		s.put(fmt.Sprintf("%sa-%02d.parquet", prefix, i), f.a1, t0)
	}
	s.put(prefix+"z-b.parquet", f.b, t0)
	rep, err := inspect.Run(context.Background(), s, inspect.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var saved bytes.Buffer
	if err := rep.WriteJSON(&saved); err != nil {
		t.Fatal(err)
	}
	loaded, err := inspect.LoadReport(bytes.NewReader(saved.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]string{}
	for _, g := range loaded.Groups {
		ids[g.FirstFile] = g.SchemaID
	}
	s.resetCounts()
	res, err := inspect.PreviewGroup(context.Background(), s, loaded, ids["a-00.parquet"], inspect.PreviewOptions{Rows: 2, Columns: []string{"id"}})
	if err != nil {
		t.Fatal(err)
	}
	c := s.counts()
	if len(res.Rows) != 2 || len(res.Files) != 1 || res.Files[0].Key != "a-00.parquet" || res.Files[0].Error != "" {
		t.Fatalf("preview %+v", res)
	}
	if c.ListPages != 0 || c.Stats != 1 || c.ReadRanges != 2 || s.readsOf(prefix+"a-01.parquet") != 0 || s.readsOf(prefix+"z-b.parquet") != 0 {
		t.Errorf("requests %s: want no listing, 1 stat and 2 reads of the one file previewed", c)
	}
	if res.Files[0].Requests != 3 {
		t.Errorf("the file counts %d requests, want 3", res.Files[0].Requests)
	}

	// Rewritten since the report: not read, reported as changed; the next file is used.
	s.put(prefix+"a-00.parquet", f.a2, t0)
	s.resetCounts()
	res, err = inspect.PreviewGroup(context.Background(), s, loaded, ids["a-00.parquet"], inspect.PreviewOptions{Rows: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Files) != 2 || !strings.Contains(res.Files[0].Error, "changed since the report") || res.Files[1].Key != "a-01.parquet" || len(res.Rows) != 2 {
		t.Errorf("preview %+v", res.Files)
	}
	if s.readsOf(prefix+"a-00.parquet") != 0 {
		t.Error("the changed file was read")
	}
	if _, err := inspect.CheckUnchanged(context.Background(), s, loaded.Prefix, loaded.Files[0]); !errors.Is(err, inspect.ErrChanged) {
		t.Errorf("CheckUnchanged: %v", err)
	}
	if _, err := inspect.LoadReport(strings.NewReader(`{"previews": []}`)); err == nil {
		t.Error("a preview report loaded as an inspect report")
	}
}
