// Package doctor checks, before a recovery, everything its steps need from the workspace, the
// SQL warehouse, Unity Catalog and the table's storage, in one pass, and says for each step
// (inspect, reload, verify, cleanup) whether what it needs is met.
//
// Every check reads, except the delete probe: it writes one object of its own under
// <root>/_zerobus/ (create-only, a name no other writer uses) and deletes exactly that object,
// with the version the write returned as precondition. No fallback file is written, read
// beyond one footer, or deleted.
package doctor

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/zbrecover/zbrecover/databricks"
	"github.com/zbrecover/zbrecover/inspect"
	"github.com/zbrecover/zbrecover/internal/fallback"
	"github.com/zbrecover/zbrecover/internal/jsonout"
	"github.com/zbrecover/zbrecover/internal/redact"
	"github.com/zbrecover/zbrecover/internal/suggest"
	"github.com/zbrecover/zbrecover/internal/textfmt"
	"github.com/zbrecover/zbrecover/schemadiff"
	"github.com/zbrecover/zbrecover/sqlstmt"
	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/tableref"
)

// SchemaVersion is the version of the report's JSON form: that of every JSON document.
const SchemaVersion = jsonout.SchemaVersion

// Status is a check's outcome.
type Status string

// The outcomes. A warning does not stop the step that needs the check; a failure does; a
// check that does not apply is n/a (not needed for this recovery: no --stage-to, credentials
// not used); a skipped check was not run (a check it depends on failed, or it was turned off),
// so that a step needing it is unknown. The text report shows four states, a skipped check
// as n/a; the JSON form keeps skip apart.
const (
	OK   Status = "ok"
	NA   Status = "n/a"
	Warn Status = "warn"
	Fail Status = "fail"
	Skip Status = "skip"
)

// Text is the status as the text report shows it: ok, n/a, warn or fail (a skipped check is
// n/a there, its detail saying it was not run).
func (s Status) Text() string {
	if s == Skip {
		return string(NA)
	}
	return string(s)
}

// The checks, in the order they run.
const (
	CheckIdentity   = "identity"
	CheckWarehouse  = "warehouse"
	CheckTable      = "table"
	CheckPrivileges = "privileges"
	CheckStaging    = "staging"
	CheckVending    = "vended_credentials"
	CheckRead       = "fallback_read"
	CheckPathAccess = "path_access"
	CheckDelete     = "delete"
	CheckCommitTags = "commit_tags"
	// CheckTableFeatures reports row tracking, deletion vectors and change data feed: what
	// undo can name a loaded batch's rows by.
	CheckTableFeatures = "table_features"
)

// Check is one check's outcome. Its Detail starts from what holds: an ok check never reads as
// a failure, and what does not apply is n/a.
type Check struct {
	ID     string `json:"id"`
	Status Status `json:"status"`
	// Detail says what was found.
	Detail string `json:"detail"`
	// Fix says what to do, for a failure or a warning.
	Fix string `json:"fix,omitempty"`
}

// Step is what one step of the recovery needs, and whether it is met.
type Step struct {
	Step string `json:"step"`
	// Status is "ready" (every check the step needs passed or does not apply, warnings
	// allowed), "blocked" (one failed) or "unknown" (none failed, one was skipped).
	Status string `json:"status"`
	// Ready is Status == "ready".
	Ready bool `json:"ready"`
	// Needs are the checks the step needs.
	Needs []string `json:"needs"`
	// Failed are the needed checks that failed; Unknown those skipped.
	Failed  []string `json:"failed"`
	Unknown []string `json:"unknown"`
}

// Report is what doctor found.
type Report struct {
	SchemaVersion int    `json:"schema_version"`
	Table         string `json:"table"`
	Root          string `json:"root,omitempty"`
	Host          string `json:"host,omitempty"`
	// OK is true when no check failed: every step is ready, or unknown for a check that was
	// not run (--no-write-probe).
	OK     bool    `json:"ok"`
	Checks []Check `json:"checks"`
	Steps  []Step  `json:"steps"`
}

// Check returns the check with the id, or nil.
func (r *Report) Check(id string) *Check {
	for i := range r.Checks {
		if r.Checks[i].ID == id {
			return &r.Checks[i]
		}
	}
	return nil
}

// Failed returns the ids of the failed checks.
func (r *Report) Failed() []string {
	var out []string
	for _, c := range r.Checks {
		if c.Status == Fail {
			out = append(out, c.ID)
		}
	}
	return out
}

// stepNeeds says which checks each step needs.
var stepNeeds = []struct {
	step  string
	needs []string
}{
	{"inspect", []string{CheckIdentity, CheckTable, CheckRead}},
	{"reload", []string{CheckIdentity, CheckWarehouse, CheckTable, CheckPrivileges, CheckStaging, CheckRead, CheckPathAccess}},
	{"verify", []string{CheckIdentity, CheckWarehouse, CheckTable, CheckPrivileges}},
	{"cleanup", []string{CheckRead, CheckDelete}},
	{"undo", []string{CheckIdentity, CheckWarehouse, CheckTable, CheckPrivileges}},
}

// Options configure Run.
type Options struct {
	// Spec names the table (a name is required) and, optionally, its root.
	Spec tableref.Spec
	// Prefix is the fallback folder under the root ("" means fallback.Prefix).
	Prefix string
	// StageTo is reload's --stage-to, when the recovery will stage the files.
	StageTo string
	// NoWriteProbe skips the delete probe.
	NoWriteProbe bool
	// Resolver opens the table's storage; its Workspace is the Databricks connection.
	Resolver *tableref.Resolver
	// ProbeName returns the delete probe's object name (tests); default a random one.
	ProbeName func() string
}

