package reload

import (
	"reflect"
	"testing"

	"github.com/zbrecover/zbrecover/journal"
	"github.com/zbrecover/zbrecover/storage"
)

func TestParseKeys(t *testing.T) {
	for in, want := range map[string]Keys{
		"id":                  {"id"},
		" id , region ":       {"id", "region"},
		"order id":            {"order id"},
		"`a,b`,c":             {"a,b", "c"},
		"`we``ird`, id":       {"we`ird", "id"},
		"we`ird":              {"we`ird"},
		"`  padded  `":        {"  padded  "},
		"`order id`,`seq no`": {"order id", "seq no"},
	} {
		got, err := ParseKeys(in)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("ParseKeys(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "id,", ",id", "`id", "`id`x", "id,ID"} {
		if k, err := ParseKeys(bad); err == nil {
			t.Errorf("ParseKeys(%q) = %q, want an error", bad, k)
		}
	}
}

// TestRunSourcesNameStagedCopies: a staged batch is read from its copies under their staged
// names (a glob character replaced), as its statement named them, not under the originals'.
func TestRunSourcesNameStagedCopies(t *testing.T) {
	root, err := storage.Parse("s3://lake/orders")
	if err != nil {
		t.Fatal(err)
	}
	const dir = "_zerobus/table_rejected_parquets/b/"
	st := &journal.State{
		Batches: []*journal.BatchState{{Batch: 1, Folder: dir, Files: []journal.File{{Key: dir + "part-[1].parquet"}, {Key: dir + "plain.parquet"}}}},
		Staging: []journal.Staging{{Location: "/Volumes/main/sales/staging/run1", Files: []journal.Staged{
			{Source: dir + "part-[1].parquet", Key: "b/part-_1_-0a1b2c.parquet"}, {Source: dir + "plain.parquet", Key: "b/plain.parquet"}}}},
	}
	srcs := RunSources(st, Keys{"id"}, root)
	if len(srcs) != 1 || srcs[0].Folder != "/Volumes/main/sales/staging/run1/b/" ||
		len(srcs[0].Files) != 2 || srcs[0].Files[0] != "part-_1_-0a1b2c.parquet" || srcs[0].Files[1] != "plain.parquet" {
		t.Errorf("sources %+v", srcs)
	}
	st.Staging = nil
	if srcs := RunSources(st, Keys{"id"}, root); srcs[0].Folder != "s3://lake/orders/"+dir || srcs[0].Files[0] != "part-[1].parquet" {
		t.Errorf("unstaged sources %+v", srcs)
	}
}
