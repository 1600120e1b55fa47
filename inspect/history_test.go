package inspect_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/zbrecover/zbrecover/delta"
	"github.com/zbrecover/zbrecover/inspect"
	"github.com/zbrecover/zbrecover/internal/pqgen"
	sd "github.com/zbrecover/zbrecover/schemadiff"
	"github.com/zbrecover/zbrecover/storage/mem"
)

type logCommit struct {
	op, user string
	schema   *sd.Schema // nil: a commit without metaData (an append)
	config   map[string]string
}

// putLog writes a JSON Delta log into b, one commit per entry, an hour apart.
func putLog(t *testing.T, b *mem.Backend, commits []logCommit) {
	t.Helper()
	for v, c := range commits {
		acts := []any{map[string]any{"commitInfo": map[string]any{
			"timestamp": t0.Add(time.Duration(v) * time.Hour).UnixMilli(), "operation": c.op, "userName": c.user}}}
		if v == 0 {
			acts = append(acts, map[string]any{"protocol": map[string]any{"minReaderVersion": 2, "minWriterVersion": 5}})
		}
		if c.schema != nil {
			conf := c.config
			if conf == nil {
				conf = map[string]string{}
			}
			acts = append(acts, map[string]any{"metaData": map[string]any{
				"id": "t1", "format": map[string]any{"provider": "parquet"}, "schemaString": c.schema.DeltaJSON(),
				"partitionColumns": []string{}, "configuration": conf}})
		}
		var lines []string
		for _, a := range acts {
			j, err := json.Marshal(a)
			if err != nil {
				t.Fatal(err)
			}
			lines = append(lines, string(j))
		}
		b.Set(fmt.Sprintf("_delta_log/%020d.json", v), []byte(strings.Join(lines, "\n")+"\n"), t0)
	}
}

