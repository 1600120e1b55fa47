// Package workspace is a local Databricks workspace for tests and the demo: on one 127.0.0.1
// port it serves the SQL warehouse (internal/fake/warehouse, the Thrift endpoint the
// databricks-sql-go driver speaks), the Unity Catalog tables and temporary table credentials
// APIs and the volumes lookup (databricks/uctest's handlers, answering from the warehouse's
// live catalog: a volume's storage location is its local folder, its names matched in any
// letter case as Unity Catalog matches them), the Files API for Unity Catalog volumes, the SQL warehouses API (with stop and start), Unity Catalog's
// effective permissions and the SCIM Me endpoint, so that the
// zbrecover binary and the databricks-sdk-go clients work against it with only
// DATABRICKS_HOST, DATABRICKS_TOKEN and DATABRICKS_WAREHOUSE_ID.
//
// Like fakewarehouse it needs cgo (DuckDB) at run time: without cgo, Start fails.
//
//	ws, err := workspace.Start(workspace.Options{})
//	defer ws.Close()
//	ws.RegisterTable(ctx, "main.sales.orders", "/data/orders", true) // managed: path reads there refused
//	os.Setenv("DATABRICKS_HOST", ws.URL()) // and ws.Env() for all three settings
//	ws.Statements()                        // the statement log
//
// # Making it hostile
//
// Every behaviour that differs between Databricks workspaces, or that a workspace inflicts on
// a client, is a switch reachable in-process (Go methods) and from outside the process (the
// control endpoints under /api/2.0/fake/, with the workspace's token; see serveControl, and
// the same JSON as a Control document for `zbrecover demo serve --faults FILE`):
//
//   - the SQL warehouse's unknowns (Warehouse().SetUnknowns; PATCH /api/2.0/fake/unknowns with
//     a partial document) and faults on its Thrift methods (Warehouse().Inject or AddFault;
//     /api/2.0/fake/faults): errors, HTTP 429/503, requests cut before they arrive, lost
//     answers, pending statements, commits answered with an error or an invalid session;
//   - other writers: Zerobus writers at an interval (StartZerobus, StopZerobus;
//     /api/2.0/fake/zerobus), look-alike commits by the same identity (Warehouse().
//     CommitLookalike; /api/2.0/fake/lookalike) and triggers committing them around matching
//     statements (Warehouse().AddTrigger; /api/2.0/fake/triggers);
//   - faults on the REST APIs (InjectAPI; /api/2.0/fake/api-faults): the Files API and Unity
//     Catalog throttled (429 or 503 with Retry-After) on the Nth request or a reproducible
//     share of them, requests cut or answers lost; and a latency per request (SetLatency;
//     /api/2.0/fake/latency), so that staging can be measured at, say, 20 ms a request.
//
// Apply applies a whole Control document; DecodeControl reads one.
package workspace

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/zbrecover/zbrecover/databricks/uctest"
	"github.com/zbrecover/zbrecover/internal/fake/warehouse"
)

// Options configure a workspace.
type Options struct {
	// Addr is the address to listen on. Default "127.0.0.1:0" (a free port).
	Addr string
	// Token is the personal access token the workspace accepts. Default a new random one.
	Token string
	// WarehouseID is the SQL warehouse's id. Default "local".
	WarehouseID string
	// Dir is the working directory (managed tables, volumes). Empty means a new temporary
	// directory that Close removes.
	Dir string
	// UserName is the workspace user the token belongs to. Default "operator@example.com".
	UserName string
	// Unknowns are the warehouse's answers to unknown Databricks behaviours.
	Unknowns warehouse.Unknowns
	// StatementLog, when set, receives one JSON line per statement (see LogEntry).
	StatementLog io.Writer
	// Storage opens remote locations for the warehouse (s3://, gs://, abfss://).
	Storage warehouse.StorageOpener
}

