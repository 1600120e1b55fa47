package databricks

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/databricks/databricks-sdk-go/service/catalog"
	"github.com/databricks/databricks-sdk-go/service/iam"
	"github.com/databricks/databricks-sdk-go/service/sql"

	"github.com/zbrecover/zbrecover/internal/suggest"
)

// Identity is who the workspace says the resolved credentials belong to (SCIM Me).
type Identity struct {
	// UserName is the user's e-mail, or a service principal's application id.
	UserName    string
	DisplayName string
	ID          string
	Active      bool
	// Groups are the display names of the groups the identity belongs to directly.
	Groups []string
}

// Me asks the workspace who the credentials belong to (GET /api/2.0/preview/scim/v2/Me).
// Errors wrap ErrUnauthenticated, ErrPermissionDenied, ErrUnreachable or ErrRejected.
func (c *Client) Me(ctx context.Context) (*Identity, error) {
	u, err := iam.NewCurrentUser(c.api).Me(ctx)
	if err != nil {
		return nil, classifyAPI("who am I (SCIM Me)", c.cfg.Host, c.cfg.AuthType, err, apiHints{
			notFound: "the workspace has no SCIM Me endpoint; check that DATABRICKS_HOST is a workspace URL",
			denied:   "the credentials may not read their own identity; check the token's scopes",
		})
	}
	id := &Identity{UserName: u.UserName, DisplayName: u.DisplayName, ID: u.Id, Active: u.Active}
	for _, g := range u.Groups {
		if g.Display != "" {
			id.Groups = append(id.Groups, g.Display)
		}
	}
	sort.Strings(id.Groups)
	return id, nil
}

// Profile returns the ~/.databrickscfg profile the configuration came from ("" when none).
func (c *Client) Profile() string { return c.cfg.Profile }

// WarehouseInfo is what the SQL warehouses API says about the run's warehouse.
type WarehouseInfo struct {
	ID    string
	Name  string
	State string // RUNNING, STARTING, STOPPED, STOPPING, DELETING, DELETED
	Type  string // PRO, CLASSIC
	// Serverless is true for a serverless warehouse.
	Serverless   bool
	AutoStopMins int
}

// WarehouseID returns the id of the run's SQL warehouse: the configured id, else the last
// element of an HTTP path of the form /sql/1.0/warehouses/<id>. It fails with ErrConfig when
// no warehouse is configured, and with ErrUnsupported for an HTTP path of another form (a
// cluster's).
func (c *Client) WarehouseID() (string, error) {
	p, err := c.HTTPPath()
	if err != nil {
		return "", err
	}
	const prefix = "/sql/1.0/warehouses/"
	if id, ok := strings.CutPrefix(strings.TrimSuffix(p, "/"), prefix); ok && id != "" && !strings.Contains(id, "/") {
		return id, nil
	}
	if id := c.cfg.WarehouseID; id != "" && c.opts.HTTPPath == "" {
		return id, nil
	}
	return "", fmt.Errorf("%w: the HTTP path %s does not name a SQL warehouse (/sql/1.0/warehouses/<id>)", ErrUnsupported, p)
}

// WarehouseInfo asks the SQL warehouses API for the run's warehouse
// (GET /api/2.0/sql/warehouses/<id>). Errors wrap ErrConfig (no warehouse configured),
// ErrNotFound, ErrPermissionDenied, ErrUnauthenticated or ErrUnreachable.
func (c *Client) WarehouseInfo(ctx context.Context) (*WarehouseInfo, error) {
	id, err := c.WarehouseID()
	if err != nil {
		return nil, err
	}
	w, err := sql.NewWarehouses(c.api).Get(ctx, sql.GetWarehouseRequest{Id: id})
	if err != nil {
		return nil, classifyAPI("get sql warehouse "+id, c.cfg.Host, c.cfg.AuthType, err, apiHints{
			notFound: "check --warehouse-id or DATABRICKS_WAREHOUSE_ID (the SQL Warehouses page lists the ids)",
			denied:   "the identity needs CAN USE on the SQL warehouse",
		})
	}
	return &WarehouseInfo{ID: w.Id, Name: w.Name, State: string(w.State), Type: string(w.WarehouseType),
		Serverless: w.EnableServerlessCompute, AutoStopMins: w.AutoStopMins}, nil
}