// ProbeDir is where the delete probe writes, relative to the table root: next to the fallback
// folder, outside it, so that no listing of fallback files ever sees a probe.
const ProbeDir = "_zerobus/"

// ProbePrefix starts every probe object's name; the leading dot makes it a hidden name, never
// planned by reload even if it were under the fallback folder.
const ProbePrefix = ".zbrecover-doctor-probe-"

type run struct {
	o   Options
	rep *Report
	ws  *tableref.Workspace

	client *databricks.Client
	me     *databricks.Identity
	wh     *databricks.Warehouse
	table  *databricks.TableInfo
	tgt    *tableref.Ref
	first  *inspect.File // the first readable fallback file
	// perms caches Unity Catalog's effective permissions per securable ("type name").
	perms map[string]map[string][]string
}

// Run runs every check and returns the report; it never fails as a whole (a check that cannot
// run is reported as failed or skipped). Only ctx's end makes it stop early.
func Run(ctx context.Context, o Options) *Report {
	r := &run{o: o, rep: &Report{SchemaVersion: SchemaVersion, Table: o.Spec.Table, Checks: []Check{}}}
	if o.Resolver != nil {
		r.ws = o.Resolver.Workspace
	}
	if r.o.Prefix == "" {
		r.o.Prefix = fallback.Prefix
	}
	r.o.Prefix = strings.TrimPrefix(strings.TrimSuffix(r.o.Prefix, "/")+"/", "/")
	for _, c := range []struct {
		id string
		fn func(context.Context) Check
	}{
		{CheckIdentity, r.identity},
		{CheckWarehouse, r.warehouse},
		{CheckTable, r.tableCheck},
		{CheckTableFeatures, r.tableFeatures},
		{CheckPrivileges, r.privileges},
		{CheckStaging, r.staging},
		{CheckVending, r.vending},
		{CheckRead, r.read},
		{CheckPathAccess, r.pathAccess},
		{CheckCommitTags, r.commitTags},
		{CheckDelete, r.deleteProbe},
	} {
		var ch Check
		if ctx.Err() != nil {
			ch = Check{Status: Skip, Detail: "not run: doctor was interrupted"}
		} else {
			ch = c.fn(ctx)
		}
		ch.ID = c.id
		ch.Detail, ch.Fix = redact.String(ch.Detail), redact.String(ch.Fix)
		r.rep.Checks = append(r.rep.Checks, ch)
	}
	r.rep.OK = len(r.rep.Failed()) == 0
	for _, s := range stepNeeds {
		st := Step{Step: s.step, Needs: s.needs, Failed: []string{}, Unknown: []string{}}
		for _, id := range s.needs {
			switch r.rep.Check(id).Status {
			case Fail:
				st.Failed = append(st.Failed, id)
			case Skip:
				st.Unknown = append(st.Unknown, id)
			}
		}
		switch {
		case len(st.Failed) > 0:
			st.Status = "blocked"
		case len(st.Unknown) > 0:
			st.Status = "unknown"
		default:
			st.Status, st.Ready = "ready", true
		}
		r.rep.Steps = append(r.rep.Steps, st)
	}
	r.rep.Root = redact.String(r.rep.Root)
	return r.rep
}

// commitTags says which evidence reload gets for a statement whose answer is lost: whether
// the warehouse takes a commit tag (SET spark.databricks.delta.commitInfo.userMetadata on the
// session), so that a commit names the statement that made it. A warning, not a failure:
// without it reload still works, with weaker evidence.
func (r *run) commitTags(ctx context.Context) Check {
	if c, ok := r.needs(CheckWarehouse); !ok {
		return c
	}
	s, err := r.wh.Session(ctx)
	if err != nil {
		return Check{Status: Warn, Detail: "could not open a session to probe commit tags: " + err.Error()}
	}
	defer s.Close()
	if err := databricks.ProbeTagging(ctx, s, "doctor"); err != nil {
		return Check{Status: Warn, Detail: "the warehouse does not take a commit tag (SET spark.databricks.delta.commitInfo.userMetadata: " +
			databricks.Classify(err).Error() + "): a batch whose answer is lost is settled only when exactly one commit can be its, " +
			"and cleanup keeps such a batch's files until verify --key proves them",
			Fix: "nothing is needed; a warehouse that allows the setting gives each load a tag naming it"}
	}
	return Check{Status: OK, Detail: "the warehouse takes a commit tag: each load's commit names its run, batch and attempt (userMetadata in DESCRIBE HISTORY)"}
}

// needs returns a skip when one of the checks ids failed or was skipped.
func (r *run) needs(ids ...string) (Check, bool) {
	for _, id := range ids {
		if c := r.rep.Check(id); c == nil || c.Status == Fail || c.Status == Skip {
			return Check{Status: Skip, Detail: "not run: it needs the " + id + " check to pass"}, false
		}
	}
	return Check{}, true
}

