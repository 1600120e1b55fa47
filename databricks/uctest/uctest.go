// Package uctest is a fake Databricks workspace for tests: the Unity Catalog REST endpoints
// zbrecover calls (catalogs, schemas and tables lists in pages, tables get, temporary table
// credentials) and the OAuth endpoints of machine-to-machine authentication, served by
// httptest with Databricks' error shapes.
//
// It checks the bearer token on every call: a wrong or missing token gets 401
// (UNAUTHENTICATED), an unknown table 404 (TABLE_DOES_NOT_EXIST), an unknown catalog or schema
// in a list 404 (CATALOG_DOES_NOT_EXIST, SCHEMA_DOES_NOT_EXIST), a denied one 403
// (PERMISSION_DENIED). The catalogs and schemas it lists are those of its tables and those
// added with AddCatalog and AddSchema.
package uctest

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/zbrecover/zbrecover/schemadiff"
)

// Table is a Unity Catalog table the fake knows.
type Table struct {
	Catalog, Schema, Name string
	TableID               string // generated when empty
	TableType             string // default MANAGED
	DataSourceFormat      string // default DELTA
	StorageLocation       string
	Columns               []Column
	// PartitionColumns name the columns reported with a partition_index, in order.
	PartitionColumns []string
	Properties       map[string]string
}

// FullName returns catalog.schema.name.
func (t Table) FullName() string { return t.Catalog + "." + t.Schema + "." + t.Name }

// Volume is a Unity Catalog volume the fake knows (GET /api/2.1/unity-catalog/volumes/<full
// name>, its names matched in any letter case as Unity Catalog matches them).
type Volume struct {
	Catalog, Schema, Name string
	// StorageLocation is where the volume's files are (a URL).
	StorageLocation string
}

// Column is a Unity Catalog column. TypeJSON is Spark's StructField JSON.
type Column struct {
	Name     string
	TypeText string
	TypeJSON string
	Nullable bool
}

// Credentials are what the fake vends for a table.
type Credentials struct {
	AWSAccessKeyID, AWSSecretAccessKey, AWSSessionToken string
	GCPOAuthToken                                       string
	AzureSASToken                                       string
	AzureAADToken                                       string
	// TTL is the credentials' lifetime from the moment they are vended (default 1h).
	TTL time.Duration
}

// Request is one call the fake received.
type Request struct {
	Method, Path string
	// Authorized is true when the bearer token was accepted.
	Authorized bool
	// Operation and TableID are set for credential vending.
	Operation, TableID string
	// UserAgent is the request's User-Agent header.
	UserAgent string
}

// Server is the fake workspace. Configure it before use; all methods are safe for concurrent use.
type Server struct {
	srv *httptest.Server
	// URL is the workspace host, http://127.0.0.1:PORT.
	URL string

	mu           sync.Mutex
	tokens       map[string]bool
	tables       map[string]*Table // by lower-cased full name
	denied       map[string]bool   // tables (lower-cased full name) whose lookup is denied
	vendDenied   map[string]bool   // tables whose credential vending is denied
	catalogs     map[string]string // lower-cased catalog name → catalog_type, for AddCatalog
	schemas      map[string]bool   // lower-cased catalog.schema, for AddSchema
	listDenied   map[string]bool   // lower-cased catalogs and catalog.schema names whose listing is denied
	pageSize     int
	creds        map[string]Credentials
	requests     []Request
	clientID     string
	clientSecret string
	// InvalidTokenStatus is the HTTP status for a rejected token (default 401; some workspaces
	// answer 403 "Invalid access token.").
	invalidTokenStatus int
	now                func() time.Time
	sql                http.Handler
	source             func() []Table
	volumes            func() []Volume
}