// diffWithHistory inspects b, reads the table's schema and history from its log, and diffs.
func diffWithHistory(t *testing.T, b *mem.Backend) *inspect.Report {
	t.Helper()
	ctx := context.Background()
	rep, err := inspect.Run(ctx, b, inspect.Options{})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := delta.Read(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	h, err := delta.History(ctx, b, 0)
	if err != nil {
		t.Fatal(err)
	}
	v := snap.Version
	table := inspect.NewTable(&sd.Table{Source: sd.SourceDelta, Version: &v, Schema: snap.Schema, History: h})
	rep.Diff(table, inspect.DiffOptions{TableName: "main.s.t"})
	if len(rep.Groups) != 1 {
		t.Fatalf("%d groups", len(rep.Groups))
	}
	return rep
}

func putFile(t *testing.T, b *mem.Backend, fields ...arrow.Field) {
	t.Helper()
	sc := arrow.NewSchema(fields, nil)
	data, err := pqgen.GeneratedBytes(sc, 3, 1, pqgen.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b.Set(prefix+"part-1.parquet", data, t0.Add(5*time.Hour))
}

// TestGroupWrittenAgainstVersion0: the table dropped note and added region in one REPLACE
// TABLE (version 3). The files' schema is version 0's: the group says so and names the
// commit that broke it, and no rename of note to region is suggested.
func TestGroupWrittenAgainstVersion0(t *testing.T) {
	v0 := sd.NewSchema().Col("id", sd.LongType).Col("note", sd.StringType)
	v3 := sd.NewSchema().Col("id", sd.LongType).Col("region", sd.StringType)
	b := mem.New()
	putLog(t, b, []logCommit{
		{op: "CREATE TABLE", user: "ann@example.com", schema: &v0},
		{op: "WRITE", user: "zerobus"}, {op: "WRITE", user: "zerobus"},
		{op: "REPLACE TABLE", user: "bo@example.com", schema: &v3},
		{op: "WRITE", user: "zerobus"},
	})
	putFile(t, b, arrow.Field{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		arrow.Field{Name: "note", Type: arrow.BinaryTypes.String, Nullable: true})
	rep := diffWithHistory(t, b)
	g := rep.Groups[0]
	tv := g.TableVersion
	if tv == nil || tv.Version != 0 || tv.Current || len(tv.ChangedBy) != 1 {
		t.Fatalf("table version %+v, want version 0 with one breaking commit", tv)
	}
	if c := tv.ChangedBy[0]; c.Version != 3 || c.Operation != "REPLACE TABLE" || c.User != "bo@example.com" || !c.Time.Equal(t0.Add(3*time.Hour)) {
		t.Errorf("breaking commit %+v", c)
	}
	for _, c := range g.Changes {
		if c.Kind == sd.KindLikelyRename || c.Kind == sd.KindRenamed {
			t.Errorf("rename suggested: %s", c)
		}
	}
	if g.Suggestion == nil || strings.Contains(g.Suggestion.Select, "region") || g.Suggestion.Confirm {
		t.Errorf("suggestion %+v", g.Suggestion)
	}
	var out strings.Builder
	if err := rep.WriteText(&out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Written against table version 0; the schema changed since in:\n    version 3 (REPLACE TABLE by bo@example.com, 2024-05-01T13:00:00Z)\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, out.String())
		}
	}
	var js strings.Builder
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	if want := `"table_version": {
        "version": 0,
        "current": false,
        "changed_by": [
          {
            "version": 3,
            "time": "2024-05-01T13:00:00Z",
            "operation": "REPLACE TABLE",
            "user": "bo@example.com"
          }
        ]
      }`; !strings.Contains(js.String(), want) {
		t.Errorf("JSON lacks %s:\n%s", want, js.String())
	}
}

// TestColumnMappingRenameFromHistory: under column mapping, RENAME COLUMN note TO remark
// keeps note's physical name. Files written before it, with the logical name note, are
// recognised as renamed by that physical name (they match version 0); files written with
// physical names match the current version too, and are paired by physical name.
func TestColumnMappingRenameFromHistory(t *testing.T) {
	cm := map[string]string{"delta.columnMapping.mode": "name", "delta.columnMapping.maxColumnId": "2"}
	v0 := sd.NewSchema().Col("id", sd.LongType, sd.Physical("col-a", 1)).Col("note", sd.StringType, sd.Physical("col-b", 2))
	v1 := sd.NewSchema().Col("id", sd.LongType, sd.Physical("col-a", 1)).Col("remark", sd.StringType, sd.Physical("col-b", 2))
	for _, names := range [][2]string{{"id", "note"}, {"col-a", "col-b"}} {
		t.Run(names[1], func(t *testing.T) {
			b := mem.New()
			putLog(t, b, []logCommit{
				{op: "CREATE TABLE", user: "ann", schema: &v0, config: cm},
				{op: "RENAME COLUMN", user: "bo", schema: &v1, config: cm},
			})
			putFile(t, b, arrow.Field{Name: names[0], Type: arrow.PrimitiveTypes.Int64, Nullable: true},
				arrow.Field{Name: names[1], Type: arrow.BinaryTypes.String, Nullable: true})
			g := diffWithHistory(t, b).Groups[0]
			tv := g.TableVersion
			switch {
			case tv == nil:
				t.Fatal("no table version")
			case names[1] == "note" && (tv.Version != 0 || len(tv.ChangedBy) != 1 || tv.ChangedBy[0].Operation != "RENAME COLUMN"):
				t.Fatalf("table version %+v, want 0 changed by the RENAME COLUMN", tv)
			case names[1] == "col-b" && (tv.Version != 1 || !tv.Current):
				t.Fatalf("table version %+v, want the current version 1", tv)
			}
			var renamed []sd.ChangeInfo
			for _, c := range g.Changes {
				if c.Kind == sd.KindRenamed && c.Path.String() == "remark" {
					renamed = append(renamed, c)
				}
				if c.Verdict == sd.Blocks {
					t.Errorf("blocking change %s", c)
				}
			}
			if len(renamed) != 1 || renamed[0].FilePath[0] != names[1] {
				t.Fatalf("changes %v, want remark renamed from %s", g.Changes, names[1])
			}
			if names[1] == "note" && !strings.Contains(renamed[0].Reason, "renamed note to remark in version 1 (RENAME COLUMN by bo") {
				t.Errorf("reason %q does not name the commit", renamed[0].Reason)
			}
			if want := "`" + names[1] + "` AS `remark`"; g.Suggestion == nil || !strings.Contains(g.Suggestion.Select, want) || g.Suggestion.Confirm {
				t.Errorf("suggestion %+v, want %s with nothing to confirm", g.Suggestion, want)
			}
		})
	}
}