// LogEntry is one line of the statement log.
type LogEntry struct {
	Time       time.Time `json:"time"`
	QueryID    string    `json:"query_id"`
	Statement  string    `json:"statement"`
	Outcome    string    `json:"outcome"` // FINISHED, ERROR, CANCELED, REJECTED or DROPPED
	ErrorClass string    `json:"error_class,omitempty"`
	SQLState   string    `json:"sqlstate,omitempty"`
	Error      string    `json:"error,omitempty"`
	Rows       int64     `json:"rows"`
	DurationMS int64     `json:"duration_ms"`
}

// Workspace is a running local workspace.
type Workspace struct {
	opts Options
	wh   *warehouse.Server
	uc   *uctest.Server
	ln   net.Listener

	logMu sync.Mutex
	once  sync.Once

	mu          sync.Mutex
	stopped     bool
	grants      map[string]map[string][]string // securable key → principal → privileges
	apiFaults   []*InjectedAPIFault
	latency     Latency
	zerobus     map[int]*runningZerobus
	nextZerobus int
	schema      *schemaChanges // created on first use (changes)
}

// Start starts a workspace.
func Start(opts Options) (*Workspace, error) {
	if opts.Addr == "" {
		opts.Addr = "127.0.0.1:0"
	}
	if opts.Token == "" {
		b := make([]byte, 16)
		_, _ = rand.Read(b)
		opts.Token = "dapi" + hex.EncodeToString(b)
	}
	if opts.WarehouseID == "" {
		opts.WarehouseID = "local"
	}
	if opts.UserName == "" {
		opts.UserName = "operator@example.com"
	}
	ln, err := net.Listen("tcp", opts.Addr)
	if err != nil {
		return nil, err
	}
	w := &Workspace{opts: opts, ln: ln, uc: uctest.NewHandler(opts.Token)}
	mux := http.NewServeMux()
	mux.HandleFunc("/api/2.0/fs/", w.auth(w.serveFiles))
	mux.HandleFunc("/api/2.0/sql/warehouses", w.auth(w.serveWarehouses))
	mux.HandleFunc("/api/2.0/sql/warehouses/", w.auth(w.serveWarehouses))
	mux.HandleFunc("/api/2.0/preview/scim/v2/Me", w.auth(w.serveMe))
	mux.HandleFunc(effectivePrefix, w.auth(w.serveEffective))
	mux.HandleFunc(controlPrefix, w.auth(w.serveControl))
	mux.Handle("/", w.uc)
	wh, err := warehouse.Start(warehouse.Options{
		Token: opts.Token, WarehouseID: opts.WarehouseID, Dir: opts.Dir, Storage: opts.Storage,
		Unknowns: opts.Unknowns, UserName: opts.UserName, Listener: ln, Handler: w.apiFaultsHandler(mux),
		OnStatement: w.logStatement,
	})
	if err != nil {
		ln.Close()
		return nil, err
	}
	w.wh = wh
	w.uc.SetTableSource(w.ucTables)
	w.uc.SetVolumeSource(w.ucVolumes)
	return w, nil
}

// Close stops the Zerobus writers and serving (nothing is left listening) and releases the
// warehouse.
func (w *Workspace) Close() error {
	var err error
	w.once.Do(func() {
		w.StopSchemaSchedules()
		w.stopAllZerobus()
		err = w.wh.Close()
	})
	return err
}

// URL is the workspace host (http://127.0.0.1:PORT): DATABRICKS_HOST.
func (w *Workspace) URL() string { return w.wh.URL() }

// Addr is the listening address.
func (w *Workspace) Addr() string { return w.ln.Addr().String() }

// Token is the accepted personal access token: DATABRICKS_TOKEN.
func (w *Workspace) Token() string { return w.opts.Token }

// WarehouseID is the SQL warehouse's id: DATABRICKS_WAREHOUSE_ID.
func (w *Workspace) WarehouseID() string { return w.opts.WarehouseID }