// New starts a fake workspace that accepts the personal access token token. Close it when done.
func New(token string) *Server {
	s := &Server{
		tokens:     map[string]bool{},
		tables:     map[string]*Table{},
		denied:     map[string]bool{},
		vendDenied: map[string]bool{},
		creds:      map[string]Credentials{},
		catalogs:   map[string]string{},
		schemas:    map[string]bool{},
		listDenied: map[string]bool{},
		now:        time.Now,
	}
	if token != "" {
		s.tokens[token] = true
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	return s
}

// NewHandler returns a fake workspace that is not listening: serve it with ServeHTTP, as part
// of a larger server. URL is empty.
func NewHandler(token string) *Server {
	s := &Server{
		tokens:     map[string]bool{},
		tables:     map[string]*Table{},
		denied:     map[string]bool{},
		vendDenied: map[string]bool{},
		creds:      map[string]Credentials{},
		catalogs:   map[string]string{},
		schemas:    map[string]bool{},
		listDenied: map[string]bool{},
		now:        time.Now,
	}
	if token != "" {
		s.tokens[token] = true
	}
	return s
}

// ServeHTTP answers a request as the fake workspace does.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.serve(w, r) }

// SetTableSource makes every request first (re)register the tables source returns, so that
// the answers follow a catalog that changes (a local warehouse's tables).
func (s *Server) SetTableSource(source func() []Table) {
	s.mu.Lock()
	s.source = source
	s.mu.Unlock()
}

// SetVolumeSource makes the volumes volumes returns known to the fake (asked at each volume
// lookup), so that the answers follow volumes created later (a local warehouse's).
func (s *Server) SetVolumeSource(volumes func() []Volume) {
	s.mu.Lock()
	s.volumes = volumes
	s.mu.Unlock()
}

// Close stops the server.
func (s *Server) Close() {
	if s.srv != nil {
		s.srv.Close()
	}
}

// SetNow replaces the clock used for credential expiry.
func (s *Server) SetNow(now func() time.Time) { s.mu.Lock(); s.now = now; s.mu.Unlock() }

// SetInvalidTokenStatus makes rejected tokens get status (401 or 403).
func (s *Server) SetInvalidTokenStatus(status int) {
	s.mu.Lock()
	s.invalidTokenStatus = status
	s.mu.Unlock()
}

// RouteSQL forwards requests under /sql/ (the SQL warehouse HTTP paths) to target, such as a
// fake warehouse, so that one host serves both Unity Catalog and SQL as a workspace does.
func (s *Server) RouteSQL(target string) error {
	u, err := url.Parse(target)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.sql = httputil.NewSingleHostReverseProxy(u)
	s.mu.Unlock()
	return nil
}

// EnableM2M accepts OAuth machine-to-machine logins with this client id and secret.
func (s *Server) EnableM2M(clientID, clientSecret string) {
	s.mu.Lock()
	s.clientID, s.clientSecret = clientID, clientSecret
	s.mu.Unlock()
}

// AddTable registers t (replacing a table of the same name) and returns it with defaults filled.
func (s *Server) AddTable(t Table) Table {
	if t.TableID == "" {
		t.TableID = newUUID()
	}
	if t.TableType == "" {
		t.TableType = "MANAGED"
	}
	if t.DataSourceFormat == "" {
		t.DataSourceFormat = "DELTA"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tables[strings.ToLower(t.FullName())] = &t
	return t
}

// Deny makes lookups and vending for the table answer 403 PERMISSION_DENIED.
func (s *Server) Deny(fullName string) {
	s.mu.Lock()
	s.denied[strings.ToLower(fullName)] = true
	s.mu.Unlock()
}

// AddCatalog registers a catalog of catalogType (default MANAGED_CATALOG), with or without
// tables: a DELTASHARING_CATALOG or a SYSTEM_CATALOG, for example.
func (s *Server) AddCatalog(name, catalogType string) {
	if catalogType == "" {
		catalogType = "MANAGED_CATALOG"
	}
	s.mu.Lock()
	s.catalogs[strings.ToLower(name)] = catalogType
	s.mu.Unlock()
}

// AddSchema registers the schema catalog.schema (and its catalog), with or without tables.
func (s *Server) AddSchema(catalogName, schemaName string) {
	s.mu.Lock()
	if _, ok := s.catalogs[strings.ToLower(catalogName)]; !ok {
		s.catalogs[strings.ToLower(catalogName)] = "MANAGED_CATALOG"
	}
	s.schemas[strings.ToLower(catalogName+"."+schemaName)] = true
	s.mu.Unlock()
}

// DenyListing makes listing the schemas of a catalog (name "catalog") or the tables of a
// schema (name "catalog.schema") answer 403 PERMISSION_DENIED.
func (s *Server) DenyListing(name string) {
	s.mu.Lock()
	s.listDenied[strings.ToLower(name)] = true
	s.mu.Unlock()
}

// SetPageSize sets the most entries one list answer holds (default 50) unless max_results
// asks for fewer.
func (s *Server) SetPageSize(n int) {
	s.mu.Lock()
	s.pageSize = n
	s.mu.Unlock()
}

// DenyVending makes only credential vending for the table answer 403.
func (s *Server) DenyVending(fullName string) {
	s.mu.Lock()
	s.vendDenied[strings.ToLower(fullName)] = true
	s.mu.Unlock()
}

// SetCredentials sets what vending returns for the table.
func (s *Server) SetCredentials(fullName string, c Credentials) {
	s.mu.Lock()
	s.creds[strings.ToLower(fullName)] = c
	s.mu.Unlock()
}

// Requests returns the calls received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// VendCount returns how many credential vending calls for tableID were answered with credentials.
func (s *Server) VendCount(tableID string) int {
	n := 0
	for _, r := range s.Requests() {
		if r.TableID == tableID && r.Authorized {
			n++
		}
	}
	return n
}

func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, map[string]string{"error_code": code, "message": msg})
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	sql := s.sql
	s.mu.Unlock()
	if sql != nil && strings.HasPrefix(r.URL.Path, "/sql/") {
		sql.ServeHTTP(w, r)
		return
	}
	switch {
	case r.URL.Path == "/oidc/.well-known/oauth-authorization-server":
		s.serveOIDCDiscovery(w, r)
		return
	case r.URL.Path == "/oidc/v1/token":
		s.serveToken(w, r)
		return
	}
	req := Request{Method: r.Method, Path: r.URL.Path, UserAgent: r.UserAgent()}
	tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	s.mu.Lock()
	req.Authorized = r.Header.Get("Authorization") != tok && s.tokens[tok]
	invalidStatus := s.invalidTokenStatus
	s.mu.Unlock()
	if !req.Authorized {
		s.record(req)
		if invalidStatus == 0 {
			invalidStatus = http.StatusUnauthorized
		}
		code := "UNAUTHENTICATED"
		if invalidStatus == http.StatusForbidden {
			code = "403"
		}
		writeError(w, invalidStatus, code, "Invalid access token.")
		return
	}
	s.mu.Lock()
	source := s.source
	s.mu.Unlock()
	if source != nil {
		for _, t := range source() {
			s.AddTable(t)
		}
	}
	const tablesPrefix = "/api/2.1/unity-catalog/tables/"
	const volumesPrefix = "/api/2.1/unity-catalog/volumes/"
	switch {
	case r.Method == http.MethodGet && strings.TrimSuffix(r.URL.Path, "/") == "/api/2.1/unity-catalog/volumes":
		s.record(req)
		s.serveVolumes(w, r)
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, volumesPrefix) && len(r.URL.Path) > len(volumesPrefix):
		s.record(req)
		s.serveVolume(w, strings.TrimPrefix(r.URL.Path, volumesPrefix))
	case r.Method == http.MethodGet && strings.TrimSuffix(r.URL.Path, "/") == "/api/2.1/unity-catalog/catalogs":
		s.record(req)
		s.serveCatalogs(w, r)
	case r.Method == http.MethodGet && strings.TrimSuffix(r.URL.Path, "/") == "/api/2.1/unity-catalog/schemas":
		s.record(req)
		s.serveSchemas(w, r)
	case r.Method == http.MethodGet && (r.URL.Path == "/api/2.1/unity-catalog/tables" || r.URL.Path == tablesPrefix):
		s.record(req)
		s.serveList(w, r)
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, tablesPrefix):
		s.record(req)
		s.serveTable(w, strings.TrimPrefix(r.URL.Path, tablesPrefix))
	case r.Method == http.MethodPost && r.URL.Path == "/api/2.0/unity-catalog/temporary-table-credentials":
		s.serveVend(w, r, req)
	default:
		s.record(req)
		writeError(w, http.StatusNotFound, "ENDPOINT_NOT_FOUND", fmt.Sprintf("No API found for '%s %s'", r.Method, r.URL.Path))
	}
}

