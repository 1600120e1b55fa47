package workspace_test

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	sdk "github.com/databricks/databricks-sdk-go"
	"github.com/databricks/databricks-sdk-go/apierr"
	"github.com/databricks/databricks-sdk-go/service/catalog"
	"github.com/databricks/databricks-sdk-go/service/files"
	_ "github.com/databricks/databricks-sql-go"
	"github.com/databricks/databricks-sql-go/logger"

	"github.com/zbrecover/zbrecover/delta/deltatest"
	"github.com/zbrecover/zbrecover/internal/fake/workspace"
	"github.com/zbrecover/zbrecover/internal/pqgen"
	sd "github.com/zbrecover/zbrecover/schemadiff"
)

func TestMain(m *testing.M) {
	_ = logger.SetLogLevel("disabled")
	os.Exit(m.Run())
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// ordersRoot writes a Delta table root with two versions (a column added) and returns it.
func ordersRoot(t *testing.T) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "orders")
	v0 := sd.NewSchema().Col("id", sd.LongType, sd.NotNull).Col("customer", sd.StringType).Col("amount", sd.DecimalType(12, 2))
	if _, err := deltatest.Write(root, deltatest.Table{Schema: v0, Later: []sd.Schema{v0.Col("channel", sd.StringType)}}); err != nil {
		t.Fatal(err)
	}
	return root
}

func start(t *testing.T, opts workspace.Options) *workspace.Workspace {
	t.Helper()
	ws, err := workspace.Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ws.Close() })
	return ws
}