func (r *run) identity(ctx context.Context) Check {
	if r.ws == nil {
		return Check{Status: Fail, Detail: tableref.ErrNeedsDatabricks.Error(), Fix: "run a build of zbrecover with Databricks support"}
	}
	c, err := r.ws.Client(ctx)
	if err != nil {
		return Check{Status: Fail, Detail: err.Error(), Fix: identityFix}
	}
	r.client = c
	r.rep.Host = c.Host()
	how := fmt.Sprintf("%s auth, %s", orDash(c.AuthType()), profileText(c.Profile()))
	me, err := c.Me(ctx)
	if err != nil {
		return Check{Status: Fail, Detail: fmt.Sprintf("%s (%s)", err, how), Fix: identityFix}
	}
	r.me = me
	d := fmt.Sprintf("%s on %s (%s)", me.UserName, c.Host(), how)
	if me.DisplayName != "" && me.DisplayName != me.UserName {
		d = fmt.Sprintf("%s (%s) on %s (%s)", me.UserName, me.DisplayName, c.Host(), how)
	}
	if !me.Active && me.ID != "" {
		return Check{Status: Warn, Detail: d + "; the workspace reports the identity as inactive", Fix: "ask a workspace admin to activate it"}
	}
	return Check{Status: OK, Detail: d}
}

const identityFix = "set DATABRICKS_HOST and DATABRICKS_TOKEN (or DATABRICKS_CLIENT_ID and DATABRICKS_CLIENT_SECRET), " +
	"or choose a ~/.databrickscfg profile with --profile; a token must be current and issued for this workspace"

func profileText(p string) string {
	if p == "" {
		return "no profile: settings from the environment"
	}
	return "profile " + p
}

func (r *run) warehouse(ctx context.Context) Check {
	if ch, ok := r.needs(CheckIdentity); !ok {
		return ch
	}
	info, infoErr := r.client.WarehouseInfo(ctx)
	if errors.Is(infoErr, databricks.ErrConfig) {
		fix := "pass --warehouse-id (or set DATABRICKS_WAREHOUSE_ID) with the id the SQL Warehouses page shows"
		if choices := r.client.WarehouseChoices(ctx, ""); choices != "" {
			fix += "; " + choices
		}
		return Check{Status: Fail, Detail: infoErr.Error(), Fix: fix}
	}
	if errors.Is(infoErr, databricks.ErrNotFound) {
		id, _ := r.client.WarehouseID()
		fix := "check --warehouse-id or DATABRICKS_WAREHOUSE_ID"
		if choices := r.client.WarehouseChoices(ctx, id); choices != "" {
			fix += "; " + choices
		}
		return Check{Status: Fail, Detail: infoErr.Error(), Fix: fix}
	}
	id, _ := r.client.WarehouseID()
	desc := "SQL warehouse " + id
	state := ""
	if info != nil {
		state = info.State
		desc = fmt.Sprintf("SQL warehouse %s (%q, %s)", info.ID, info.Name, orDash(info.State))
	}
	wh, err := r.ws.Warehouse(ctx)
	if err == nil {
		var res *databricks.Result
		res, err = wh.QueryAll(ctx, sqlstmt.CurrentUser())
		if err == nil {
			r.wh = wh
			d := desc + ": SELECT current_user() answered"
			if len(res.Rows) == 1 && len(res.Rows[0]) == 1 {
				if u, ok := res.Rows[0][0].(string); ok && u != "" {
					d += " " + u
					if r.me != nil && !strings.EqualFold(u, r.me.UserName) {
						return Check{Status: Warn, Detail: d + ", not " + r.me.UserName + " as SCIM Me says",
							Fix: "statements run as another identity than the REST calls; check the warehouse's connection settings"}
					}
				}
			}
			switch {
			case infoErr != nil:
				return Check{Status: Warn, Detail: d + "; the SQL warehouses API could not say its state: " + infoErr.Error()}
			case state != "RUNNING":
				return Check{Status: OK, Detail: d + " (it was " + state + "; the query started it)"}
			}
			return Check{Status: OK, Detail: d}
		}
	}
	fix := "check that the identity has CAN USE on the warehouse, and that it runs (the SQL Warehouses page)"
	switch state {
	case "STOPPED", "STOPPING", "DELETING", "DELETED":
		fix = fmt.Sprintf("the warehouse is %s and a query did not start it: start it (SQL Warehouses page, or `databricks warehouses start %s`), "+
			"or use another one with --warehouse-id; a query starts a stopped warehouse only for an identity that may use it", state, id)
	case "STARTING":
		fix = "the warehouse is still starting: wait until it is RUNNING and run doctor again"
	}
	if infoErr != nil {
		desc += " (its state is unknown: " + infoErr.Error() + ")"
	}
	return Check{Status: Fail, Detail: fmt.Sprintf("%s: a trivial query failed: %v", desc, err), Fix: fix}
}

func (r *run) tableCheck(ctx context.Context) Check {
	if ch, ok := r.needs(CheckIdentity); !ok {
		return ch
	}
	ti, err := r.ws.Table(ctx, r.o.Spec.Table)
	if err != nil {
		fix := "check the table name; Unity Catalog answers not found also when the identity lacks USE CATALOG, USE SCHEMA or any privilege on the table"
		if errors.Is(err, databricks.ErrPermissionDenied) {
			fix = "ask for USE CATALOG on the catalog, USE SCHEMA on the schema and SELECT on the table"
		}
		return Check{Status: Fail, Detail: err.Error(), Fix: fix}
	}
	if err := ti.CheckRecoverable(); err != nil {
		return Check{Status: Fail, Detail: err.Error(), Fix: "name the managed Delta table Zerobus writes to"}
	}
	r.table = ti
	d := fmt.Sprintf("%s: %s %s table at %s", ti.Name, ti.TableType, orDash(ti.DataSourceFormat), ti.StorageLocation)
	if ti.Owner != "" {
		d += ", owner " + ti.Owner
	}
	return Check{Status: OK, Detail: d}
}

