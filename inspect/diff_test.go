package inspect_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/zbrecover/zbrecover/inspect"
	sd "github.com/zbrecover/zbrecover/schemadiff"
)

// twoGroups is a report as Run returns it for files in two schemas.
func twoGroups() *inspect.Report {
	old := sd.NewSchema().Col("id", sd.LongType, sd.NotNull).Col("qty", sd.IntegerType).Col("legacy", sd.BooleanType)
	cur := sd.NewSchema().Col("id", sd.LongType, sd.NotNull).Col("qty", sd.LongType)
	return &inspect.Report{
		Root: "s3://bucket/orders", Prefix: inspect.FallbackPrefix,
		Groups: []inspect.Group{{SchemaID: "aaa", Files: 1, Schema: old}, {SchemaID: "bbb", Files: 1, Schema: cur}},
		Totals: inspect.Totals{Files: 2, Groups: 2},
	}
}

func TestReportDiff(t *testing.T) {
	table := inspect.NewTable("delta", sd.NewSchema().Col("id", sd.LongType, sd.NotNull).Col("qty", sd.LongType))
	rep := twoGroups()
	rep.Diff(table, inspect.DiffOptions{})
	old, cur := rep.Groups[0], rep.Groups[1]
	if old.Verdict == nil || *old.Verdict != sd.Blocks || !old.Blocks() || cur.Verdict == nil || *cur.Verdict != sd.OK || cur.Blocks() {
		t.Fatalf("verdicts %v %v", old.Verdict, cur.Verdict)
	}
	if b := rep.Blocking(); len(b) != 1 || b[0].SchemaID != "aaa" {
		t.Errorf("blocking %v", b)
	}
	if len(old.Changes) != 2 || old.Changes[0].Path.String() != "qty" || old.Changes[0].Verdict != sd.NeedsCast ||
		old.Changes[1].Path.String() != "legacy" || old.Changes[1].Verdict != sd.Blocks {
		t.Errorf("changes %+v", old.Changes)
	}
	s := old.Suggestion
	if s == nil || len(s.DDL) != 1 || s.DDL[0] != "ALTER TABLE <table> ADD COLUMNS (`legacy` BOOLEAN)" ||
		s.Projection != "SELECT `id`, CAST(`qty` AS BIGINT) AS `qty` FROM 's3://bucket/orders/_zerobus/table_rejected_parquets/'" ||
		len(s.Omit) != 1 || !s.Complete || !strings.Contains(strings.Join(s.Notes, "\n"), "replace <table>") {
		t.Errorf("suggestion %+v", s)
	}
	if cur.Suggestion != nil || cur.Changes == nil || len(cur.Changes) != 0 {
		t.Errorf("matching group: changes %v suggestion %+v", cur.Changes, cur.Suggestion)
	}

	var buf bytes.Buffer
	if err := rep.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Table:   Delta log (2 columns)\n",
		"  Against the table: blocks: COPY INTO rejects these files until the table or the load changes\n" +
			"    qty: needs-cast: column qty is int in the file and bigint in the table",
		"    legacy: blocks: column legacy (boolean) is in the file but not in the table",
		"  Suggested fix:\n    Table changes:\n      ALTER TABLE <table> ADD COLUMNS (`legacy` BOOLEAN);\n" +
			"    Projection, for COPY INTO … FROM (…):\n      SELECT `id`, CAST(`qty` AS BIGINT) AS `qty` FROM 's3://bucket/orders/_zerobus/table_rejected_parquets/'\n" +
			"      It leaves out legacy, which the table does not have.\n",
		"  Against the table: ok: the files load as they are\n",
	} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, buf.String())
		}
	}

	buf.Reset()
	if err := rep.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `"verdict": "ok",
      "changes": []`) || !strings.Contains(buf.String(), `"ddl": [
          "ALTER TABLE <table> ADD COLUMNS (`+"`legacy`"+` BOOLEAN)"`) {
		t.Errorf("json:\n%s", buf.String())
	}

	// A named table and another source folder.
	rep = twoGroups()
	rep.Diff(table, inspect.DiffOptions{TableName: "main.sales.orders", Source: "/Volumes/main/sales/staging/"})
	s = rep.Groups[0].Suggestion
	if s.DDL[0] != "ALTER TABLE `main`.`sales`.`orders` ADD COLUMNS (`legacy` BOOLEAN)" ||
		!strings.HasSuffix(s.Projection, " FROM '/Volumes/main/sales/staging/'") || strings.Contains(strings.Join(s.Notes, "\n"), "<table>") {
		t.Errorf("suggestion %+v", s)
	}
}

func TestReportDiffWithoutTable(t *testing.T) {
	rep := twoGroups()
	rep.Diff(inspect.MissingTable("no table schema: pass --schema-file"), inspect.DiffOptions{})
	for _, g := range rep.Groups {
		if g.Verdict != nil || g.Changes != nil || g.Suggestion != nil {
			t.Errorf("group %s diffed: %+v", g.SchemaID, g)
		}
	}
	var buf bytes.Buffer
	if err := rep.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "Table:   no table schema: pass --schema-file\n") || strings.Contains(buf.String(), "VERDICT") {
		t.Errorf("text:\n%s", buf.String())
	}
	buf.Reset()
	if err := rep.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `"source": "none"`) || strings.Contains(buf.String(), `"verdict"`) || strings.Contains(buf.String(), `"changes"`) {
		t.Errorf("json:\n%s", buf.String())
	}
}