// HTTPPath is the SQL warehouse's HTTP path (/sql/1.0/warehouses/<id>).
func (w *Workspace) HTTPPath() string { return w.wh.HTTPPath() }

// Env returns the settings a client needs, as NAME=value.
func (w *Workspace) Env() []string {
	return []string{"DATABRICKS_HOST=" + w.URL(), "DATABRICKS_TOKEN=" + w.Token(), "DATABRICKS_WAREHOUSE_ID=" + w.WarehouseID()}
}

// Warehouse returns the SQL warehouse, for faults, unknowns, Zerobus writers and its engine.
func (w *Workspace) Warehouse() *warehouse.Server { return w.wh }

// UnityCatalog returns the Unity Catalog handler, to deny tables or set vended credentials.
func (w *Workspace) UnityCatalog() *uctest.Server { return w.uc }

// Statements returns the statement log.
func (w *Workspace) Statements() []warehouse.Statement { return w.wh.Statements() }

// RegisterTable registers the Delta table at root as fullName (catalog.schema.table), managed
// or external, and creates the volume catalog.schema.staging next to it.
func (w *Workspace) RegisterTable(ctx context.Context, fullName, root string, managed bool) error {
	if err := w.wh.RegisterTable(ctx, fullName, root, managed); err != nil {
		return err
	}
	parts := strings.Split(fullName, ".")
	if _, err := w.CreateVolume(parts[0] + "." + parts[1] + ".staging"); err != nil {
		return err
	}
	w.Grant("table", fullName, w.opts.UserName, "SELECT", "MODIFY")
	return nil
}

// CreateVolume creates the volume catalog.schema.volume and returns its local folder. The
// workspace user is granted USE_CATALOG, USE_SCHEMA, READ_VOLUME and WRITE_VOLUME on it.
func (w *Workspace) CreateVolume(fullName string) (string, error) {
	dir, err := w.wh.Engine().CreateVolume(fullName)
	if err != nil {
		return "", err
	}
	parts := strings.Split(fullName, ".")
	if len(parts) == 3 {
		w.Grant("catalog", parts[0], w.opts.UserName, "USE_CATALOG")
		w.Grant("schema", parts[0]+"."+parts[1], w.opts.UserName, "USE_SCHEMA")
	}
	w.Grant("volume", fullName, w.opts.UserName, "READ_VOLUME", "WRITE_VOLUME")
	return dir, nil
}

func (w *Workspace) logStatement(st warehouse.Statement) {
	if w.opts.StatementLog == nil {
		return
	}
	e := LogEntry{Time: st.Start.UTC(), QueryID: st.QueryID, Statement: st.SQL, Outcome: st.State,
		ErrorClass: st.Class, SQLState: st.SQLState, Error: st.Error, Rows: st.Rows, DurationMS: st.End.Sub(st.Start).Milliseconds()}
	line, err := json.Marshal(e)
	if err != nil {
		return
	}
	w.logMu.Lock()
	defer w.logMu.Unlock()
	_, _ = w.opts.StatementLog.Write(append(line, '\n'))
}

// ucTables lists the warehouse's tables for the Unity Catalog handler.
func (w *Workspace) ucTables() []uctest.Table {
	infos, err := w.wh.Engine().Tables()
	if err != nil {
		return nil
	}
	out := make([]uctest.Table, 0, len(infos))
	for _, ti := range infos {
		typ := "MANAGED"
		if !ti.Managed {
			typ = "EXTERNAL"
		}
		out = append(out, uctest.Table{Catalog: ti.Catalog, Schema: ti.Schema, Name: ti.Name, TableID: ti.TableID,
			TableType: typ, StorageLocation: ti.Location, Columns: uctest.ColumnsFromSchema(ti.Columns),
			PartitionColumns: ti.PartitionColumns, Properties: ti.Properties})
	}
	return out
}