// RowTrackingTradeOff is what doctor says of enabling row tracking on a table Zerobus writes
// to: what undo gains, and what enabling costs.
const RowTrackingTradeOff = "with row tracking, zbrecover undo takes back a reload's batch by the stable row IDs its commit assigned, exactly, " +
	"even after OPTIMIZE, UPDATE or MERGE; without it, only while the load's data files are untouched, or by key from the run's keys file (reload --key). " +
	"Enabling it (ALTER TABLE … SET TBLPROPERTIES ('delta.enableRowTracking' = 'true')) is a metadata change that makes every concurrent write fail " +
	"(MetadataChangedException) for its duration, Zerobus' included, and backfills row IDs for the rows already there; " +
	"it must be enabled before the load it should help undo. zbrecover never enables it: plan it with the table's owner at a quiet time"

// tableFeatures reports the table's row tracking, deletion vectors and change data feed, from
// its Unity Catalog properties: a warning when row tracking is off (undo then has weaker
// evidence), never a failure.
func (r *run) tableFeatures(ctx context.Context) Check {
	if ch, ok := r.needs(CheckTable); !ok {
		return ch
	}
	on := func(k string) bool { return strings.EqualFold(r.table.Properties[k], "true") }
	word := func(b bool) string {
		if b {
			return "on"
		}
		return "off"
	}
	rt := on("delta.enableRowTracking") && !on("delta.rowTrackingSuspended")
	d := fmt.Sprintf("row tracking %s, deletion vectors %s, change data feed %s", word(rt), word(on("delta.enableDeletionVectors")), word(on("delta.enableChangeDataFeed")))
	if rt {
		return Check{Status: OK, Detail: d + ": zbrecover undo can take back a reload's batch by its stable row IDs"}
	}
	return Check{Status: Warn, Detail: d + ": zbrecover undo can take back a reload's batch only by its untouched data files or its keys", Fix: RowTrackingTradeOff}
}

// need is one privilege the recovery needs, on one securable.
type need struct {
	typ, name, privilege, forStep string
}

func (r *run) needed() []need {
	n := r.table.Name
	out := []need{
		{databricks.SecurableCatalog, n.Catalog, "USE_CATALOG", "reload and verify"},
		{databricks.SecurableSchema, n.Catalog + "." + n.Schema, "USE_SCHEMA", "reload and verify"},
		{databricks.SecurableTable, n.String(), "SELECT", "reload and verify"},
		{databricks.SecurableTable, n.String(), "MODIFY", "reload"},
	}
	return out
}

// stagingNeeded are the privileges staging to the volume loc needs.
func stagingNeeded(loc storage.Location) []need {
	vol := loc.Catalog + "." + loc.Schema + "." + loc.Volume
	return []need{
		{databricks.SecurableCatalog, loc.Catalog, "USE_CATALOG", "staging"},
		{databricks.SecurableSchema, loc.Catalog + "." + loc.Schema, "USE_SCHEMA", "staging"},
		{databricks.SecurableVolume, vol, "READ_VOLUME", "staging"},
		{databricks.SecurableVolume, vol, "WRITE_VOLUME", "staging"},
	}
}

func (r *run) privileges(ctx context.Context) Check {
	if ch, ok := r.needs(CheckIdentity, CheckTable); !ok {
		return ch
	}
	owner := r.table.Owner != "" && r.mine(r.table.Owner)
	have, missing, grants, err := r.check(ctx, r.needed(), func(nd need) bool {
		return owner && nd.typ == databricks.SecurableTable && nd.name == r.table.Name.String()
	})
	if err != nil {
		return r.privilegesUnknown(err, owner)
	}
	if len(missing) > 0 {
		return Check{Status: Fail, Detail: fmt.Sprintf("Unity Catalog's effective permissions for %s (directly, through its groups or account users) lack %s",
			r.me.UserName, strings.Join(missing, "; ")), Fix: "an owner of the securables runs: " + strings.Join(grants, "; ")}
	}
	return Check{Status: OK, Detail: fmt.Sprintf("%s has %s (Unity Catalog effective permissions)", r.me.UserName, strings.Join(have, ", "))}
}

// mine reports whether principal is the identity, one of its groups, or "account users",
// which every user of the account belongs to.
func (r *run) mine(principal string) bool {
	mine := append([]string{r.me.UserName, "account users"}, r.me.Groups...)
	return slices.ContainsFunc(mine, func(p string) bool { return strings.EqualFold(p, principal) })
}

