package workspace

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
)

// warehouseStoppedMessage is the refusal statements get while the warehouse is stopped. Its
// text is not Databricks': no published output gives one (see warehouse.Server.SetStopped).
const warehouseStoppedMessage = "The SQL warehouse is stopped and could not be started; start it and try again."

// StopWarehouse stops the SQL warehouse as POST /api/2.0/sql/warehouses/<id>/stop does: the
// SQL warehouses API then reports STOPPED. Databricks starts a stopped warehouse when a
// connection or a query arrives and the identity may use it; the local one models a warehouse
// that does not come up: sessions open, every statement is refused (an ERROR_STATUS without
// SQLSTATE), until StartWarehouse.
func (w *Workspace) StopWarehouse() {
	w.mu.Lock()
	w.stopped = true
	w.mu.Unlock()
	w.wh.SetStopped(warehouseStoppedMessage)
}

// StartWarehouse starts the SQL warehouse again (POST …/start): RUNNING, statements served.
func (w *Workspace) StartWarehouse() {
	w.mu.Lock()
	w.stopped = false
	w.mu.Unlock()
	w.wh.SetStopped("")
}

func (w *Workspace) warehouseState() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return "STOPPED"
	}
	return "RUNNING"
}

// Grant grants principal the privileges (Unity Catalog spelling: SELECT, MODIFY, USE_CATALOG,
// USE_SCHEMA, READ_VOLUME, WRITE_VOLUME, ALL_PRIVILEGES, EXTERNAL_USE_SCHEMA) on the
// securable (catalog, schema, table or volume) named fullName. Registering a table grants the
// workspace user SELECT and MODIFY on it, and USE_CATALOG, USE_SCHEMA, READ_VOLUME and
// WRITE_VOLUME through its staging volume. Grants are what the effective permissions API
// answers; statements do not check them.
func (w *Workspace) Grant(securable, fullName, principal string, privileges ...string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.grants == nil {
		w.grants = map[string]map[string][]string{}
	}
	k := grantKey(securable, fullName)
	if w.grants[k] == nil {
		w.grants[k] = map[string][]string{}
	}
	for _, p := range privileges {
		if !slices.Contains(w.grants[k][principal], p) {
			w.grants[k][principal] = append(w.grants[k][principal], p)
		}
	}
}

// Revoke revokes privileges Grant granted.
func (w *Workspace) Revoke(securable, fullName, principal string, privileges ...string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	k := grantKey(securable, fullName)
	if w.grants[k] == nil {
		return
	}
	w.grants[k][principal] = slices.DeleteFunc(w.grants[k][principal], func(p string) bool { return slices.Contains(privileges, p) })
}

func grantKey(securable, fullName string) string {
	return strings.ToLower(securable) + " " + strings.ToLower(fullName)
}

const effectivePrefix = "/api/2.1/unity-catalog/effective-permissions/"

// serveEffective answers GET /api/2.1/unity-catalog/effective-permissions/<type>/<name>
// [?principal=…]: the privileges granted on the securable and on its parents (a schema's
// catalog, a table's or volume's schema and catalog), the inherited ones with
// inherited_from_type and inherited_from_name, as Unity Catalog reports them. An unknown table
// is 404 TABLE_DOES_NOT_EXIST; other securables are not checked.
func (w *Workspace) serveEffective(rw http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		writeError(rw, http.StatusMethodNotAllowed, "BAD_REQUEST", "Unsupported method "+r.Method)
		return
	}
	rest := strings.TrimPrefix(r.URL.Path, effectivePrefix)
	typ, name, ok := strings.Cut(rest, "/")
	if u, err := url.PathUnescape(name); err == nil {
		name = u
	}
	parts := strings.Split(name, ".")
	depth := map[string]int{"catalog": 1, "schema": 2, "table": 3, "volume": 3}[strings.ToLower(typ)]
	if !ok || depth == 0 || len(parts) != depth {
		writeError(rw, http.StatusBadRequest, "INVALID_PARAMETER_VALUE", fmt.Sprintf("Invalid securable %q %q.", typ, name))
		return
	}
	if strings.EqualFold(typ, "table") && !w.hasTable(name) {
		writeError(rw, http.StatusNotFound, "TABLE_DOES_NOT_EXIST", fmt.Sprintf("Table '%s' does not exist.", name))
		return
	}
	only := r.URL.Query().Get("principal")
	type priv struct {
		Privilege         string `json:"privilege"`
		InheritedFromType string `json:"inherited_from_type,omitempty"`
		InheritedFromName string `json:"inherited_from_name,omitempty"`
	}
	byPrincipal := map[string][]priv{}
	w.mu.Lock()
	for d := depth; d >= 1; d-- {
		styp, sname := strings.ToLower(typ), strings.Join(parts[:d], ".")
		if d < depth {
			styp = []string{"", "CATALOG", "SCHEMA"}[d]
		}
		for principal, ps := range w.grants[grantKey(styp, sname)] {
			if only != "" && principal != only {
				continue
			}
			for _, p := range ps {
				e := priv{Privilege: p}
				if d < depth {
					e.InheritedFromType, e.InheritedFromName = styp, sname
				}
				byPrincipal[principal] = append(byPrincipal[principal], e)
			}
		}
	}
	w.mu.Unlock()
	principals := make([]string, 0, len(byPrincipal))
	for p := range byPrincipal {
		principals = append(principals, p)
	}
	sort.Strings(principals)
	out := []map[string]any{}
	for _, p := range principals {
		out = append(out, map[string]any{"principal": p, "privileges": byPrincipal[p]})
	}
	writeJSON(rw, http.StatusOK, map[string]any{"privilege_assignments": out})
}

func (w *Workspace) hasTable(name string) bool {
	for _, t := range w.ucTables() {
		if strings.EqualFold(t.FullName(), name) {
			return true
		}
	}
	return false
}
