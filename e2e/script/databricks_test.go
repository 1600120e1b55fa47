package script

import (
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/rogpeppe/go-internal/testscript"
	"github.com/zbrecover/zbrecover/databricks/uctest"
	"github.com/zbrecover/zbrecover/delta/deltatest"
	"github.com/zbrecover/zbrecover/internal/pqgen"
	sd "github.com/zbrecover/zbrecover/schemadiff"
	"github.com/zbrecover/zbrecover/storage/s3/s3test"
)

// The workspace token the fake Unity Catalog accepts, and the credentials it vends.
const (
	scriptUCToken      = "dapi5c71b7e55c0f0e0b9aa7f1e4a0c8d2e1"
	scriptVendedKeyID  = "AKIAVENDEDBYUNITYCAT"
	scriptVendedSecret = "vended/secret+access-key-for-the-scripts"
	scriptVendedToken  = "vended-session-token-for-the-scripts"
)

// akidLog forwards to the S3 emulator and records the access key id that signed each request.
type akidLog struct {
	next http.Handler
	mu   sync.Mutex
	seen map[string]int
}

var sigV4Credential = regexp.MustCompile(`Credential=([^/]+)/`)

func (a *akidLog) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := "(unsigned)"
	if m := sigV4Credential.FindStringSubmatch(r.Header.Get("Authorization")); m != nil {
		id = m[1]
	}
	a.mu.Lock()
	a.seen[id]++
	a.mu.Unlock()
	a.next.ServeHTTP(w, r)
}

func (a *akidLog) ids() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []string
	for id := range a.seen {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}

// TestScriptsDatabricks runs the scenarios of testdata/script/databricks against a fake Unity
// Catalog workspace and the S3 emulator: tables named catalog.schema.table are resolved through
// Unity Catalog and their storage is reached with the credentials it vends.
func TestScriptsDatabricks(t *testing.T) {
	uc := uctest.New(scriptUCToken)
	t.Cleanup(uc.Close)
	s3 := s3test.NewServer(t)
	target, _ := url.Parse(s3.URL)
	akids := &akidLog{next: httputil.NewSingleHostReverseProxy(target), seen: map[string]int{}}
	front := httptest.NewServer(akids)
	t.Cleanup(front.Close)

	// main.sales.orders: a Delta table in S3 with two fallback files written before a column
	// was added.
	v0 := sd.NewSchema().Col("id", sd.LongType, sd.NotNull).Col("customer", sd.StringType).Col("amount", sd.DecimalType(12, 2))
	v1 := v0.Col("channel", sd.StringType)
	logDir := t.TempDir()
	if _, err := deltatest.Write(logDir, deltatest.Table{Schema: v0, Later: []sd.Schema{v1}}); err != nil {
		t.Fatal(err)
	}
	err := filepath.WalkDir(logDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(logDir, p)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return s3.Put("tables/orders/"+filepath.ToSlash(rel), data)
	})
	if err != nil {
		t.Fatal(err)
	}
	fileSchema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "customer", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "amount", Type: &arrow.Decimal128Type{Precision: 12, Scale: 2}, Nullable: true},
	}, nil)
	for i, rows := range []string{
		`[{"id":1,"customer":"ada","amount":"12.30"},{"id":2,"customer":"bob","amount":"7.00"}]`,
		`[{"id":3,"customer":"cy","amount":"1.50"},{"id":4,"customer":null,"amount":null},{"id":5,"customer":"di","amount":"9.99"}]`,
	} {
		data := pqgen.Must(pqgen.Bytes(fileSchema, rows, pqgen.Options{}))
		key := fmt.Sprintf("tables/orders/_zerobus/table_rejected_parquets/part-%05d.parquet", i)
		if err := s3.Put(key, data); err != nil {
			t.Fatal(err)
		}
	}
	uc.AddTable(uctest.Table{Catalog: "main", Schema: "sales", Name: "orders",
		StorageLocation: s3.URLFor("tables/orders"), Columns: uctest.ColumnsFromSchema(v1)})
	uc.SetCredentials("main.sales.orders", uctest.Credentials{
		AWSAccessKeyID: scriptVendedKeyID, AWSSecretAccessKey: scriptVendedSecret, AWSSessionToken: scriptVendedToken,
	})
	// main.sales.locked: the identity may read its metadata but not get its storage credentials.
	uc.AddTable(uctest.Table{Catalog: "main", Schema: "sales", Name: "locked",
		StorageLocation: s3.URLFor("tables/locked"), Columns: uctest.ColumnsFromSchema(v0)})
	uc.DenyVending("main.sales.locked")

	// The SQL warehouse, behind the same host: main.sales.orders with the schema of version 1.
	whURL, whExec, haveWarehouse := startScriptWarehouse(t, scriptUCToken)
	if haveWarehouse {
		if err := uc.RouteSQL(whURL); err != nil {
			t.Fatal(err)
		}
		for _, stmt := range []string{
			"CREATE SCHEMA main.sales",
			"CREATE TABLE main.sales.orders (id BIGINT NOT NULL, customer STRING, amount DECIMAL(12,2), channel STRING) USING DELTA",
		} {
			if err := whExec(stmt); err != nil {
				t.Fatal(err)
			}
		}
	}

	cmds := map[string]func(ts *testscript.TestScript, neg bool, args []string){
		// s3akids ID...: the emulator saw requests signed with exactly these access key ids.
		"s3akids": func(ts *testscript.TestScript, neg bool, args []string) {
			got := strings.Join(akids.ids(), " ")
			want := strings.Join(args, " ")
			if (got == want) == neg {
				ts.Fatalf("S3 requests were signed with [%s], want [%s]", got, want)
			}
		},
	}
	for k, v := range scriptCmds {
		cmds[k] = v
	}
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script/databricks",
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		Setup: func(env *testscript.Env) error {
			env.Setenv("CI", os.Getenv("CI"))
			env.Setenv("HOME", env.WorkDir)
			env.Setenv("UC_HOST", uc.URL)
			env.Setenv("UC_TOKEN", scriptUCToken)
			env.Setenv("S3_ENDPOINT", front.URL)
			env.Setenv("S3_REGION", s3test.Region)
			env.Setenv("VENDED_SECRET", scriptVendedSecret)
			env.Setenv("VENDED_TOKEN", scriptVendedToken)
			// A ~/.databrickscfg with one profile for the fake workspace, for --profile.
			cfg := "[staging]\nhost = " + uc.URL + "\ntoken = " + scriptUCToken + "\n"
			return os.WriteFile(filepath.Join(env.WorkDir, ".databrickscfg"), []byte(cfg), 0o600)
		},
		Cmds: cmds,
		Condition: func(cond string) (bool, error) {
			if cond == "warehouse" {
				return haveWarehouse, nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
	})
}
