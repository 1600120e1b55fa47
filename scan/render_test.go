package scan

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/zbrecover/zbrecover/databricks"
	"github.com/zbrecover/zbrecover/internal/redact"
	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/storage/mem"
	"github.com/zbrecover/zbrecover/storage/mock"
)

const secret = "sv=2024&sig=scanTestSecretSignature0123456789"

// hostileReport scans a catalog whose names and errors hold terminal escapes, the Markdown
// column separator, backquotes and a registered secret.
func hostileReport(t *testing.T) *Report {
	t.Helper()
	redact.Register(secret)
	cat := newCatalog()
	rs := roots{}
	cat.add("main", "sales", "orders")
	b := mem.New()
	b.Set(fb+"2026-02-28/p0.parquet", make([]byte, 2048), t0.Add(-48*time.Hour))
	b.Set(fb+"2026-02-28/p1.parquet", make([]byte, 1024), t0.Add(-47*time.Hour))
	rs["s3://lake/main/sales/orders"] = b
	cat.add("main", "sales", "x\x1b[2Jy|z`q")
	e := cat.tables["main.sales"][1]
	rs[e.StorageLocation] = &mock.Backend{
		LocationFn: func() string { return e.StorageLocation },
		ListFn: func(context.Context, string, func(storage.ObjectInfo) error) error {
			return errors.New("list failed | with " + secret + " and \x1b]0;title\x07")
		},
	}
	cat.add("main", "sales", "calm")
	rs["s3://lake/main/sales/calm"] = mem.New()
	cat.add("main", "sales", "v", func(e *databricks.TableEntry) { e.TableType = "VIEW" })
	rep, err := Run(context.Background(), cat, rs.open, Options{Scope: Scope{Catalog: "main"}, Now: func() time.Time { return t0 }})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func TestWriteText(t *testing.T) {
	rep := hostileReport(t)
	var b bytes.Buffer
	if err := rep.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"Scope:   catalog main\n",
		"Tables:  3 tables scanned: 1 with parked files, 1 clean, 1 unreadable; 1 skipped, not a managed Delta table (1 view)",
		"Files:   2 fallback files, 3.0 KiB in fallback folders\n",
		"Tables with parked files: 1\n",
		"main.sales.orders  2      3.0 KiB  2026-02-27T12:00:00Z  2026-02-27T13:00:00Z  1",
		"  zbrecover inspect --table main.sales.orders\n",
		"Unreadable tables: 1\n",
		`"main.sales.` + "`x\\x1b[2Jy|z``q`" + `": list failed | with REDACTED and \x1b]0;title\a`,
		"    zbrecover doctor --table 'main.sales.`x\\x1b[2Jy|z``q`'",
		"1 table clean (no parked files).",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
	if strings.ContainsAny(out, "\x1b\x07") || strings.Contains(out, "scanTestSecret") {
		t.Errorf("control bytes or the secret in the text:\n%q", out)
	}
}

func TestWriteMarkdown(t *testing.T) {
	rep := hostileReport(t)
	var b bytes.Buffer
	if err := rep.WriteMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"**Tables with parked files (1):**\n\n| table | files | size | oldest | newest | date folders | next |\n",
		"| `main.sales.orders` | 2 | 3.0 KiB | 2026-02-27T12:00:00Z | 2026-02-27T13:00:00Z | 1 | `zbrecover inspect --table main.sales.orders` |\n",
		"**Unreadable tables (1):**",
		"| ``` main.sales.`x\\x1b[2Jy\\|z``q` ``` | list failed \\| with REDACTED and \\x1b]0;title\\a | ``` zbrecover doctor --table 'main.sales.`x\\x1b[2Jy\\|z``q`' ``` |\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("Markdown lacks %q:\n%s", want, out)
		}
	}
	if strings.ContainsAny(out, "\x1b\x07") || strings.Contains(out, "scanTestSecret") {
		t.Errorf("control bytes or the secret in the Markdown:\n%q", out)
	}
}

func TestWriteJSONAndLines(t *testing.T) {
	rep := hostileReport(t)
	var b bytes.Buffer
	if err := rep.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(b.String(), "{\n  \"schema_version\": 2,\n") || strings.Contains(b.String(), "scanTestSecret") {
		t.Errorf("document:\n%s", b.String())
	}
	var doc struct {
		Scope  string  `json:"scope"`
		Tables []Table `json:"tables"`
		Totals Totals  `json:"totals"`
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Scope != "main" || len(doc.Tables) != 3 || doc.Tables[0].Status != Parked || doc.Tables[0].Bytes != 3072 ||
		doc.Tables[1].Status != Unreadable || doc.Tables[1].Name != "main.sales.`x\x1b[2Jy|z``q`" || doc.Totals.SkippedKinds["view"] != 1 {
		t.Errorf("decoded %+v", doc)
	}

	var lines bytes.Buffer
	jl := NewJSONLines(&lines)
	if err := jl.Header(Options{Scope: Scope{Catalog: "main"}, MinAge: time.Minute}, t0); err != nil {
		t.Fatal(err)
	}
	for _, tb := range rep.Tables {
		if err := jl.Table(tb); err != nil {
			t.Fatal(err)
		}
		// Each line is on w as soon as it is written.
		if !bytes.HasSuffix(lines.Bytes(), []byte("}\n")) {
			t.Fatalf("line not flushed: %q", lines.String())
		}
	}
	if err := jl.Unlisted(Unlisted{Catalog: "main", Schema: "hr", Error: "denied"}); err != nil {
		t.Fatal(err)
	}
	if err := jl.Totals(rep); err != nil {
		t.Fatal(err)
	}
	var kinds []string
	sc := bufio.NewScanner(&lines)
	for sc.Scan() {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil || len(m) != 1 {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		for k, v := range m {
			kinds = append(kinds, k)
			if k == "scan" && !strings.Contains(string(v), `"schema_version":2,"scope":"main","prefix":"_zerobus/table_rejected_parquets/","min_age":"1m0s"`) {
				t.Errorf("header %s", v)
			}
			if k == "totals" && !strings.Contains(string(v), `"scanned":3`) {
				t.Errorf("totals %s", v)
			}
		}
	}
	if strings.Join(kinds, ",") != "scan,table,table,table,unlisted,totals" {
		t.Errorf("lines %q", kinds)
	}
}
