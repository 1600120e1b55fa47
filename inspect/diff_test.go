package inspect_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/zbrecover/zbrecover/inspect"
	"github.com/zbrecover/zbrecover/internal/fallback"
	"github.com/zbrecover/zbrecover/internal/memstat"
	sd "github.com/zbrecover/zbrecover/schemadiff"
	"github.com/zbrecover/zbrecover/storage"
)

// twoGroups is a report as Run returns it for files in two schemas.
func twoGroups() *inspect.Report {
	old := sd.NewSchema().Col("id", sd.LongType, sd.NotNull).Col("qty", sd.IntegerType).Col("legacy", sd.BooleanType)
	cur := sd.NewSchema().Col("id", sd.LongType, sd.NotNull).Col("qty", sd.LongType)
	return &inspect.Report{
		Root: "s3://bucket/orders", Prefix: fallback.Prefix,
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
		Root: "abfss://lake@acct.dfs.core.windows.net/orders?sig=REDACTED&sv=2024", Prefix: fallback.Prefix,
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
	rep.Diff(table, inspect.DiffOptions{TableName: "main.sales.orders", Dir: loc.Join(fallback.Prefix)})
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
	rep.Diff(table, inspect.DiffOptions{Dir: loc.Join(fallback.Prefix)})
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

// sharedGroups is a report of six one-file groups against a table of id and a … e: aaa and
// bbb lack four of its columns; ccc and ddd also have legacy, which the table does not have;
// eee and fff have four columns the table does not have, the same ones.
func sharedGroups() (*inspect.Report, *inspect.Table) {
	s := func(cols ...string) sd.Schema {
		out := sd.NewSchema().Col("id", sd.LongType, sd.NotNull)
		for _, c := range cols {
			if c == "legacy" {
				out = out.Col(c, sd.BooleanType)
			} else {
				out = out.Col(c, sd.StringType)
			}
		}
		return out
	}
	rep := &inspect.Report{Root: "s3://bucket/orders", Prefix: fallback.Prefix, Totals: inspect.Totals{Files: 6, Groups: 6}}
	for _, g := range []struct {
		id     string
		schema sd.Schema
	}{
		{"aaa", s("a")}, {"bbb", s("b")}, {"ccc", s("a", "legacy")}, {"ddd", s("b", "legacy")},
		{"eee", s("a", "b", "c", "d", "e", "p", "q", "r", "t")}, {"fff", s("a", "b", "c", "d", "e", "p", "q", "r", "t")},
	} {
		rep.Groups = append(rep.Groups, inspect.Group{SchemaID: g.id, Files: 1, Schema: g.schema})
	}
	return rep, inspect.NewTable(&sd.Table{Source: sd.SourceDelta, Schema: s("a", "b", "c", "d", "e")})
}

// TestReportDiffCountsOKChanges: ok changes are counted by kind with three examples, per group
// and over all groups; a list of changes that block another group lists already is named by
// reference; the text report shows the changes across groups once, with the groups that have
// them and the table changes their fixes suggest.
func TestReportDiffCountsOKChanges(t *testing.T) {
	rep, table := sharedGroups()
	rep.Diff(table, inspect.DiffOptions{})
	g := func(id string) *inspect.Group { return rep.Group(id) }

	aaa := g("aaa")
	if *aaa.Verdict != sd.OK || aaa.Changes == nil || len(aaa.Changes) != 0 || aaa.SameChangesAs != "" || aaa.Suggestion != nil {
		t.Errorf("aaa: verdict %v changes %v same as %q", aaa.Verdict, aaa.Changes, aaa.SameChangesAs)
	}
	if s := aaa.OKChanges; len(s) != 1 || s[0].Kind != sd.KindMissingInFile || s[0].Count != 4 ||
		s[0].Summary != "4 table columns the files lack, filled with NULL" || len(s[0].Examples) != 3 ||
		s[0].Examples[0].Path.String() != "b" || s[0].Examples[2].Path.String() != "d" || s[0].Examples[0].Reason == "" {
		t.Errorf("aaa ok changes %+v", s)
	}
	if all := aaa.AllChanges(); len(all) != 4 || all[3].Path.String() != "e" || all[3].Verdict != sd.OK {
		t.Errorf("aaa all changes %v", all)
	}
	ccc, ddd := g("ccc"), g("ddd")
	if len(ccc.Changes) != 1 || ccc.Changes[0].Path.String() != "legacy" || ccc.SameChangesAs != "" ||
		ddd.Changes != nil || ddd.SameChangesAs != "ccc" || !ddd.Blocks() || ddd.Suggestion == nil || len(ddd.OKChanges) != 1 {
		t.Errorf("ccc: %v %q; ddd: %v %q %v", ccc.Changes, ccc.SameChangesAs, ddd.Changes, ddd.SameChangesAs, ddd.Suggestion)
	}
	if fff := g("fff"); fff.SameChangesAs != "eee" || len(g("eee").Changes) != 4 || fff.OKChanges != nil {
		t.Errorf("fff: same as %q, eee changes %v, ok %v", fff.SameChangesAs, g("eee").Changes, fff.OKChanges)
	}
	want := "[{extra_in_file blocks 10 4 4 10 file columns the table does not have} " +
		"{missing_in_file ok 16 4 4 16 table columns the files lack, filled with NULL}]"
	var got []string
	for _, c := range rep.ChangeTotals {
		got = append(got, fmt.Sprintf("{%s %s %d %d %d %s}", c.Kind, c.Verdict, c.Changes, c.Groups, c.Files, c.Summary))
	}
	if s := "[" + strings.Join(got, " ") + "]"; s != want {
		t.Errorf("change totals %s, want %s", s, want)
	}

	var buf bytes.Buffer
	if err := rep.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	text := buf.String()
	for _, want := range []string{
		"\nChanges across the 6 schema groups:\n" +
			"  legacy: blocks: column legacy (boolean) is in the file but not in the table: COPY INTO with mergeSchema = false rejects the file (DELTA_METADATA_MISMATCH)\n" +
			"    in 2 groups (2 files): ccc, ddd\n" +
			"  p: blocks: column p (string) is in the file but not in the table: COPY INTO with mergeSchema = false rejects the file (DELTA_METADATA_MISMATCH)\n" +
			"    in 2 groups (2 files): eee, fff\n",
		"  ok: 16 table columns the files lack, filled with NULL, in 4 groups (4 files)\n" +
			"  Table changes the groups' fixes suggest (each group's fix below says what else it needs):\n" +
			"    2 groups: ALTER TABLE <table> ADD COLUMNS (`legacy` BOOLEAN);\n" +
			"    2 groups: ALTER TABLE <table> ADD COLUMNS (`p` STRING, `q` STRING, `r` STRING, `t` STRING);\n",
		"\nSchema aaa (1 file, first: )\n" +
			"  Against the table: ok: the files load as they are\n" +
			"    ok: 4 table columns the files lack, filled with NULL: b, c, d and 1 more (--all-changes lists them)\n",
		// A short shared list is repeated; a long one is named.
		"  Against the table: blocks: COPY INTO rejects these files until the table or the load changes\n" +
			"    legacy: blocks: column legacy (boolean) is in the file but not in the table",
		"    the same 4 changes that block or need a cast as schema eee, listed there: p, q, r and 1 more\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks\n%s\ngot:\n%s", want, text)
		}
	}
	if n := strings.Count(text, "is in the table but not in the file"); n != 0 {
		t.Errorf("%d ok changes listed one by one", n)
	}

	// --all-changes: every change of every group, each its own list.
	rep.Diff(table, inspect.DiffOptions{AllChanges: true})
	buf.Reset()
	if err := rep.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	text = buf.String()
	if n := strings.Count(text, "is in the table but not in the file: COPY INTO fills it with NULL\n"); n != 16 ||
		strings.Contains(text, "the same 4 changes") || strings.Count(text, "\n    p: blocks:") != 2 {
		t.Errorf("all changes: %d ok changes listed, want 16:\n%s", n, text)
	}
	var js bytes.Buffer
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Groups []struct {
			Changes       []json.RawMessage `json:"changes"`
			SameChangesAs string            `json:"same_changes_as"`
		} `json:"groups"`
	}
	if err := json.Unmarshal(js.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	for i, n := range []int{4, 4, 5, 5, 4, 4} {
		if g := doc.Groups[i]; len(g.Changes) != n || g.SameChangesAs != "" {
			t.Errorf("all changes, group %d: %d changes, same as %q; want %d", i, len(g.Changes), g.SameChangesAs, n)
		}
	}
}