// check asks Unity Catalog's effective permissions for each need (owned: held through
// ownership, not asked), and returns what the identity has, what it lacks (with the GRANT
// statements that give it), or the first error reading the permissions. Privileges reach the
// identity directly, through its groups, or through "account users": the API is asked for
// every principal and filtered here, its principal filter does not expand group membership.
func (r *run) check(ctx context.Context, needs []need, owned func(need) bool) (have, missing, grants []string, err error) {
	if r.perms == nil {
		r.perms = map[string]map[string][]string{}
	}
	seen := map[string]bool{}
	for _, nd := range needs {
		key := nd.typ + " " + nd.name + " " + nd.privilege
		if seen[key] {
			continue
		}
		seen[key] = true
		if owned(nd) {
			have = append(have, nd.privilege+" (owner)")
			continue
		}
		granted, err := r.granted(ctx, nd.typ, nd.name, nd.privilege)
		if err != nil {
			return nil, nil, nil, err
		}
		if granted {
			have = append(have, nd.privilege+" on "+nd.name)
			continue
		}
		missing = append(missing, fmt.Sprintf("%s on %s %s (for %s)", strings.ReplaceAll(nd.privilege, "_", " "), nd.typ, nd.name, nd.forStep))
		grants = append(grants, fmt.Sprintf("GRANT %s ON %s %s TO %s", strings.ReplaceAll(nd.privilege, "_", " "),
			strings.ToUpper(nd.typ), schemadiff.QuoteName(nd.name), schemadiff.QuoteIdent(r.me.UserName)))
	}
	return have, missing, grants, nil
}

// granted reports whether the identity holds privilege (or ALL PRIVILEGES) on a securable,
// asking Unity Catalog once per securable.
func (r *run) granted(ctx context.Context, typ, name, privilege string) (bool, error) {
	if r.perms == nil {
		r.perms = map[string]map[string][]string{}
	}
	ck := typ + " " + name
	byPrincipal, ok := r.perms[ck]
	if !ok {
		var err error
		if byPrincipal, err = r.client.EffectivePrivileges(ctx, typ, name); err != nil {
			return false, err
		}
		r.perms[ck] = byPrincipal
	}
	for principal, privs := range byPrincipal {
		if r.mine(principal) && (slices.Contains(privs, privilege) || slices.Contains(privs, "ALL_PRIVILEGES")) {
			return true, nil
		}
	}
	return false, nil
}

// maxVolumesChecked bounds the volumes whose permissions the staging check reads to say
// which ones the identity can write.
const maxVolumesChecked = 20

// staging checks the volume reload's --stage-to names: it exists, and the identity may read
// and write it. A volume that does not exist is named so, with the volumes of its schema the
// identity can write; no GRANT is suggested for a volume that is not there.
func (r *run) staging(ctx context.Context) Check {
	if r.o.StageTo == "" {
		return Check{Status: NA, Detail: "not needed: no --stage-to given (path_access says whether reload needs one)"}
	}
	loc, err := storage.Parse(r.o.StageTo)
	if err != nil {
		return Check{Status: Fail, Detail: "--stage-to " + r.o.StageTo + ": " + err.Error(), Fix: "give /Volumes/<catalog>/<schema>/<volume>/<dir>, or an external location's URL"}
	}
	if loc.Scheme != storage.SchemeVolume {
		return Check{Status: NA, Detail: "not checked here: " + r.o.StageTo + " is an external location, written with the " + loc.Scheme +
			" store's own credentials; reload writes a probe object there before it stages anything"}
	}
	if ch, ok := r.needs(CheckIdentity); !ok {
		return ch
	}
	vol := loc.Catalog + "." + loc.Schema + "." + loc.Volume
	if err := r.client.CheckVolume(ctx, loc.Catalog, loc.Schema, loc.Volume); err != nil {
		var me *databricks.MissingVolumeError
		if !errors.As(err, &me) {
			return Check{Status: Warn, Detail: "the volume " + vol + " could not be looked up: " + err.Error(),
				Fix: "reload writes a probe object to the volume before it stages anything, and stops there if it cannot"}
		}
		return r.missingVolume(ctx, loc, me)
	}
	have, missing, grants, err := r.check(ctx, stagingNeeded(loc), func(need) bool { return false })
	if err != nil {
		return Check{Status: Warn, Detail: fmt.Sprintf("the volume %s exists; its permissions could not be read (%v): READ VOLUME and WRITE VOLUME are proved when reload writes its probe object", vol, err),
			Fix: "ask an owner of the volume to confirm READ VOLUME and WRITE VOLUME (SHOW GRANTS ON VOLUME … in SQL)"}
	}
	if len(missing) > 0 {
		return Check{Status: Fail, Detail: fmt.Sprintf("the volume %s exists; Unity Catalog's effective permissions for %s lack %s",
			vol, r.me.UserName, strings.Join(missing, "; ")), Fix: "an owner of the volume runs: " + strings.Join(grants, "; ")}
	}
	return Check{Status: OK, Detail: fmt.Sprintf("reload can stage to %s: the volume exists and %s has %s", r.o.StageTo, r.me.UserName, strings.Join(have, ", "))}
}