func (s *Server) record(r Request) {
	s.mu.Lock()
	s.requests = append(s.requests, r)
	s.mu.Unlock()
}

// listPage is the most entries one list answer holds unless SetPageSize or max_results asks
// for fewer.
const listPage = 50

// page returns the part of names (sorted) one list answer holds, and the token of the next
// page ("" after the last): max_results and page_token as Unity Catalog takes them. The
// caller holds s.mu.
func (s *Server) page(q url.Values, names []string) ([]string, string) {
	size := listPage
	if s.pageSize > 0 {
		size = s.pageSize
	}
	if n, err := strconv.Atoi(q.Get("max_results")); err == nil && n > 0 && n < size {
		size = n
	}
	start := 0
	if tok := q.Get("page_token"); tok != "" {
		start = sort.SearchStrings(names, tok)
	}
	end := min(start+size, len(names))
	next := ""
	if end < len(names) {
		next = names[end]
	}
	return names[start:end], next
}

// catalogsLocked returns the catalogs (lower-cased name → catalog_type): those added and those
// of the tables. The caller holds s.mu.
func (s *Server) catalogsLocked() map[string]string {
	out := map[string]string{}
	for _, t := range s.tables {
		out[strings.ToLower(t.Catalog)] = "MANAGED_CATALOG"
	}
	for k := range s.schemas {
		c, _, _ := strings.Cut(k, ".")
		out[c] = "MANAGED_CATALOG"
	}
	for k, v := range s.catalogs {
		out[k] = v
	}
	return out
}