// TestReportDiffRetainsNoChangePerTableColumn: after Diff, a report of 2,000 groups against a
// table 2,000 columns wider than their files holds a few examples per group, not the
// 3,998,000 changes (over a gigabyte of heap when each was kept).
func TestReportDiffRetainsNoChangePerTableColumn(t *testing.T) {
	const n = 2000
	table := sd.NewSchema().Col("id", sd.LongType, sd.NotNull)
	rep := &inspect.Report{Root: "s3://bucket/orders", Prefix: fallback.Prefix, Totals: inspect.Totals{Files: n, Groups: n}}
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("c_%04d", i)
		table = table.Col(name, sd.StringType)
		rep.Groups = append(rep.Groups, inspect.Group{SchemaID: fmt.Sprintf("%012x", i), Files: 1,
			Schema: sd.NewSchema().Col("id", sd.LongType, sd.NotNull).Col(name, sd.StringType)})
	}
	tbl := inspect.NewTable(&sd.Table{Source: sd.SourceDelta, Schema: table})
	before := memstat.LiveHeap()
	rep.Diff(tbl, inspect.DiffOptions{})
	retained := int64(memstat.LiveHeap()) - int64(before)
	runtime.KeepAlive(rep)
	runtime.KeepAlive(tbl)
	if retained > 16<<20 {
		t.Errorf("the diff retains %d MiB, want under 16 MiB", retained>>20)
	}
	t.Logf("the diff retains %d KiB for %d groups", retained>>10, n)
	if c := rep.ChangeTotals; len(c) != 1 || c[0].Changes != n*(n-1) || c[0].Groups != n {
		t.Errorf("change totals %+v", c)
	}
	for _, g := range rep.Groups {
		if len(g.OKChanges) != 1 || g.OKChanges[0].Count != n-1 || len(g.OKChanges[0].Examples) != inspect.MaxChangeExamples {
			t.Fatalf("group %s: ok changes %+v", g.SchemaID, g.OKChanges)
		}
	}
}