// Warehouses lists the SQL warehouses the identity can see (GET /api/2.0/sql/warehouses).
// Errors wrap ErrPermissionDenied, ErrUnauthenticated, ErrRejected or ErrUnreachable.
func (c *Client) Warehouses(ctx context.Context) ([]WarehouseInfo, error) {
	list, err := sql.NewWarehouses(c.api).ListAll(ctx, sql.ListWarehousesRequest{})
	if err != nil {
		return nil, classifyAPI("list the sql warehouses", c.cfg.Host, c.cfg.AuthType, err, apiHints{
			notFound: "the workspace does not offer the SQL warehouses API",
			denied:   "the identity may not list the SQL warehouses",
		})
	}
	out := make([]WarehouseInfo, 0, len(list))
	for _, w := range list {
		out = append(out, WarehouseInfo{ID: w.Id, Name: w.Name, State: string(w.State), Type: string(w.WarehouseType),
			Serverless: w.EnableServerlessCompute, AutoStopMins: w.AutoStopMins})
	}
	return out, nil
}

// WarehouseChoices says which SQL warehouses the identity can see, for an error about a
// warehouse that is not configured (id "") or not found (id the one given): a did-you-mean
// over their ids and names, then the list (id, name, state), at most 10. It returns "" when
// the list cannot be read.
func (c *Client) WarehouseChoices(ctx context.Context, id string) string {
	list, err := c.Warehouses(ctx)
	if err != nil {
		return ""
	}
	if len(list) == 0 {
		return "the identity sees no SQL warehouse in this workspace (it needs CAN USE on one)"
	}
	ids := make([]string, len(list))
	byName := map[string]string{}
	var names []string
	descs := make([]string, len(list))
	for i, w := range list {
		ids[i] = w.ID
		descs[i] = fmt.Sprintf("%s (%q, %s)", w.ID, w.Name, orUnknown(w.State))
		if w.Name != "" {
			byName[w.Name] = w.ID
			names = append(names, w.Name)
		}
	}
	msg := "the SQL warehouses the identity can see: " + suggest.List(descs, 10)
	if id == "" {
		return msg
	}
	close := suggest.Closest(id, ids, 3)
	for _, n := range suggest.Closest(id, names, 3) {
		if !slices.Contains(close, byName[n]) {
			close = append(close, byName[n])
		}
	}
	if len(close) > 0 {
		return "did you mean --warehouse-id " + close[0] + "? The" + strings.TrimPrefix(msg, "the")
	}
	return msg
}

// Securable types, as the Unity Catalog permissions APIs name them.
const (
	SecurableCatalog = "catalog"
	SecurableSchema  = "schema"
	SecurableTable   = "table"
	SecurableVolume  = "volume"
)

// EffectivePrivileges returns, per principal, the privileges Unity Catalog says are in effect
// on a securable, granted on it or inherited from its parents
// (GET /api/2.1/unity-catalog/effective-permissions/<type>/<name>). Privileges are spelled as
// the API spells them: SELECT, MODIFY, USE_CATALOG, USE_SCHEMA, READ_VOLUME, WRITE_VOLUME,
// ALL_PRIVILEGES, EXTERNAL_USE_SCHEMA. Errors wrap ErrNotFound, ErrPermissionDenied,
// ErrUnauthenticated or ErrUnreachable.
func (c *Client) EffectivePrivileges(ctx context.Context, securableType, fullName string) (map[string][]string, error) {
	g := catalog.NewGrants(c.api)
	out := map[string][]string{}
	token := ""
	for range 100 {
		resp, err := g.GetEffective(ctx, catalog.GetEffectiveRequest{SecurableType: securableType, FullName: fullName, PageToken: token})
		if err != nil {
			return nil, classifyAPI(fmt.Sprintf("effective permissions on %s %s", securableType, fullName), c.cfg.Host, c.cfg.AuthType, err, apiHints{
				notFound: "Unity Catalog does not know this " + securableType + ", or the identity may not see it",
				denied:   "reading the permissions of a securable needs ownership of it, MANAGE on it, or metastore admin",
			})
		}
		for _, a := range resp.PrivilegeAssignments {
			for _, p := range a.Privileges {
				out[a.Principal] = append(out[a.Principal], string(p.Privilege))
			}
		}
		if resp.NextPageToken == "" || resp.NextPageToken == token {
			break
		}
		token = resp.NextPageToken
	}
	return out, nil
}
