package databricks

import (
	"errors"
	"strings"
	"testing"

	"github.com/databricks/databricks-sdk-go/service/catalog"
	"github.com/zbrecover/zbrecover/storage"
)

func TestParseTableName(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    TableName
		wantSQL string
		wantErr string
	}{
		{in: "main.sales.orders", want: TableName{"main", "sales", "orders"}, wantSQL: "`main`.`sales`.`orders`"},
		{in: " `main`.sales.`my-orders` ", want: TableName{"main", "sales", "my-orders"}, wantSQL: "`main`.`sales`.`my-orders`"},
		{in: "`we``ird`.s.t", want: TableName{"we`ird", "s", "t"}, wantSQL: "`we``ird`.`s`.`t`"},
		{in: "`ünï`.s.t", want: TableName{"ünï", "s", "t"}, wantSQL: "`ünï`.`s`.`t`"},
		{in: "sales.orders", wantErr: "three parts"},
		{in: "a.b.c.d", wantErr: "three parts"},
		{in: "a..c", wantErr: "empty"},
		{in: "`a.b`.c.d", wantErr: "cannot contain"},
		{in: "`a b`.c.d", wantErr: "cannot contain"},
		{in: "`a/b`.c.d", wantErr: "cannot contain"},
		{in: "`abc.d.e", wantErr: "unterminated"},
		{in: "`a`x.b.c", wantErr: "after a quoted name"},
		{in: "a`b`.c.d", wantErr: "unexpected backquote"},
		{in: "main.sales.orders`", wantErr: "unexpected backquote"},
		{in: "main.sales.or``ders", wantErr: "unexpected backquote"},
		{in: "main.sales.or`ders", want: TableName{"main", "sales", "or`ders"}, wantSQL: "`main`.`sales`.`or``ders`"},
		{in: "m`a`in.s`a.t`t", want: TableName{"m`a`in", "s`a", "t`t"}, wantSQL: "`m``a``in`.`s``a`.`t``t`"},
		{in: "main.sales.`or``ders`", want: TableName{"main", "sales", "or`ders"}, wantSQL: "`main`.`sales`.`or``ders`"},
		{in: "`a``b```.c.d", want: TableName{"a`b`", "c", "d"}, wantSQL: "`a``b```.`c`.`d`"},
		{in: "`a`b.c.d", wantErr: "after a quoted name"},
		{in: "", wantErr: "three parts"},
	} {
		got, err := ParseTableName(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%q: err = %v, want %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		if got != tc.want || got.SQL() != tc.wantSQL {
			t.Errorf("%q = %+v %s, want %+v %s", tc.in, got, got.SQL(), tc.want, tc.wantSQL)
		}
		// Both spellings of the name parse back to it (String's, when no part starts or ends
		// with a backquote).
		spellings := []string{got.SQL()}
		if !strings.ContainsAny(got.Catalog[:1]+got.Catalog[len(got.Catalog)-1:]+got.Schema[:1]+got.Schema[len(got.Schema)-1:]+
			got.Table[:1]+got.Table[len(got.Table)-1:], "`") {
			spellings = append(spellings, got.String())
		}
		for _, again := range spellings {
			if back, err := ParseTableName(again); err != nil || back != got {
				t.Errorf("%q: %q parses to %+v, %v", tc.in, again, back, err)
			}
		}
	}
}