// serveCatalogs answers GET /api/2.1/unity-catalog/catalogs: every catalog, by name, in pages.
func (s *Server) serveCatalogs(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	cats := s.catalogsLocked()
	names := make([]string, 0, len(cats))
	for k := range cats {
		names = append(names, k)
	}
	sort.Strings(names)
	pg, next := s.page(r.URL.Query(), names)
	out := []map[string]any{}
	for _, n := range pg {
		out = append(out, map[string]any{"name": n, "full_name": n, "catalog_type": cats[n]})
	}
	s.mu.Unlock()
	body := map[string]any{"catalogs": out}
	if next != "" {
		body["next_page_token"] = next
	}
	writeJSON(w, http.StatusOK, body)
}

// serveSchemas answers GET /api/2.1/unity-catalog/schemas?catalog_name=…: the schemas of the
// catalog (those added and those of its tables), by name, in pages.
func (s *Server) serveSchemas(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	cat := strings.ToLower(q.Get("catalog_name"))
	if cat == "" {
		writeError(w, http.StatusBadRequest, "INVALID_PARAMETER_VALUE", "catalog_name is required")
		return
	}
	s.mu.Lock()
	_, known := s.catalogsLocked()[cat]
	denied := s.listDenied[cat]
	set := map[string]bool{}
	for k := range s.schemas {
		if c, sch, _ := strings.Cut(k, "."); c == cat {
			set[sch] = true
		}
	}
	for _, t := range s.tables {
		if strings.EqualFold(t.Catalog, cat) {
			set[strings.ToLower(t.Schema)] = true
		}
	}
	names := make([]string, 0, len(set))
	for n := range set {
		names = append(names, n)
	}
	sort.Strings(names)
	pg, next := s.page(q, names)
	s.mu.Unlock()
	switch {
	case !known:
		writeError(w, http.StatusNotFound, "CATALOG_DOES_NOT_EXIST", fmt.Sprintf("Catalog '%s' does not exist.", cat))
		return
	case denied:
		writeError(w, http.StatusForbidden, "PERMISSION_DENIED", fmt.Sprintf("User does not have USE CATALOG on Catalog '%s'.", cat))
		return
	}
	out := []map[string]any{}
	for _, n := range pg {
		out = append(out, map[string]any{"name": n, "catalog_name": cat, "full_name": cat + "." + n})
	}
	body := map[string]any{"schemas": out}
	if next != "" {
		body["next_page_token"] = next
	}
	writeJSON(w, http.StatusOK, body)
}

