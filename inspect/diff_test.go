package inspect_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/zbrecover/zbrecover/inspect"
	sd "github.com/zbrecover/zbrecover/schemadiff"
	"github.com/zbrecover/zbrecover/storage"
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
	table := inspect.NewTable(&sd.Table{Source: sd.SourceDelta, Schema: sd.NewSchema().Col("id", sd.LongType, sd.NotNull).Col("qty", sd.LongType)})
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
		s.Select != "`id`, CAST(`qty` AS BIGINT) AS `qty`" || s.Source != "s3://bucket/orders/_zerobus/table_rejected_parquets/" ||
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
			"    Projection, for COPY INTO … FROM (SELECT … FROM '<folder>'):\n      SELECT `id`, CAST(`qty` AS BIGINT) AS `qty`\n" +
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
		s.Source != "/Volumes/main/sales/staging/" || strings.Contains(strings.Join(s.Notes, "\n"), "<table>") {
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

// twoGroupsWithFiles is a report of four files in two schema groups and two folders.
func twoGroupsWithFiles() (*inspect.Report, *inspect.Table) {
	old := sd.NewSchema().Col("id", sd.LongType, sd.NotNull).Col("qty", sd.IntegerType)
	cur := sd.NewSchema().Col("id", sd.LongType, sd.NotNull).Col("qty", sd.LongType).Col("note", sd.StringType)
	rep := &inspect.Report{
		Root: "abfss://lake@acct.dfs.core.windows.net/orders?sig=REDACTED&sv=2024", Prefix: inspect.FallbackPrefix,
		Files: []inspect.File{
			{Key: "2024-05-01/a.parquet", SchemaID: "aaa", Rows: 1},
			{Key: "2024-05-01/b.parquet", SchemaID: "bbb", Rows: 1},
			{Key: "2024-05-02/c.parquet", SchemaID: "aaa", Rows: 1},
			{Key: "2024-05-02/d's.parquet", SchemaID: "bbb", Rows: 1},
		},
		Groups: []inspect.Group{{SchemaID: "aaa", Files: 2, Schema: old}, {SchemaID: "bbb", Files: 2, Schema: cur}},
		Totals: inspect.Totals{Files: 4, Groups: 2},
	}
	table := inspect.NewTable(&sd.Table{Source: sd.SourceDelta, Schema: sd.NewSchema().Col("id", sd.LongType, sd.NotNull).Col("qty", sd.LongType)})
	return rep, table
}

// TestSuggestionScopedToGroup: pasting one group's suggested statement loads that group's
// files and no others (COPY INTO would otherwise mark the other groups' files loaded for good,
// with their columns NULLed or dropped).
func TestSuggestionScopedToGroup(t *testing.T) {
	rep, table := twoGroupsWithFiles()
	loc, err := storage.Parse("abfss://lake@acct.dfs.core.windows.net/orders?sv=2024&sig=c2VjcmV0LXNpZ25hdHVyZQ%3D%3D")
	if err != nil {
		t.Fatal(err)
	}
	rep.Diff(table, inspect.DiffOptions{TableName: "main.sales.orders", Dir: loc.Join(inspect.FallbackPrefix)})
	want := map[string][]string{
		"aaa": {"'a.parquet'", "'c.parquet'"},
		"bbb": {"'b.parquet'", `'d\'s.parquet'`},
	}
	for _, g := range rep.Groups {
		s := g.Suggestion
		if s == nil || len(s.Statements) != 2 {
			t.Fatalf("group %s: suggestion %+v", g.SchemaID, s)
		}
		all := strings.Join(s.Statements, "\n")
		for _, name := range want[g.SchemaID] {
			if !strings.Contains(all, name) {
				t.Errorf("group %s: statements lack %s:\n%s", g.SchemaID, name, all)
			}
		}
		for id, names := range want {
			if id == g.SchemaID {
				continue
			}
			for _, name := range names {
				if strings.Contains(all, name) {
					t.Errorf("group %s: statements name %s of group %s:\n%s", g.SchemaID, name, id, all)
				}
			}
		}
		for _, st := range s.Statements {
			if !strings.Contains(st, " FILES = (") || !strings.Contains(st, "'mergeSchema' = 'false'") {
				t.Errorf("statement without FILES or mergeSchema false: %s", st)
			}
		}
	}
	aaa := rep.Groups[0].Suggestion.Statements[0]
	if want := "COPY INTO `main`.`sales`.`orders` FROM (SELECT `id`, CAST(`qty` AS BIGINT) AS `qty` FROM " +
		"'abfss://lake@acct.dfs.core.windows.net/orders/_zerobus/table_rejected_parquets/2024-05-01/') " +
		"FILEFORMAT = PARQUET FILES = ('a.parquet') COPY_OPTIONS ('mergeSchema' = 'false')"; aaa != want {
		t.Errorf("statement\n got %s\nwant %s", aaa, want)
	}
}

// TestSuggestionSQLHasNoSecrets: an Azure root carrying a SAS token yields SQL that names the
// bare abfss:// folder, with neither the signature nor a redaction marker in it.
func TestSuggestionSQLHasNoSecrets(t *testing.T) {
	rep, table := twoGroupsWithFiles()
	loc, err := storage.Parse("abfss://lake@acct.dfs.core.windows.net/orders?sv=2024-01-01&sig=c2VjcmV0LXNpZ25hdHVyZQ%3D%3D&se=2030")
	if err != nil {
		t.Fatal(err)
	}
	rep.Diff(table, inspect.DiffOptions{Dir: loc.Join(inspect.FallbackPrefix)})
	for _, g := range rep.Groups {
		s := g.Suggestion
		sql := s.Source + "\n" + strings.Join(s.Statements, "\n")
		if !strings.Contains(sql, "'abfss://lake@acct.dfs.core.windows.net/orders/_zerobus/table_rejected_parquets/") ||
			strings.Contains(sql, "sig=") || strings.Contains(sql, "REDACTED") || strings.Contains(sql, "?") {
			t.Errorf("group %s SQL:\n%s", g.SchemaID, sql)
		}
	}
	// Without a structured location the report's display root is used, its query dropped.
	rep, table = twoGroupsWithFiles()
	rep.Diff(table, inspect.DiffOptions{})
	if st := rep.Groups[0].Suggestion.Statements[0]; strings.Contains(st, "REDACTED") || strings.Contains(st, "sig=") {
		t.Errorf("statement from the display root: %s", st)
	}
}

// TestSuggestionManyFilesPointsAtReload: a group needing more statements than a report can
// show is pointed at reload instead.
func TestSuggestionManyFilesPointsAtReload(t *testing.T) {
	rep, table := twoGroupsWithFiles()
	rep.Files = nil
	for i := 0; i < 4*sd.MaxCopyFiles; i++ {
		rep.Files = append(rep.Files, inspect.File{Key: fmt.Sprintf("f%05d.parquet", i), SchemaID: "aaa", Rows: 1})
	}
	rep.Diff(table, inspect.DiffOptions{TableName: "main.sales.orders"})
	s := rep.Groups[0].Suggestion
	if len(s.Statements) != 0 || !strings.Contains(strings.Join(s.Notes, "\n"), "need 4 COPY INTO statements") ||
		!strings.Contains(strings.Join(s.Notes, "\n"), "zbrecover reload") {
		t.Errorf("suggestion %+v", s)
	}
}

func TestBatches(t *testing.T) {
	files := []inspect.File{{Key: "a.parquet"}, {Key: "b.parquet"}, {Key: "b.parquet2"}, {Key: "x/c.parquet"}, {Key: "x/d.parquet"}, {Key: "x/y/e.parquet"}}
	got := inspect.Batches(files, 2)
	want := []string{"|a.parquet,b.parquet", "|b.parquet2", "x/|c.parquet,d.parquet", "x/y/|e.parquet"}
	if len(got) != len(want) {
		t.Fatalf("batches %+v", got)
	}
	for i, b := range got {
		if s := b.Folder + "|" + strings.Join(b.Names, ","); s != want[i] || len(b.Files) != len(b.Names) {
			t.Errorf("batch %d = %s, want %s", i, s, want[i])
		}
	}
}