// missingVolume is the staging check of a volume Unity Catalog does not know: it says so, and
// names the volumes of the schema the identity can write (the first maxVolumesChecked, by
// their effective permissions), the closest to the name given first.
func (r *run) missingVolume(ctx context.Context, loc storage.Location, me *databricks.MissingVolumeError) Check {
	vol := loc.Catalog + "." + loc.Schema + "." + loc.Volume
	schema := loc.Catalog + "." + loc.Schema
	d := fmt.Sprintf("the volume %s does not exist, or %s may not see it", vol, r.me.UserName)
	create := fmt.Sprintf("create it (CREATE VOLUME %s; the identity then needs READ VOLUME and WRITE VOLUME on it)", vol)
	switch {
	case me.SchemaMissing:
		return Check{Status: Fail, Detail: d + "; the schema " + schema + " is not found either",
			Fix: "check the catalog and schema of --stage-to; Unity Catalog also answers not found when the identity lacks USE CATALOG or USE SCHEMA"}
	case !me.Listed:
		return Check{Status: Fail, Detail: d, Fix: create + ", or name an existing volume in --stage-to"}
	}
	list, checked := r.writable(ctx, schema, me.Volumes)
	which := "the volumes of " + schema + " it can write"
	if !checked {
		which = "the volumes of " + schema + " (whether it can write them could not be read)"
	}
	switch {
	case len(me.Volumes) == 0:
		d += "; " + schema + " has no volume it can see"
	case len(list) == 0:
		d += "; it can write none of the volumes of " + schema + " (" + suggest.List(me.Volumes, 10) + ")"
	default:
		ordered := append(suggest.Closest(loc.Volume, list, 0), list...)
		d += "; " + which + ": " + suggest.List(uniq(ordered), 10)
	}
	fix := create + ", or name an existing volume in --stage-to"
	if close := suggest.Closest(loc.Volume, list, 1); len(close) > 0 {
		alt := loc
		alt.Volume = close[0]
		fix = fmt.Sprintf("did you mean --stage-to %s? Or %s", alt.String(), create)
	}
	return Check{Status: Fail, Detail: d, Fix: fix}
}

// writable returns the volumes of schema (among vols, the first maxVolumesChecked) the
// identity may write, by their effective permissions; checked is false, and vols returned
// whole, when the permissions cannot be read.
func (r *run) writable(ctx context.Context, schema string, vols []string) (out []string, checked bool) {
	for i, v := range vols {
		if i == maxVolumesChecked {
			break
		}
		ok, err := r.granted(ctx, databricks.SecurableVolume, schema+"."+v, "WRITE_VOLUME")
		if err != nil {
			return vols, false
		}
		if ok {
			out = append(out, v)
		}
	}
	return out, true
}