// ucVolumes lists the warehouse's volumes for the Unity Catalog handler: each volume's
// storage location is its local folder, as a file:// URL.
func (w *Workspace) ucVolumes() []uctest.Volume {
	var out []uctest.Volume
	for _, name := range w.wh.Engine().Volumes() {
		parts := strings.Split(name, ".")
		if len(parts) != 3 {
			continue
		}
		dir, err := w.wh.Engine().VolumeFile("/Volumes/" + strings.Join(parts, "/"))
		if err != nil {
			continue
		}
		out = append(out, uctest.Volume{Catalog: parts[0], Schema: parts[1], Name: parts[2], StorageLocation: "file://" + filepath.ToSlash(dir)})
	}
	return out
}

func (w *Workspace) auth(h http.HandlerFunc) http.HandlerFunc {
	return func(rw http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+w.opts.Token {
			writeError(rw, http.StatusUnauthorized, "UNAUTHENTICATED", "Invalid access token.")
			return
		}
		h(rw, r)
	}
}

func writeJSON(rw http.ResponseWriter, status int, v any) {
	rw.Header().Set("Content-Type", "application/json")
	rw.WriteHeader(status)
	_ = json.NewEncoder(rw).Encode(v)
}

func writeError(rw http.ResponseWriter, status int, code, msg string) {
	writeJSON(rw, status, map[string]string{"error_code": code, "message": msg})
}

func (w *Workspace) warehouseJSON() map[string]any {
	u := w.ln.Addr().(*net.TCPAddr)
	return map[string]any{
		"id": w.opts.WarehouseID, "name": "Local warehouse", "state": w.warehouseState(), "cluster_size": "2X-Small",
		"warehouse_type": "PRO", "enable_serverless_compute": true, "creator_name": w.opts.UserName,
		"odbc_params": map[string]any{"hostname": u.IP.String(), "port": u.Port, "path": w.wh.HTTPPath(), "protocol": "http"},
		"jdbc_url":    fmt.Sprintf("jdbc:databricks://%s:%d/default;transportMode=http;ssl=0;httpPath=%s", u.IP, u.Port, w.wh.HTTPPath()),
	}
}

func (w *Workspace) serveWarehouses(rw http.ResponseWriter, r *http.Request) {
	id := strings.TrimPrefix(strings.TrimPrefix(r.URL.Path, "/api/2.0/sql/warehouses"), "/")
	if r.Method == http.MethodPost {
		id, action, _ := strings.Cut(id, "/")
		switch {
		case id != w.opts.WarehouseID:
			writeError(rw, http.StatusNotFound, "RESOURCE_DOES_NOT_EXIST", fmt.Sprintf("SQL warehouse %s does not exist.", id))
		case action == "stop":
			w.StopWarehouse()
			writeJSON(rw, http.StatusOK, map[string]any{})
		case action == "start":
			w.StartWarehouse()
			writeJSON(rw, http.StatusOK, map[string]any{})
		default:
			writeError(rw, http.StatusNotFound, "ENDPOINT_NOT_FOUND", fmt.Sprintf("No API found for '%s %s'", r.Method, r.URL.Path))
		}
		return
	}
	if r.Method != http.MethodGet {
		writeError(rw, http.StatusMethodNotAllowed, "BAD_REQUEST", "Only GET and POST …/start, …/stop are supported by the local workspace.")
		return
	}
	switch {
	case id == "":
		writeJSON(rw, http.StatusOK, map[string]any{"warehouses": []any{w.warehouseJSON()}})
	case id == w.opts.WarehouseID:
		writeJSON(rw, http.StatusOK, w.warehouseJSON())
	default:
		writeError(rw, http.StatusNotFound, "RESOURCE_DOES_NOT_EXIST", fmt.Sprintf("SQL warehouse %s does not exist.", id))
	}
}