func TestSchemaFromUCColumns(t *testing.T) {
	for _, tc := range []struct {
		json    string
		want    string // Type.String()
		null    bool
		wantErr string
	}{
		{json: `{"name":"a","type":"integer","nullable":true,"metadata":{}}`, want: "int", null: true},
		{json: `{"name":"a","type":"long","nullable":false,"metadata":{}}`, want: "bigint"},
		{json: `{"name":"a","type":"decimal(10,0)","nullable":true}`, want: "decimal(10,0)", null: true},
		{json: `{"name":"a","type":"timestamp_ntz","nullable":true}`, want: "timestamp_ntz", null: true},
		{json: `{"name":"a","type":{"type":"array","elementType":{"type":"struct","fields":[{"name":"x","type":"double","nullable":false,"metadata":{}}]},"containsNull":false},"nullable":true}`,
			want: "array<struct<x:double NOT NULL>>", null: true},
		{json: `{"name":"a","type":{"type":"map","keyType":"string","valueType":"binary","valueContainsNull":true},"nullable":true}`,
			want: "map<string,binary>", null: true},
		{json: `{"name":"a","type":"interval year to month","nullable":true}`, wantErr: "interval"},
		{json: `not json`, wantErr: "column a"},
		{json: ``, wantErr: "no type_json"},
	} {
		s, err := SchemaFromUC([]catalog.ColumnInfo{{Name: "a", TypeJson: tc.json}})
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: err = %v, want %q", tc.json, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.json, err)
			continue
		}
		if f := s.Fields[0]; f.Type.String() != tc.want || f.Nullable != tc.null {
			t.Errorf("%s = %s nullable=%v, want %s nullable=%v", tc.json, f.Type, f.Nullable, tc.want, tc.null)
		}
	}
	// Columns come in position order, whatever order the API lists them in.
	s, err := SchemaFromUC([]catalog.ColumnInfo{
		{Name: "b", Position: 1, TypeJson: `{"name":"b","type":"string","nullable":true,"metadata":{}}`},
		{Name: "a", Position: 0, TypeJson: `{"name":"a","type":"long","nullable":true,"metadata":{}}`},
	})
	if err != nil || s.Fields[0].Name != "a" || s.Fields[1].Name != "b" {
		t.Errorf("order: %+v, %v", s.Fields, err)
	}
}