// serveList answers GET /api/2.1/unity-catalog/tables?catalog_name=…&schema_name=…: the tables
// of the schema the identity may see, by name, in pages (max_results, page_token), as Unity
// Catalog lists them (columns left out, as omit_columns asks). A schema that neither holds a
// table nor was added is answered 404 SCHEMA_DOES_NOT_EXIST.
func (s *Server) serveList(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	cat, sch := strings.ToLower(q.Get("catalog_name")), strings.ToLower(q.Get("schema_name"))
	if cat == "" || sch == "" {
		writeError(w, http.StatusBadRequest, "INVALID_PARAMETER_VALUE", "catalog_name and schema_name are required")
		return
	}
	s.mu.Lock()
	known := s.schemas[cat+"."+sch]
	denied := s.listDenied[cat] || s.listDenied[cat+"."+sch]
	var names []string
	for key, t := range s.tables {
		if strings.EqualFold(t.Catalog, cat) && strings.EqualFold(t.Schema, sch) {
			known = true
			if !s.denied[key] {
				names = append(names, key)
			}
		}
	}
	sort.Strings(names)
	pg, next := s.page(q, names)
	var out []map[string]any
	for _, key := range pg {
		t := s.tables[key]
		out = append(out, map[string]any{"name": t.Name, "catalog_name": t.Catalog, "schema_name": t.Schema, "full_name": t.FullName(),
			"table_type": t.TableType, "data_source_format": t.DataSourceFormat, "storage_location": t.StorageLocation, "table_id": t.TableID})
	}
	s.mu.Unlock()
	switch {
	case !known:
		writeError(w, http.StatusNotFound, "SCHEMA_DOES_NOT_EXIST", fmt.Sprintf("Schema '%s.%s' does not exist.", cat, sch))
		return
	case denied:
		writeError(w, http.StatusForbidden, "PERMISSION_DENIED", fmt.Sprintf("User does not have USE SCHEMA on Schema '%s.%s'.", cat, sch))
		return
	}
	body := map[string]any{"tables": out}
	if next != "" {
		body["next_page_token"] = next
	}
	writeJSON(w, http.StatusOK, body)
}

func (s *Server) serveTable(w http.ResponseWriter, fullName string) {
	if u, err := url.PathUnescape(fullName); err == nil {
		fullName = u
	}
	key := strings.ToLower(fullName)
	s.mu.Lock()
	t, ok := s.tables[key]
	denied := s.denied[key]
	s.mu.Unlock()
	switch {
	case denied:
		writeError(w, http.StatusForbidden, "PERMISSION_DENIED",
			fmt.Sprintf("User does not have SELECT on Table '%s'.", fullName))
		return
	case !ok:
		writeError(w, http.StatusNotFound, "TABLE_DOES_NOT_EXIST", fmt.Sprintf("Table '%s' does not exist.", fullName))
		return
	}
	cols := make([]map[string]any, 0, len(t.Columns))
	for i, c := range t.Columns {
		col := map[string]any{
			"name": c.Name, "type_text": c.TypeText, "type_json": c.TypeJSON,
			"type_name": strings.ToUpper(strings.SplitN(c.TypeText, "<", 2)[0]),
			"position":  i, "nullable": c.Nullable,
		}
		for pi, pn := range t.PartitionColumns {
			if strings.EqualFold(pn, c.Name) {
				col["partition_index"] = pi
			}
		}
		cols = append(cols, col)
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"name": t.Name, "catalog_name": t.Catalog, "schema_name": t.Schema, "full_name": t.FullName(),
		"table_type": t.TableType, "data_source_format": t.DataSourceFormat,
		"storage_location": t.StorageLocation, "table_id": t.TableID, "columns": cols,
		"properties": t.Properties, "owner": "someone@example.com",
	})
}