// TestAcrossGroupsIsBounded: the text section across groups shows at most 20 distinct changes
// and says how many more each group lists; --all-changes shows them all.
func TestAcrossGroupsIsBounded(t *testing.T) {
	table := sd.NewSchema().Col("id", sd.LongType, sd.NotNull)
	rep := &inspect.Report{Root: "s3://bucket/orders", Prefix: fallback.Prefix, Totals: inspect.Totals{Files: 25, Groups: 25}}
	for i := 0; i < 25; i++ {
		rep.Groups = append(rep.Groups, inspect.Group{SchemaID: fmt.Sprintf("g%02d", i), Files: 1,
			Schema: sd.NewSchema().Col("id", sd.LongType, sd.NotNull).Col(fmt.Sprintf("x%02d", i), sd.StringType)})
	}
	tbl := inspect.NewTable(&sd.Table{Source: sd.SourceDelta, Schema: table})
	for _, all := range []bool{false, true} {
		rep.Diff(tbl, inspect.DiffOptions{AllChanges: all})
		var buf bytes.Buffer
		if err := rep.WriteText(&buf); err != nil {
			t.Fatal(err)
		}
		across := buf.String()[strings.Index(buf.String(), "\nChanges across the 25 schema groups:"):]
		across = across[:strings.Index(across, "\nSchema g00")]
		shown, more := strings.Count(across, "\n    in 1 group (1 file): g"), strings.Contains(across, "\n  and 5 more distinct changes (blocking or needing a cast): each group lists its own\n")
		if all && (shown != 25 || more) || !all && (shown != 20 || !more) {
			t.Errorf("all changes %v: %d shown, more %v:\n%s", all, shown, more, across)
		}
		if all && strings.Contains(across, "    and ") || !all && !strings.Contains(across, "    and 5 more statements\n") {
			t.Errorf("all changes %v: table changes:\n%s", all, across)
		}
	}
}