func TestDescribeFromJSON(t *testing.T) {
	doc := `{"table_name":"orders","catalog_name":"main","schema_name":"sales","namespace":["sales"],
	"type":"MANAGED","provider":"delta","location":"s3://lake/tables/orders",
	"columns":[
	 {"name":"id","type":{"name":"bigint"},"nullable":false},
	 {"name":"n","type":{"name":"integer"},"nullable":true},
	 {"name":"amount","type":{"name":"decimal","precision":18,"scale":2},"nullable":true},
	 {"name":"at","type":{"name":"timestamp_ltz"},"nullable":true},
	 {"name":"local_at","type":{"name":"timestamp_ntz"},"nullable":true},
	 {"name":"m","type":{"name":"map","key_type":{"name":"string"},"value_type":{"name":"int"},"value_nullable":false},"nullable":true},
	 {"name":"addr","type":{"name":"struct","fields":[{"name":"city","type":{"name":"string"},"nullable":true},{"name":"zip","type":{"name":"int"},"nullable":false}]},"nullable":true}
	],
	"table_properties":{"delta.minReaderVersion":"1"}}`
	tn := TableName{"main", "sales", "orders"}
	d, err := describeFromJSON(tn, []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if d.StorageLocation != "s3://lake/tables/orders" || d.TableType != "MANAGED" || d.Name != tn {
		t.Errorf("description %+v", d)
	}
	want := []string{"id bigint NOT NULL", "n int", "amount decimal(18,2)", "at timestamp", "local_at timestamp_ntz",
		"m map<string,int>", "addr struct<city:string,zip:int NOT NULL>"}
	if len(d.Schema.Fields) != len(want) {
		t.Fatalf("%d fields, want %d", len(d.Schema.Fields), len(want))
	}
	for i, f := range d.Schema.Fields {
		got := f.Name + " " + f.Type.String()
		if !f.Nullable {
			got += " NOT NULL"
		}
		if got != want[i] {
			t.Errorf("field %d = %q, want %q", i, got, want[i])
		}
	}
	if _, err := describeFromJSON(tn, []byte(`{"columns":[{"name":"i","type":{"name":"interval","start_unit":"day","end_unit":"second"}}]}`)); err == nil ||
		!strings.Contains(err.Error(), "interval") {
		t.Errorf("interval: err = %v", err)
	}
	if _, err := describeFromJSON(tn, []byte(`{"columns":[]}`)); err == nil {
		t.Errorf("no columns accepted")
	}
}

func TestChooseStorageAuth(t *testing.T) {
	s3, _ := storage.Parse("s3://lake/tables/orders")
	gs, _ := storage.Parse("gs://lake/t")
	az, _ := storage.Parse("abfss://c@acct.dfs.core.windows.net/t")
	azSAS, _ := storage.Parse("abfss://c@acct.dfs.core.windows.net/t?sv=1&sig=abc")
	local, _ := storage.Parse("/tmp/x")
	env := func(vars map[string]string, files ...string) Env {
		return Env{
			Getenv: func(k string) string { return vars[k] },
			Exists: func(p string) bool {
				for _, f := range files {
					if f == p {
						return true
					}
				}
				return false
			},
			Home: "/home/op",
		}
	}
	empty := env(nil)
	for _, tc := range []struct {
		name     string
		mode     StorageAuth
		table    bool
		loc      storage.Location
		env      Env
		wantVend bool
		wantErr  string
		wantWhy  string
	}{
		{name: "auto, table, nothing configured", mode: StorageAuthAuto, table: true, loc: s3, env: empty, wantVend: true, wantWhy: "no s3 credentials"},
		{name: "auto, no table", mode: StorageAuthAuto, loc: s3, env: empty, wantWhy: "no table name"},
		{name: "auto, AWS keys", mode: StorageAuthAuto, table: true, loc: s3, env: env(map[string]string{"AWS_ACCESS_KEY_ID": "x"}), wantWhy: "AWS_ACCESS_KEY_ID"},
		{name: "auto, AWS profile", mode: StorageAuthAuto, table: true, loc: s3, env: env(map[string]string{"AWS_PROFILE": "p"}), wantWhy: "AWS_PROFILE"},
		{name: "auto, shared credentials file", mode: StorageAuthAuto, table: true, loc: s3, env: env(nil, "/home/op/.aws/credentials"), wantWhy: ".aws/credentials"},
		{name: "auto, AWS keys do not count for gs", mode: StorageAuthAuto, table: true, loc: gs, env: env(map[string]string{"AWS_ACCESS_KEY_ID": "x"}), wantVend: true},
		{name: "auto, gcloud ADC", mode: StorageAuthAuto, table: true, loc: gs, env: env(nil, "/home/op/.config/gcloud/application_default_credentials.json"), wantWhy: "application_default_credentials"},
		{name: "auto, GOOGLE_APPLICATION_CREDENTIALS", mode: StorageAuthAuto, table: true, loc: gs, env: env(map[string]string{"GOOGLE_APPLICATION_CREDENTIALS": "/k.json"})},
		{name: "auto, azure account key", mode: StorageAuthAuto, table: true, loc: az, env: env(map[string]string{"AZURE_STORAGE_KEY": "k"})},
		{name: "auto, azure nothing", mode: StorageAuthAuto, table: true, loc: az, env: empty, wantVend: true},
		{name: "auto, azure SAS in URL", mode: StorageAuthAuto, table: true, loc: azSAS, env: empty, wantWhy: "SAS"},
		{name: "auto, local", mode: StorageAuthAuto, table: true, loc: local, env: empty},
		{name: "vended", mode: StorageAuthVended, table: true, loc: s3, env: env(map[string]string{"AWS_ACCESS_KEY_ID": "x"}), wantVend: true},
		{name: "vended without table", mode: StorageAuthVended, loc: s3, env: empty, wantErr: "needs --table"},
		{name: "vended local", mode: StorageAuthVended, table: true, loc: local, env: empty, wantErr: "local path"},
		{name: "default", mode: StorageAuthDefault, table: true, loc: s3, env: empty},
	} {
		vend, why, err := ChooseStorageAuth(tc.mode, tc.table, tc.loc, tc.env)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: err = %v, want %q", tc.name, err, tc.wantErr)
			}
			continue
		}
		if err != nil || vend != tc.wantVend || !strings.Contains(why, tc.wantWhy) {
			t.Errorf("%s: vend=%v why=%q err=%v; want vend=%v why~%q", tc.name, vend, why, err, tc.wantVend, tc.wantWhy)
		}
	}
	for in, want := range map[string]StorageAuth{"": StorageAuthAuto, "AUTO": StorageAuthAuto, "vended": StorageAuthVended, "default": StorageAuthDefault} {
		if got, err := ParseStorageAuth(in); err != nil || got != want {
			t.Errorf("ParseStorageAuth(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := ParseStorageAuth("keys"); err == nil {
		t.Errorf("ParseStorageAuth accepted keys")
	}
}

func TestUserAgentVersion(t *testing.T) {
	for in, want := range map[string]string{
		"v1.2.3": "1.2.3", "1.2.3-rc.1": "1.2.3-rc.1", "dev": "0.0.0-dev", "": "0.0.0-dev",
		"(devel)": "0.0.0-devel", "...": "0.0.0-dev", "1.2": "0.0.0-1-2", "v1.2.3-4-gabcdef": "1.2.3-4-gabcdef",
	} {
		if got := userAgentVersion(in); got != want {
			t.Errorf("userAgentVersion(%q) = %q, want %q", in, got, want)
		}
		if !semver.MatchString(userAgentVersion(in)) {
			t.Errorf("userAgentVersion(%q) is not semver", in)
		}
	}
}

// TestCheckZerobusTarget: Zerobus Ingest writes only to Unity Catalog managed Delta tables, so a
// view, a table in another format or an external table has no fallback files. Both table
// sources (Unity Catalog and DESCRIBE … AS JSON) refuse them the same way, naming what was found.
func TestCheckZerobusTarget(t *testing.T) {
	tn := TableName{"main", "sales", "t"}
	cases := []struct {
		typ, format, location string
		wantWords             []string // empty: accepted
	}{
		{"MANAGED", "DELTA", "s3://lake/t", nil},
		{"MANAGED", "delta", "s3://lake/t", nil},
		{"", "", "s3://lake/t", nil}, // not reported: let the storage answer
		{"VIEW", "", "", []string{"main.sales.t", "view"}},
		{"MATERIALIZED_VIEW", "", "", []string{"materialized view"}},
		{"EXTERNAL", "CSV", "s3://lake/t", []string{"CSV", "Delta"}},
		{"EXTERNAL", "DELTA", "s3://lake/t", []string{"external", "managed", "URL"}},
		{"STREAMING_TABLE", "DELTA", "s3://lake/t", []string{"streaming table", "managed"}},
		{"MANAGED", "DELTA", "", []string{"no storage location"}},
	}
	for _, c := range cases {
		for _, src := range []string{"uc", "describe"} {
			var err error
			if src == "uc" {
				ti := &TableInfo{Name: tn, TableType: c.typ, DataSourceFormat: c.format, StorageLocation: c.location}
				err = ti.CheckRecoverable()
			} else {
				d := &TableInfo{Name: tn, TableType: c.typ, DataSourceFormat: strings.ToLower(c.format), StorageLocation: c.location}
				err = d.CheckRecoverable()
			}
			if len(c.wantWords) == 0 {
				if err != nil {
					t.Errorf("%s %s/%s: %v", src, c.typ, c.format, err)
				}
				continue
			}
			if !errors.Is(err, ErrUnsupported) {
				t.Errorf("%s %s/%s: err = %v, want ErrUnsupported", src, c.typ, c.format, err)
				continue
			}
			for _, w := range c.wantWords {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%s %s/%s: %q does not say %q", src, c.typ, c.format, err, w)
				}
			}
		}
	}
}