// serveVolumes answers GET /api/2.1/unity-catalog/volumes?catalog_name=…&schema_name=…: the
// volumes of the schema, by name, in pages; a schema the fake does not know (no table, no
// volume, not added) is not found, as Unity Catalog answers.
func (s *Server) serveVolumes(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	cat, sch := strings.ToLower(q.Get("catalog_name")), strings.ToLower(q.Get("schema_name"))
	if cat == "" || sch == "" {
		writeError(w, http.StatusBadRequest, "INVALID_PARAMETER_VALUE", "catalog_name and schema_name are required")
		return
	}
	s.mu.Lock()
	source := s.volumes
	known := s.schemas[cat+"."+sch]
	for _, t := range s.tables {
		if strings.EqualFold(t.Catalog, cat) && strings.EqualFold(t.Schema, sch) {
			known = true
		}
	}
	s.mu.Unlock()
	byName := map[string]Volume{}
	if source != nil {
		for _, v := range source() {
			if strings.EqualFold(v.Catalog, cat) && strings.EqualFold(v.Schema, sch) {
				byName[strings.ToLower(v.Name)] = v
				known = true
			}
		}
	}
	if !known {
		writeError(w, http.StatusNotFound, "SCHEMA_DOES_NOT_EXIST", fmt.Sprintf("Schema '%s.%s' does not exist.", cat, sch))
		return
	}
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	sort.Strings(names)
	s.mu.Lock()
	pg, next := s.page(q, names)
	s.mu.Unlock()
	out := []map[string]any{}
	for _, n := range pg {
		v := byName[n]
		out = append(out, map[string]any{"name": n, "catalog_name": cat, "schema_name": sch, "full_name": cat + "." + sch + "." + n,
			"volume_type": "MANAGED", "storage_location": v.StorageLocation, "owner": "someone@example.com"})
	}
	body := map[string]any{"volumes": out}
	if next != "" {
		body["next_page_token"] = next
	}
	writeJSON(w, http.StatusOK, body)
}

func (s *Server) serveVolume(w http.ResponseWriter, fullName string) {
	if u, err := url.PathUnescape(fullName); err == nil {
		fullName = u
	}
	s.mu.Lock()
	source := s.volumes
	s.mu.Unlock()
	if source != nil {
		for _, v := range source() {
			if strings.EqualFold(v.Catalog+"."+v.Schema+"."+v.Name, fullName) {
				writeJSON(w, http.StatusOK, map[string]any{
					"name": strings.ToLower(v.Name), "catalog_name": strings.ToLower(v.Catalog), "schema_name": strings.ToLower(v.Schema),
					"full_name":   strings.ToLower(v.Catalog + "." + v.Schema + "." + v.Name),
					"volume_type": "MANAGED", "storage_location": v.StorageLocation, "owner": "someone@example.com",
				})
				return
			}
		}
	}
	writeError(w, http.StatusNotFound, "VOLUME_DOES_NOT_EXIST", fmt.Sprintf("Volume '%s' does not exist.", fullName))
}