func (w *Workspace) serveMe(rw http.ResponseWriter, r *http.Request) {
	writeJSON(rw, http.StatusOK, map[string]any{
		"id": "4815162342", "userName": w.opts.UserName, "displayName": w.opts.UserName, "active": true,
		"emails":  []any{map[string]any{"value": w.opts.UserName, "type": "work", "primary": true}},
		"schemas": []string{"urn:ietf:params:scim:schemas:core:2.0:User"},
	})
}

const (
	filesPrefix = "/api/2.0/fs/files"
	dirsPrefix  = "/api/2.0/fs/directories"
)

// serveFiles implements the Files API on volumes: PUT/GET/HEAD/DELETE /api/2.0/fs/files/<path>
// and GET/PUT/HEAD/DELETE /api/2.0/fs/directories/<path>, with Databricks' status codes (404
// for a missing file or directory, 409 for PUT on an existing file without overwrite=true or
// DELETE of a non-empty directory).
func (w *Workspace) serveFiles(rw http.ResponseWriter, r *http.Request) {
	var vpath string
	dir := false
	switch {
	case strings.HasPrefix(r.URL.Path, filesPrefix+"/"):
		vpath = strings.TrimPrefix(r.URL.Path, filesPrefix)
	case strings.HasPrefix(r.URL.Path, dirsPrefix+"/"):
		vpath, dir = strings.TrimPrefix(r.URL.Path, dirsPrefix), true
	default:
		writeError(rw, http.StatusNotFound, "ENDPOINT_NOT_FOUND", fmt.Sprintf("No API found for '%s %s'", r.Method, r.URL.Path))
		return
	}
	vpath = path.Clean(vpath)
	if !strings.HasPrefix(vpath, "/Volumes/") || strings.Count(vpath, "/") < 4 && !dir {
		writeError(rw, http.StatusBadRequest, "INVALID_PARAMETER_VALUE", fmt.Sprintf("Invalid path %s: the local workspace serves /Volumes/<catalog>/<schema>/<volume>/… only.", vpath))
		return
	}
	local, err := w.wh.Engine().VolumeFile(vpath)
	if err != nil {
		writeError(rw, http.StatusNotFound, "NOT_FOUND", err.Error())
		return
	}
	if dir {
		w.serveDirectory(rw, r, vpath, local)
		return
	}
	switch r.Method {
	case http.MethodPut:
		overwrite := r.URL.Query().Get("overwrite") == "true"
		if fi, err := os.Stat(local); err == nil {
			if fi.IsDir() || !overwrite {
				writeError(rw, http.StatusConflict, "ALREADY_EXISTS", "The file being created already exists.")
				return
			}
		}
		if err := os.MkdirAll(filepath.Dir(local), 0o755); err != nil {
			writeError(rw, http.StatusInternalServerError, "INTERNAL_ERROR", err.Error())
			return
		}
		tmp, err := os.CreateTemp(filepath.Dir(local), ".upload-*")
		if err != nil {
			writeError(rw, http.StatusInternalServerError, "INTERNAL_ERROR", err.Error())
			return
		}
		_, err = io.Copy(tmp, r.Body)
		if cerr := tmp.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			if !overwrite {
				// Create-only: a link fails when another upload created the file meanwhile.
				if err = os.Link(tmp.Name(), local); err != nil && errors.Is(err, os.ErrExist) {
					os.Remove(tmp.Name())
					writeError(rw, http.StatusConflict, "ALREADY_EXISTS", "The file being created already exists.")
					return
				}
				os.Remove(tmp.Name())
			} else {
				err = os.Rename(tmp.Name(), local)
			}
		}
		if err != nil {
			os.Remove(tmp.Name())
			writeError(rw, http.StatusInternalServerError, "INTERNAL_ERROR", err.Error())
			return
		}
		rw.WriteHeader(http.StatusNoContent)
	case http.MethodGet, http.MethodHead:
		fi, err := os.Stat(local)
		if err != nil || fi.IsDir() {
			if r.Method == http.MethodHead {
				rw.WriteHeader(http.StatusNotFound)
				return
			}
			writeError(rw, http.StatusNotFound, "NOT_FOUND", "The file being accessed is not found.")
			return
		}
		rw.Header().Set("Content-Type", "application/octet-stream")
		rw.Header().Set("Content-Length", fmt.Sprint(fi.Size()))
		rw.Header().Set("Last-Modified", fi.ModTime().UTC().Format(http.TimeFormat))
		if r.Method == http.MethodHead {
			rw.WriteHeader(http.StatusOK)
			return
		}
		f, err := os.Open(local)
		if err != nil {
			writeError(rw, http.StatusNotFound, "NOT_FOUND", "The file being accessed is not found.")
			return
		}
		defer f.Close()
		rw.WriteHeader(http.StatusOK)
		_, _ = io.Copy(rw, f)
	case http.MethodDelete:
		fi, err := os.Stat(local)
		if err != nil || fi.IsDir() {
			writeError(rw, http.StatusNotFound, "NOT_FOUND", "The file being accessed is not found.")
			return
		}
		if err := os.Remove(local); err != nil {
			writeError(rw, http.StatusInternalServerError, "INTERNAL_ERROR", err.Error())
			return
		}
		rw.WriteHeader(http.StatusNoContent)
	default:
		writeError(rw, http.StatusMethodNotAllowed, "BAD_REQUEST", "Unsupported method "+r.Method)
	}
}