func TestSplitNameAndQuoted(t *testing.T) {
	for in, want := range map[string][]string{
		"main":              {"main"},
		"main.sales":        {"main", "sales"},
		"`my-cat`.`a``b`":   {"my-cat", "a`b"},
		" main.ventes_été ": {"main", "ventes_été"},
	} {
		got, err := SplitName(in)
		if err != nil || strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("SplitName(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "main.", "a b", "`x", "main.`s`x"} {
		if _, err := SplitName(bad); err == nil {
			t.Errorf("SplitName(%q) accepted", bad)
		}
	}
	n := TableName{Catalog: "main", Schema: "a`b", Table: "my-t"}
	back, err := ParseTableName(n.Quoted())
	if n.Quoted() != "main.`a``b`.my-t" || err != nil || back != n {
		t.Errorf("Quoted() = %q, read back as %+v, %v", n.Quoted(), back, err)
	}
}

// TestTableNameFromString: every name String writes reads back, backquotes anywhere in a part
// included (the journal records String's spelling).
func TestTableNameFromString(t *testing.T) {
	for _, n := range []TableName{{"main", "sales", "orders"}, {"main", "sales", "`orders"}, {"ma`in", "sales", "orders`"}, {"main", "s``", "`o`"}} {
		got, err := TableNameFromString(n.String())
		if err != nil || got != n {
			t.Errorf("%q: %+v, %v", n.String(), got, err)
		}
	}
	for _, bad := range []string{"main.sales", "a.b.c.d", "main..orders", "main.sales.or ders"} {
		if _, err := TableNameFromString(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