func (s *Server) serveVend(w http.ResponseWriter, r *http.Request, req Request) {
	var body struct {
		TableID   string `json:"table_id"`
		Operation string `json:"operation"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		s.record(req)
		writeError(w, http.StatusBadRequest, "INVALID_PARAMETER_VALUE", "malformed request body")
		return
	}
	req.TableID, req.Operation = body.TableID, body.Operation
	s.mu.Lock()
	var t *Table
	for _, tt := range s.tables {
		if tt.TableID == body.TableID {
			t = tt
		}
	}
	var key string
	if t != nil {
		key = strings.ToLower(t.FullName())
	}
	denied := t != nil && (s.denied[key] || s.vendDenied[key])
	c, haveCreds := s.creds[key]
	now := s.now()
	s.mu.Unlock()
	switch {
	case body.Operation != "READ" && body.Operation != "READ_WRITE":
		req.Authorized = false
		s.record(req)
		writeError(w, http.StatusBadRequest, "INVALID_PARAMETER_VALUE", fmt.Sprintf("Invalid operation '%s'.", body.Operation))
		return
	case t == nil:
		req.Authorized = false
		s.record(req)
		writeError(w, http.StatusNotFound, "TABLE_DOES_NOT_EXIST", fmt.Sprintf("Table with id '%s' does not exist.", body.TableID))
		return
	case denied:
		req.Authorized = false
		s.record(req)
		writeError(w, http.StatusForbidden, "PERMISSION_DENIED",
			fmt.Sprintf("User does not have EXTERNAL USE SCHEMA on Schema '%s.%s'.", t.Catalog, t.Schema))
		return
	case !haveCreds:
		req.Authorized = false
		s.record(req)
		writeError(w, http.StatusBadRequest, "INVALID_PARAMETER_VALUE", "Credential vending is not configured for this table.")
		return
	}
	s.record(req)
	ttl := c.TTL
	if ttl == 0 {
		ttl = time.Hour
	}
	resp := map[string]any{"expiration_time": now.Add(ttl).UnixMilli(), "url": t.StorageLocation}
	switch {
	case c.AWSAccessKeyID != "":
		resp["aws_temp_credentials"] = map[string]string{
			"access_key_id": c.AWSAccessKeyID, "secret_access_key": c.AWSSecretAccessKey, "session_token": c.AWSSessionToken,
		}
	case c.GCPOAuthToken != "":
		resp["gcp_oauth_token"] = map[string]string{"oauth_token": c.GCPOAuthToken}
	case c.AzureSASToken != "":
		resp["azure_user_delegation_sas"] = map[string]string{"sas_token": c.AzureSASToken}
	case c.AzureAADToken != "":
		resp["azure_aad"] = map[string]string{"aad_token": c.AzureAADToken}
	}
	writeJSON(w, http.StatusOK, resp)
}

func (s *Server) serveOIDCDiscovery(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	enabled := s.clientID != ""
	s.mu.Unlock()
	if !enabled {
		writeError(w, http.StatusNotFound, "NOT_FOUND", "OAuth is not enabled")
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{
		"issuer":                 s.URL + "/oidc",
		"authorization_endpoint": s.URL + "/oidc/v1/authorize",
		"token_endpoint":         s.URL + "/oidc/v1/token",
	})
}

func (s *Server) serveToken(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_request"})
		return
	}
	id, secret, ok := r.BasicAuth()
	if !ok {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	s.mu.Lock()
	good := s.clientID != "" && id == s.clientID && secret == s.clientSecret
	s.mu.Unlock()
	if r.PostForm.Get("grant_type") != "client_credentials" || !good {
		s.record(Request{Method: r.Method, Path: r.URL.Path})
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_client", "error_description": "Client authentication failed"})
		return
	}
	tok := "m2m-" + newUUID()
	s.mu.Lock()
	s.tokens[tok] = true
	s.mu.Unlock()
	s.record(Request{Method: r.Method, Path: r.URL.Path, Authorized: true})
	writeJSON(w, http.StatusOK, map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": 3600, "scope": "all-apis"})
}

// ColumnsFromSchema returns Unity Catalog columns for a schema, with type_json in Spark's
// StructField JSON (column-mapping metadata included) and type_text in Spark's simple form.
func ColumnsFromSchema(s schemadiff.Schema) []Column {
	out := make([]Column, 0, len(s.Fields))
	for _, f := range s.Fields {
		out = append(out, Column{Name: f.Name, TypeText: f.Type.String(), TypeJSON: f.DeltaJSON(), Nullable: f.Nullable})
	}
	return out
}