func uniq(s []string) []string {
	var out []string
	for _, x := range s {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

// privilegesUnknown is the report when the effective permissions cannot be read.
func (r *run) privilegesUnknown(err error, owner bool) Check {
	d := fmt.Sprintf("the effective permissions could not be read (%v). What is known: the table lookup worked, so %s may use the catalog and the schema and sees the table", err, r.me.UserName)
	if owner {
		d += "; it owns the table (all privileges on it)"
	} else if r.table.Owner != "" {
		d += "; the table's owner is " + r.table.Owner
	}
	return Check{Status: Warn, Detail: d + "; SELECT and MODIFY are proved only when reload's VALIDATE runs",
		Fix: "ask an owner to confirm SELECT and MODIFY on the table (SHOW GRANTS ON TABLE … in SQL)"}
}

func (r *run) vending(ctx context.Context) Check {
	if ch, ok := r.needs(CheckIdentity, CheckTable); !ok {
		return ch
	}
	loc, locErr := r.rootLocation()
	needed := false
	if locErr == nil && r.o.Resolver != nil {
		mode := r.o.Resolver.StorageAuth
		if mode == "" {
			mode = databricks.StorageAuthAuto
		}
		if v, _, err := databricks.ChooseStorageAuth(mode, true, loc, r.o.Resolver.Env); err == nil {
			needed = v
		}
	}
	_, readErr := r.client.TableCredentials(ctx, r.table.TableID, databricks.OperationRead)
	if readErr != nil {
		if needed {
			return Check{Status: Fail, Detail: "Unity Catalog vends no READ credentials for the table, and the storage is read with them (--storage-auth): " + readErr.Error(),
				Fix: "grant EXTERNAL USE SCHEMA on the schema and enable external data access on the metastore, or use --storage-auth default with the store's own credentials"}
		}
		return Check{Status: NA, Detail: "not needed: the storage is read with the store's own credentials (Unity Catalog vends none for this table: " + shortAPIError(readErr) + ")"}
	}
	_, rwErr := r.client.TableCredentials(ctx, r.table.TableID, databricks.OperationReadWrite)
	if !needed {
		return Check{Status: NA, Detail: "not needed: the storage is read with the store's own credentials (Unity Catalog would vend " +
			map[bool]string{true: "READ credentials only", false: "READ and READ_WRITE credentials"}[rwErr != nil] + " for this table)"}
	}
	if rwErr != nil {
		return Check{Status: OK, Detail: "Unity Catalog vends READ credentials for the table, which inspect and reload read the fallback files with; " +
			"READ_WRITE is refused (read-only, as Unity Catalog documents for managed tables), so cleanup deletes with the store's own credentials"}
	}
	return Check{Status: OK, Detail: "Unity Catalog vends READ and READ_WRITE credentials for the table; inspect and reload read the fallback files with them"}
}

func (r *run) rootLocation() (storage.Location, error) {
	raw := r.o.Spec.Root
	if raw == "" && r.table != nil {
		raw = r.table.StorageLocation
	}
	if raw == "" {
		return storage.Location{}, errors.New("no storage root")
	}
	return storage.Parse(raw)
}

var errStop = errors.New("stop")

// storageSpec is what the storage checks open: the table, or, when Unity Catalog could not
// give it and --root names the root, the root alone (with the store's own credentials).
func (r *run) storageSpec() tableref.Spec {
	s := r.o.Spec
	if r.table == nil && s.Root != "" {
		s.Table = ""
	}
	return s
}

func (r *run) read(ctx context.Context) Check {
	if r.o.Spec.Root == "" {
		if ch, ok := r.needs(CheckIdentity, CheckTable); !ok {
			return ch
		}
	}
	if r.o.Resolver == nil {
		return Check{Status: Fail, Detail: "no storage resolver"}
	}
	tgt, err := r.o.Resolver.Resolve(ctx, r.storageSpec(), tableref.Read)
	if err != nil {
		return Check{Status: Fail, Detail: err.Error(), Fix: "check the storage credentials (--storage-auth; the store's environment variables), or pass --root"}
	}
	r.tgt = tgt
	r.rep.Root = tgt.Display()
	folder := tgt.Display() + "/" + r.o.Prefix
	var unreadable []string
	totals, err := inspect.Stream(ctx, tgt.Root, inspect.Options{Prefix: r.o.Prefix, Concurrency: 1, ListSplits: 1}, func(fr inspect.FileResult) error {
		if fr.Err != nil || fr.Unreadable() {
			msg := fr.Error
			if fr.Err != nil {
				msg = fr.Err.Error()
			}
			unreadable = append(unreadable, fr.Key+": "+msg)
			if len(unreadable) >= 3 {
				return errStop
			}
			return nil
		}
		f := fr.File
		r.first = &f
		return errStop
	})
	if err != nil && !errors.Is(err, errStop) {
		return Check{Status: Fail, Detail: fmt.Sprintf("listing %s failed: %v", folder, err), Fix: "the storage credentials need list and read access to the table's storage"}
	}
	if r.first != nil {
		d := fmt.Sprintf("listed %s; the footer of %s was read (%s)", folder, r.first.Key, textfmt.Plural(r.first.Rows, "row"))
		if n := len(unreadable); n > 0 {
			d += fmt.Sprintf("; %s %s unreadable first (%s)", textfmt.Plural(n, "other file"), textfmt.Were(n), unreadable[0])
		}
		return Check{Status: OK, Detail: d}
	}
	if len(unreadable) > 0 {
		return Check{Status: Fail, Detail: fmt.Sprintf("listed %s, but no footer could be read: %s", folder, strings.Join(unreadable, "; ")),
			Fix: "the storage credentials need read (GET) access, not only list; zbrecover inspect lists every unreadable file"}
	}
	d := fmt.Sprintf("listed %s: no fallback files (%s); nothing to recover", folder, textfmt.Plural(totals.OtherObjects, "other object"))
	if note, _ := tableref.CheckRoot(ctx, tgt); note != "" {
		return Check{Status: Warn, Detail: d + "; " + note, Fix: "check --root, or the table name"}
	}
	return Check{Status: OK, Detail: d}
}

func (r *run) pathAccess(ctx context.Context) Check {
	if ch, ok := r.needs(CheckWarehouse, CheckTable, CheckRead); !ok {
		return ch
	}
	if r.first == nil {
		return Check{Status: Skip, Detail: "not run: there is no fallback file to read by path"}
	}
	dir, name := path.Split(r.first.Key)
	folder := strings.TrimSuffix(r.tgt.Loc.Join(r.o.Prefix+dir).URL(), "/") + "/"
	stmt := sqlstmt.CopyInto(r.table.Name, folder, "", []string{name}, true)
	_, err := r.wh.QueryAll(ctx, stmt)
	staged := r.o.StageTo != ""
	switch {
	case err == nil:
		d := "the warehouse read " + r.first.Key + " by path (COPY INTO … VALIDATE ALL of that one file passed): reload can load from the fallback folder"
		if staged {
			d += "; --stage-to is not needed"
		}
		return Check{Status: OK, Detail: d}
	case databricks.IsLocationOverlap(err):
		d := "the warehouse may not read the fallback folder by path: Unity Catalog refuses it (LOCATION_OVERLAP: it lies inside the managed table's storage)"
		if sc := r.rep.Check(CheckStaging); staged && sc != nil && (sc.Status == Fail || sc.Status == Skip) {
			// Reload must stage, and the place given cannot be used: no way to the files.
			return Check{Status: Fail, Detail: d + "; reload must load through staged copies, and --stage-to " + r.o.StageTo +
				" cannot be used (the staging check says why)", Fix: "give --stage-to a folder of a volume the identity can write, as the staging check suggests"}
		}
		if staged {
			return Check{Status: OK, Detail: "reload loads through the staged copies in " + r.o.StageTo +
				", which --stage-to makes it write first (the warehouse may not read the fallback folder itself: LOCATION_OVERLAP, it lies inside the managed table's storage)"}
		}
		n := r.table.Name
		to := databricks.StageToSuggestion(n)
		where := "(the volume must exist; the identity needs READ VOLUME and WRITE VOLUME on it; run doctor with the same --stage-to to check them)"
		if vols, err := r.client.Volumes(ctx, n.Catalog, n.Schema); err == nil {
			schema := n.Catalog + "." + n.Schema
			if w, checked := r.writable(ctx, schema, vols); checked && len(w) > 0 {
				to = strings.Replace(to, "<volume>", w[0], 1)
				where = fmt.Sprintf("(the volumes of %s %s can write: %s; run doctor with the same --stage-to to check the one chosen)", schema, r.me.UserName, suggest.List(w, 10))
			} else if checked {
				where = fmt.Sprintf("(%s can write no volume of %s: create one with CREATE VOLUME %s.<name>, then run doctor with the same --stage-to)", r.me.UserName, schema, schema)
			}
		}
		return Check{Status: Fail, Detail: d, Fix: fmt.Sprintf("reload needs --stage-to /Volumes/...: stage the files to a volume the warehouse may read:\n"+
			"zbrecover reload %s --stage-to %s --yes\n%s", n, to, where)}
	}
	se := databricks.Classify(err)
	switch se.Class {
	case databricks.ClassPermissionDenied:
		return Check{Status: Fail, Detail: "the warehouse refused to read " + r.first.Key + " by path: " + err.Error(),
			Fix: "the identity needs SELECT and MODIFY on the table; or stage the files with --stage-to /Volumes/..."}
	case databricks.ClassSchemaMismatch:
		return Check{Status: OK, Detail: "the warehouse read " + r.first.Key + " by path; VALIDATE reported a schema difference (" + err.Error() + "), which reload's projection handles: zbrecover inspect shows it"}
	}
	return Check{Status: Warn, Detail: "the path-access probe (COPY INTO … VALIDATE ALL of " + r.first.Key + ") failed, not for LOCATION_OVERLAP: " + err.Error(),
		Fix: "zbrecover inspect shows whether the file's schema blocks the load; reload's own preflight decides"}
}

func (r *run) deleteProbe(ctx context.Context) Check {
	if r.o.NoWriteProbe {
		return Check{Status: Skip, Detail: "not run (--no-write-probe): whether cleanup may delete is unknown"}
	}
	if ch, ok := r.needs(CheckRead); !ok {
		return ch
	}
	tgt, err := r.o.Resolver.Resolve(ctx, r.storageSpec(), tableref.ReadWrite)
	if err != nil {
		return Check{Status: Fail, Detail: "the storage cannot be opened for deleting: " + err.Error(),
			Fix: "cleanup deletes with the store's own credentials: vended credentials are read-only on managed tables; use --storage-auth default with credentials that may delete in the table's storage"}
	}
	name := ""
	if r.o.ProbeName != nil {
		name = r.o.ProbeName()
	} else {
		name = ProbePrefix + randomHex()
	}
	key, err := ProbeDelete(ctx, tgt.Root, ProbeDir+name)
	var pe *ProbeError
	switch {
	case err == nil:
		return Check{Status: OK, Detail: fmt.Sprintf("wrote and deleted the probe object %s/%s (create-only, deleted at the version written); no other object was touched", tgt.Display(), key)}
	case errors.As(err, &pe) && pe.Stage == "write":
		return Check{Status: Warn, Detail: "could not test delete: writing the probe object was refused: " + err.Error(),
			Fix: "cleanup needs delete permission on the table's storage: check it with the storage owner, or run doctor with credentials that may write and delete there"}
	case errors.As(err, &pe) && pe.Stage == "delete":
		return Check{Status: Fail, Detail: err.Error(),
			Fix: fmt.Sprintf("cleanup needs delete permission on the table's storage; remove the probe object %s/%s by hand", tgt.Display(), key)}
	}
	return Check{Status: Fail, Detail: err.Error(), Fix: "cleanup needs delete permission on the table's storage"}
}

// ProbeError is a failed delete probe; Stage is "write" or "delete".
type ProbeError struct {
	Stage, Key string
	Err        error
}

func (e *ProbeError) Error() string {
	return fmt.Sprintf("delete probe: %s %s: %v", e.Stage, e.Key, e.Err)
}

func (e *ProbeError) Unwrap() error { return e.Err }

// probeBody is the probe object's content.
const probeBody = "zbrecover doctor: a probe of delete permission; it is deleted at once and may be removed\n"

// ProbeDelete checks that b may delete, touching no object but its own: it writes key
// create-only (an existing object of that name fails the write, ErrExist, and is left alone),
// then deletes key with the version the write returned as precondition, and checks it is gone.
// It returns key. A write failure is a *ProbeError with Stage "write" (nothing was deleted);
// a delete failure one with Stage "delete" (the probe object may remain).
func ProbeDelete(ctx context.Context, b storage.Backend, key string) (string, error) {
	p, ok := storage.AsPutter(b)
	if !ok {
		return key, &ProbeError{Stage: "write", Key: key, Err: storage.ErrNotSupported}
	}
	oi, err := p.Put(ctx, key, strings.NewReader(probeBody), int64(len(probeBody)), storage.PutOptions{CreateOnly: true})
	if err != nil {
		return key, &ProbeError{Stage: "write", Key: key, Err: err}
	}
	cond := oi.Version()
	if cond.IsZero() {
		cond.Size = int64(len(probeBody))
	}
	if err := b.Delete(ctx, key, cond); err != nil {
		return key, &ProbeError{Stage: "delete", Key: key, Err: err}
	}
	if _, err := b.Stat(ctx, key); !errors.Is(err, storage.ErrNotExist) {
		if err == nil {
			err = errors.New("the object is still there after the delete")
		}
		return key, &ProbeError{Stage: "delete", Key: key, Err: err}
	}
	return key, nil
}

func randomHex() string {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		return fmt.Sprint(time.Now().UnixNano())
	}
	return hex.EncodeToString(b)
}

// shortAPIError is a REST error without its advice, for a detail that gives its own.
func shortAPIError(err error) string {
	var ae *databricks.APIError
	if !errors.As(err, &ae) {
		return err.Error()
	}
	s := ae.Kind.Error()
	if ae.StatusCode != 0 {
		s += fmt.Sprintf(", HTTP %d", ae.StatusCode)
	}
	if ae.ErrorCode != "" {
		s += " " + ae.ErrorCode
	}
	if m := strings.TrimRight(ae.Message, ". \n"); m != "" {
		s += ": " + m
	}
	return s
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