func sdkClient(t *testing.T, ws *workspace.Workspace) *sdk.WorkspaceClient {
	t.Helper()
	w, err := sdk.NewWorkspaceClient(&sdk.Config{Host: ws.URL(), Token: ws.Token(), Credentials: nil})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func openSQL(t *testing.T, ws *workspace.Workspace) *sql.DB {
	t.Helper()
	db, err := sql.Open("databricks", ws.Warehouse().DSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// TestRegisteredTableThroughUnityCatalogAndWarehouse: a registered Delta root is a table of
// the warehouse and of Unity Catalog, with the schema of its log; a managed table's root
// refuses path reads, an external one's does not.
func TestRegisteredTableThroughUnityCatalogAndWarehouse(t *testing.T) {
	var logBuf bytes.Buffer
	ws := start(t, workspace.Options{StatementLog: &syncWriter{w: &logBuf}})
	managed, external := ordersRoot(t), ordersRoot(t)
	if err := ws.RegisterTable(ctx(t), "main.sales.orders", managed, true); err != nil {
		t.Fatal(err)
	}
	if err := ws.RegisterTable(ctx(t), "main.sales.ext", external, false); err != nil {
		t.Fatal(err)
	}
	w := sdkClient(t, ws)
	info, err := w.Tables.Get(ctx(t), catalog.GetTableRequest{FullName: "main.sales.orders"})
	if err != nil {
		t.Fatal(err)
	}
	if info.TableType != catalog.TableTypeManaged || len(info.Columns) != 4 || info.Columns[3].Name != "channel" ||
		!strings.HasSuffix(info.StorageLocation, "/orders") {
		t.Errorf("Tables.Get = %+v", info)
	}
	if info, err := w.Tables.Get(ctx(t), catalog.GetTableRequest{FullName: "main.sales.ext"}); err != nil || info.TableType != catalog.TableTypeExternal {
		t.Errorf("external table: %+v %v", info, err)
	}
	db := openSQL(t, ws)
	// The warehouse's DDL is seen by Unity Catalog.
	if _, err := db.ExecContext(ctx(t), "ALTER TABLE main.sales.orders ADD COLUMNS (note STRING)"); err != nil {
		t.Fatal(err)
	}
	if info, err := w.Tables.Get(ctx(t), catalog.GetTableRequest{FullName: "main.sales.orders"}); err != nil || len(info.Columns) != 5 {
		t.Errorf("after ALTER: %+v %v", info, err)
	}
	// The commit continued the table's own log: version 2 follows the two it had.
	if _, err := os.Stat(filepath.Join(managed, "_delta_log", "00000000000000000002.json")); err != nil {
		t.Errorf("the ALTER did not continue the log: %v", err)
	}
	sc := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "customer", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	for _, root := range []string{managed, external} {
		if err := pqgen.WriteFile(filepath.Join(root, "_zerobus", "table_rejected_parquets", "f1.parquet"),
			pqgen.Must(pqgen.Bytes(sc, `[{"id":1,"customer":"ada"}]`, pqgen.Options{}))); err != nil {
			t.Fatal(err)
		}
	}
	_, err = db.ExecContext(ctx(t), "COPY INTO main.sales.orders FROM '"+managed+"/_zerobus/table_rejected_parquets' FILEFORMAT = PARQUET")
	if err == nil || !strings.Contains(err.Error(), "LOCATION_OVERLAP") {
		t.Errorf("COPY INTO from the managed root: %v, want LOCATION_OVERLAP", err)
	}
	if _, err := db.ExecContext(ctx(t), "COPY INTO main.sales.ext FROM '"+external+"/_zerobus/table_rejected_parquets' FILEFORMAT = PARQUET"); err != nil {
		t.Errorf("COPY INTO from the external root: %v", err)
	}
	// The statement log: one JSON line per statement, with its outcome.
	var entries []workspace.LogEntry
	s := bufio.NewScanner(strings.NewReader(logBuf.String()))
	for s.Scan() {
		var e workspace.LogEntry
		if err := json.Unmarshal(s.Bytes(), &e); err != nil {
			t.Fatalf("log line %q: %v", s.Text(), err)
		}
		entries = append(entries, e)
	}
	var refused, loaded bool
	for _, e := range entries {
		if strings.Contains(e.Statement, "COPY INTO main.sales.orders") && e.Outcome == "ERROR" && e.ErrorClass == "INVALID_PARAMETER_VALUE.LOCATION_OVERLAP" {
			refused = true
		}
		if strings.Contains(e.Statement, "COPY INTO main.sales.ext") && e.Outcome == "FINISHED" && e.Rows == 1 {
			loaded = true
		}
	}
	if !refused || !loaded {
		t.Errorf("statement log = %+v", entries)
	}
	// Wrong token: 401 on every API.
	bad, _ := sdk.NewWorkspaceClient(&sdk.Config{Host: ws.URL(), Token: "wrong"})
	if _, err := bad.Tables.Get(ctx(t), catalog.GetTableRequest{FullName: "main.sales.orders"}); err == nil {
		t.Error("a wrong token was accepted")
	}
}

// TestFilesAPIOnVolumes: the SDK's Files client uploads, reads, lists and deletes in a volume,
// and COPY INTO loads from it.
func TestFilesAPIOnVolumes(t *testing.T) {
	ws := start(t, workspace.Options{})
	if err := ws.RegisterTable(ctx(t), "main.sales.orders", ordersRoot(t), true); err != nil {
		t.Fatal(err)
	}
	w := sdkClient(t, ws)
	sc := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "customer", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	data := pqgen.Must(pqgen.Bytes(sc, `[{"id":1,"customer":"ada"},{"id":2,"customer":"bob"}]`, pqgen.Options{}))
	const p = "/Volumes/main/sales/staging/run1/f1.parquet"
	if err := w.Files.Upload(ctx(t), files.UploadRequest{FilePath: p, Contents: io.NopCloser(bytes.NewReader(data))}); err != nil {
		t.Fatal(err)
	}
	err := w.Files.Upload(ctx(t), files.UploadRequest{FilePath: p, Contents: io.NopCloser(bytes.NewReader(data))})
	var ae *apierr.APIError
	if !errors.As(err, &ae) || ae.StatusCode != 409 {
		t.Errorf("second upload without overwrite: %v, want 409", err)
	}
	if err := w.Files.Upload(ctx(t), files.UploadRequest{FilePath: p, Overwrite: true, Contents: io.NopCloser(bytes.NewReader(data))}); err != nil {
		t.Errorf("upload with overwrite: %v", err)
	}
	md, err := w.Files.GetMetadata(ctx(t), files.GetMetadataRequest{FilePath: p})
	if err != nil || md.ContentLength != int64(len(data)) || md.LastModified == "" {
		t.Errorf("GetMetadata = %+v %v", md, err)
	}
	dl, err := w.Files.Download(ctx(t), files.DownloadRequest{FilePath: p})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(dl.Contents)
	dl.Contents.Close()
	if !bytes.Equal(got, data) {
		t.Errorf("downloaded %d bytes, want %d", len(got), len(data))
	}
	entries, err := w.Files.ListDirectoryContentsAll(ctx(t), files.ListDirectoryContentsRequest{DirectoryPath: "/Volumes/main/sales/staging/run1"})
	if err != nil || len(entries) != 1 || entries[0].Name != "f1.parquet" || entries[0].FileSize != int64(len(data)) || entries[0].Path != p {
		t.Errorf("listing = %+v %v", entries, err)
	}
	db := openSQL(t, ws)
	var n int64
	rows, err := db.QueryContext(ctx(t), "COPY INTO main.sales.orders FROM '/Volumes/main/sales/staging/run1' FILEFORMAT = PARQUET FILES = ('f1.parquet')")
	if err != nil {
		t.Fatal(err)
	}
	var a, s int64
	if rows.Next() {
		_ = rows.Scan(&a, &n, &s)
	}
	rows.Close()
	if n != 2 {
		t.Errorf("COPY INTO from the volume inserted %d rows, want 2", n)
	}
	if err := w.Files.Delete(ctx(t), files.DeleteFileRequest{FilePath: p}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Files.GetMetadata(ctx(t), files.GetMetadataRequest{FilePath: p}); !errors.As(err, &ae) || ae.StatusCode != 404 {
		t.Errorf("metadata of a deleted file: %v, want 404", err)
	}
	if err := w.Files.Delete(ctx(t), files.DeleteFileRequest{FilePath: p}); !errors.As(err, &ae) || ae.StatusCode != 404 {
		t.Errorf("delete of a deleted file: %v, want 404", err)
	}
	if err := w.Files.Upload(ctx(t), files.UploadRequest{FilePath: "/Volumes/main/sales/nope/x", Contents: io.NopCloser(bytes.NewReader(data))}); !errors.As(err, &ae) || ae.StatusCode != 404 {
		t.Errorf("upload to a missing volume: %v, want 404", err)
	}
}

// TestCloseLeavesNothingListening: after Close the port refuses connections.
func TestCloseLeavesNothingListening(t *testing.T) {
	ws, err := workspace.Start(workspace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	addr := ws.Addr()
	if err := ws.Close(); err != nil {
		t.Fatal(err)
	}
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Errorf("%s still accepts connections after Close", addr)
	}
}

type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