func (w *Workspace) serveDirectory(rw http.ResponseWriter, r *http.Request, vpath, local string) {
	fi, statErr := os.Stat(local)
	exists := statErr == nil && fi.IsDir()
	switch r.Method {
	case http.MethodHead:
		if !exists {
			rw.WriteHeader(http.StatusNotFound)
			return
		}
		rw.WriteHeader(http.StatusOK)
	case http.MethodPut:
		if statErr == nil && !fi.IsDir() {
			writeError(rw, http.StatusConflict, "ALREADY_EXISTS", "A file exists at the path of the directory being created.")
			return
		}
		if err := os.MkdirAll(local, 0o755); err != nil {
			writeError(rw, http.StatusInternalServerError, "INTERNAL_ERROR", err.Error())
			return
		}
		rw.WriteHeader(http.StatusNoContent)
	case http.MethodDelete:
		if !exists {
			writeError(rw, http.StatusNotFound, "NOT_FOUND", "The directory being accessed is not found.")
			return
		}
		entries, _ := os.ReadDir(local)
		if len(entries) > 0 {
			writeError(rw, http.StatusConflict, "DIRECTORY_NOT_EMPTY", "The directory being deleted is not empty.")
			return
		}
		if err := os.Remove(local); err != nil {
			writeError(rw, http.StatusInternalServerError, "INTERNAL_ERROR", err.Error())
			return
		}
		rw.WriteHeader(http.StatusNoContent)
	case http.MethodGet:
		if !exists {
			writeError(rw, http.StatusNotFound, "NOT_FOUND", "The directory being accessed is not found.")
			return
		}
		entries, err := os.ReadDir(local)
		if err != nil {
			writeError(rw, http.StatusInternalServerError, "INTERNAL_ERROR", err.Error())
			return
		}
		sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
		contents := make([]map[string]any, 0, len(entries))
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), ".upload-") {
				continue
			}
			info, err := e.Info()
			if err != nil {
				continue
			}
			ent := map[string]any{"path": path.Join(vpath, e.Name()), "name": e.Name(), "is_directory": e.IsDir()}
			if e.IsDir() {
				ent["path"] = path.Join(vpath, e.Name()) + "/"
			} else {
				ent["file_size"] = info.Size()
				ent["last_modified"] = info.ModTime().UnixMilli()
			}
			contents = append(contents, ent)
		}
		writeJSON(rw, http.StatusOK, map[string]any{"contents": contents})
	default:
		writeError(rw, http.StatusMethodNotAllowed, "BAD_REQUEST", "Unsupported method "+r.Method)
	}
}
