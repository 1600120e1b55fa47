package recovery

// The places a run writes to (--stage-to, --keys-to, --archive-to, --journal) and the places
// the journal names (staged copies, keys files): parsed with storage.Parse (a /Volumes path
// is the volume scheme), checked with place.Check before anything is written there, and
// opened with the run's storage.Opener, one way for every store.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"

	"github.com/zbrecover/zbrecover/databricks"
	"github.com/zbrecover/zbrecover/internal/redact"
	"github.com/zbrecover/zbrecover/journal"
	"github.com/zbrecover/zbrecover/place"
	"github.com/zbrecover/zbrecover/reload"
	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/tableref"
)

// Places opens the places of a run. It is built once per run (it remembers the volumes and
// the schemas' tables it looked up) and shared by every command and table of it.
type Places struct {
	// Opener opens and decorates every place (the run's default storage policy); Config is
	// the run's storage settings.
	Opener storage.Opener
	Config storage.Config
	// Workspace is the Databricks workspace (nil without one): a volume's storage location,
	// the other tables of a schema, the Files API's identity.
	Workspace *tableref.Workspace
	// Concurrency bounds a staging place's copies in flight.
	Concurrency int
	Log         *slog.Logger

	mu      sync.Mutex
	roots   map[string][]string
	volumes map[string]storage.Location
}

func (p *Places) log() *slog.Logger { return reload.Deps{Log: p.Log}.Logger() }

// flagErrorf is a usage error the operator fixes in a flag.
func flagErrorf(format string, a ...any) error {
	return &UsageError{Msg: fmt.Sprintf(format, a...), Flag: true}
}

// Parse parses the place raw given to role's flag: a usage error when it is no place (or has
// an empty, "." or ".." path element).
func (p *Places) Parse(role place.Role, raw string) (storage.Location, error) {
	return ParsePlace(role, raw)
}

// ParsePlace is Places.Parse, for a command that checks a flag before anything is open.
func ParsePlace(role place.Role, raw string) (storage.Location, error) {
	if err := checkPathElements(raw); err != nil {
		return storage.Location{}, flagErrorf("%s %q: %v", role.Flag(), raw, err)
	}
	loc, err := storage.Parse(raw)
	if err != nil {
		return storage.Location{}, flagErrorf("%s: %v", role.Flag(), err)
	}
	return loc, nil
}

// Check refuses loc, given to role's flag as raw, as a place for role (place.Check) against
// the table's root, the roots of the other tables of its schema that Unity Catalog lists, the
// given staging locations, and the tables its probes find. A refusal is a usage error that
// names the place as given and as compared; nothing is written.
func (p *Places) Check(ctx context.Context, role place.Role, raw string, loc storage.Location, tgt *tableref.Ref, staging []storage.Location) error {
	if err := place.Check(ctx, role, loc, p.facts(ctx, tgt, staging)); err != nil {
		if errors.Is(err, place.ErrRefused) {
			return flagErrorf("%s %q: %v", role.Flag(), redact.String(raw), err)
		}
		return fmt.Errorf("%s: %w", role.Flag(), err)
	}
	return nil
}

// Checked parses raw and refuses it with place.Check; it writes nothing.
func (p *Places) Checked(ctx context.Context, role place.Role, raw string, tgt *tableref.Ref, staging []storage.Location) (storage.Location, error) {
	loc, err := p.Parse(role, raw)
	if err != nil {
		return loc, err
	}
	return loc, p.Check(ctx, role, raw, loc, tgt, staging)
}

// OpenChecked opens a place Checked passed. A local folder is created; a volume opens through
// the Files API with the workspace identity; any other store with its own credentials.
func (p *Places) OpenChecked(ctx context.Context, role place.Role, loc storage.Location) (storage.Backend, error) {
	if loc.Scheme == "file" {
		if err := os.MkdirAll(loc.Path, 0o755); err != nil {
			return nil, fmt.Errorf("%s %s: %w", role.Flag(), loc.Path, err)
		}
	}
	b, err := p.Opener.Open(ctx, loc, p.Config)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", role.Flag(), err)
	}
	return b, nil
}

// OpenPlace opens the place raw given to role's flag once place.Check passed it: the one way
// a run opens a place it writes to. staging are the run's staging locations (for an archive
// or a keys place).
func (p *Places) OpenPlace(ctx context.Context, role place.Role, raw string, tgt *tableref.Ref, staging []storage.Location) (storage.Location, storage.Backend, error) {
	loc, err := p.Checked(ctx, role, raw, tgt, staging)
	if err != nil {
		return loc, nil, err
	}
	b, err := p.OpenChecked(ctx, role, loc)
	return loc, b, err
}

// OpenStaged opens a place as the journal names it (a staging location, a keys file's
// folder): a /Volumes path or a URL without its query.
func (p *Places) OpenStaged(ctx context.Context, raw string) (storage.Backend, error) {
	loc, err := storage.Parse(raw)
	if err != nil {
		return nil, err
	}
	return p.Opener.Open(ctx, loc, p.Config)
}

// facts are what place.Check compares a place with for tgt; with a nil tgt (a place opened
// before the table is known), only the tables its probes find.
func (p *Places) facts(ctx context.Context, tgt *tableref.Ref, staging []storage.Location) place.Facts {
	facts := place.Facts{Staging: staging,
		Open: func(ctx context.Context, l storage.Location) (storage.Backend, error) {
			return p.Opener.Open(ctx, l, p.Config)
		}}
	if p.Workspace != nil {
		facts.Resolve = p.volumeStorage
	}
	if tgt == nil {
		return facts
	}
	facts.Table = tgt.Loc
	for _, r := range p.OtherTableRoots(ctx, tgt) {
		l, err := storage.Parse(r)
		if err != nil {
			p.log().Info("another table's root cannot be parsed; places are not compared with it", "root", r, "error", err)
			continue
		}
		facts.Others = append(facts.Others, l)
	}
	return facts
}

// volumeStorage is place.Facts.Resolve for the run: a volume's storage location as Unity
// Catalog records it, asked once per volume. A volume Unity Catalog says nothing of is
// compared as its /Volumes path only.
func (p *Places) volumeStorage(ctx context.Context, l storage.Location) (storage.Location, bool, error) {
	name := l.Catalog + "." + l.Schema + "." + l.Volume
	p.mu.Lock()
	root, ok := p.volumes[name]
	p.mu.Unlock()
	if !ok {
		c, err := p.Workspace.Client(ctx)
		if err != nil {
			return storage.Location{}, false, err
		}
		raw, err := c.VolumeStorageLocation(ctx, name)
		if err == nil && raw != "" {
			root, err = storage.Parse(raw)
		}
		if err != nil {
			p.log().Info("the volume's storage location is unknown: places are compared with its /Volumes path only", "volume", name, "error", err)
		}
		p.mu.Lock()
		if p.volumes == nil {
			p.volumes = map[string]storage.Location{}
		}
		p.volumes[name] = root
		p.mu.Unlock()
	}
	if root.Scheme == "" {
		return storage.Location{}, false, nil
	}
	return root.Join(l.Path), true, nil
}

// OtherTableRoots are the storage roots of the other tables Unity Catalog lists in the table's
// schema, listed once per run: a place there would plant this table's files as theirs. Empty
// when they cannot be listed (logged).
func (p *Places) OtherTableRoots(ctx context.Context, tgt *tableref.Ref) []string {
	if p.Workspace == nil || !tgt.HasName {
		return nil
	}
	name := tgt.Name.String()
	p.mu.Lock()
	roots, ok := p.roots[name]
	p.mu.Unlock()
	if ok {
		return roots
	}
	roots, err := p.Workspace.SchemaTableRoots(ctx, tgt.Name)
	if err != nil {
		p.log().Info("could not list the schema's tables to compare places with their roots", "error", err)
		return nil
	}
	p.mu.Lock()
	if p.roots == nil {
		p.roots = map[string][]string{}
	}
	p.roots[name] = roots
	p.mu.Unlock()
	return roots
}

// OpenStage opens the place given to --stage-to (role place.Staging) or --keys-to
// (place.Keys, compared with staging, the run's staging location) once place.Check passed
// it: a volume path through the Files API (the workspace identity), or a storage URL with the
// store's own credentials.
// Staging claims go to the volume's root (or the parent folder of a URL's), so that two runs
// staging the same table to two folders of one place see each other.
func (p *Places) OpenStage(ctx context.Context, role place.Role, to string, tgt *tableref.Ref, staging ...storage.Location) (*reload.Stage, error) {
	loc, dst, err := p.OpenPlace(ctx, role, to, tgt, staging)
	if err != nil {
		return nil, err
	}
	claimsLoc, ok := loc.Parent()
	if loc.Scheme == storage.SchemeVolume {
		claimsLoc, ok = loc, true
		claimsLoc.Path = ""
	}
	if !ok {
		claimsLoc = loc
	}
	claims, err := p.Opener.Open(ctx, claimsLoc, p.Config)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", role.Flag(), err)
	}
	stage := &reload.Stage{Src: tgt.Root, Dst: dst, Location: strings.TrimSuffix(loc.URL(), "/"), Claims: claims,
		Concurrency: p.Concurrency, SrcIdentity: srcIdentity(tgt)}
	if loc.Scheme != storage.SchemeVolume {
		stage.ClaimsLocation = claimsLoc.String()
		stage.Describe = fmt.Sprintf("%s (the %s store's credentials must write there)", loc, loc.Scheme)
		stage.DstIdentity = "the " + loc.Scheme + " store's own credentials"
		return stage, nil
	}
	if p.Workspace == nil {
		return nil, fmt.Errorf("%s %s: %w", role.Flag(), loc, tableref.ErrNeedsDatabricks)
	}
	c, err := p.Workspace.Client(ctx)
	if err != nil {
		return nil, err
	}
	name := loc.Catalog + "." + loc.Schema + "." + loc.Volume
	if err := c.CheckVolume(ctx, loc.Catalog, loc.Schema, loc.Volume); err != nil {
		var me *databricks.MissingVolumeError
		if errors.As(err, &me) {
			return nil, missingVolume(role, to, loc, me)
		}
		// Another answer (a refusal, an unreachable workspace): the write probe decides.
		p.log().Info("the volume could not be looked up; the write probe decides", "volume", name, "error", err.Error())
	}
	stage.ClaimsLocation = claimsLoc.URL()
	stage.Describe = fmt.Sprintf("volume %s (it must exist, and the workspace identity needs READ VOLUME and WRITE VOLUME on it; CREATE VOLUME %s creates it)", name, name)
	stage.DstIdentity = "the workspace identity (" + c.AuthType() + " auth, Files API)"
	return stage, nil
}

// SchemaVolumes lists the volumes of the table's schema the identity can see (at most 10),
// for a message that suggests staging; nil when they cannot be listed.
func (p *Places) SchemaVolumes(ctx context.Context, name databricks.TableName) []string {
	if p.Workspace == nil || name.Schema == "" {
		return nil
	}
	c, err := p.Workspace.Client(ctx)
	if err != nil {
		return nil
	}
	vols, err := c.Volumes(ctx, name.Catalog, name.Schema)
	if err != nil {
		p.log().Info("the volumes of the schema could not be listed", "schema", name.Catalog+"."+name.Schema, "error", err.Error())
		return nil
	}
	return vols[:min(len(vols), 10)]
}

// missingVolume is the error for a --stage-to or --keys-to volume Unity Catalog does not know:
// what was given, the volumes of its schema with the one probably meant, and the two ways on
// (name an existing volume, or create this one).
func missingVolume(role place.Role, to string, loc storage.Location, me *databricks.MissingVolumeError) error {
	name := loc.Catalog + "." + loc.Schema + "." + loc.Volume
	next := fmt.Sprintf("create it (CREATE VOLUME %s) or name an existing volume", name)
	if close := me.Closest(); len(close) > 0 {
		alt := loc
		alt.Volume = close[0]
		next = fmt.Sprintf("name an existing volume, such as %s %s, or create this one (CREATE VOLUME %s)", role.Flag(), alt.String(), name)
	}
	return fmt.Errorf("%w: %s %s: %v. Nothing was staged or journaled: %s, then run again", reload.ErrStageLocation, role.Flag(), to, me, next)
}

// checkPathElements refuses a path or URL with an empty, "." or ".." element (after the
// scheme and host), so that /Volumes/c/s/v/../../x is not taken for /Volumes/c/x.
func checkPathElements(p string) error {
	rest := p
	if i := strings.Index(rest, "://"); i >= 0 {
		rest = rest[i+3:]
		if j := strings.IndexByte(rest, '/'); j >= 0 {
			rest = rest[j:]
		} else {
			return nil
		}
	}
	if q := strings.IndexByte(rest, '?'); q >= 0 {
		rest = rest[:q]
	}
	for i, el := range strings.Split(strings.Trim(rest, "/"), "/") {
		if el == "." || el == ".." || el == "" && i > 0 {
			return fmt.Errorf("the path has a %q element; name the folder without it", el)
		}
	}
	return nil
}

// srcIdentity says which credentials read the table's storage.
func srcIdentity(tgt *tableref.Ref) string {
	if tgt.Vended {
		return "the READ credentials Unity Catalog vended for " + tgt.TableName()
	}
	return "the " + tgt.Loc.Scheme + " store's own credentials"
}

// OpenJournal opens the journal at url (--journal), or the local state directory when url is
// empty. It checks nothing: a command that writes to it opens it with OpenRunJournal.
func (p *Places) OpenJournal(ctx context.Context, url string) (journal.Store, error) {
	if url == "" {
		dir, err := journal.DefaultDir()
		if err != nil {
			return nil, err
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("journal directory %s: %w", dir, err)
		}
		return journal.OpenDir(dir)
	}
	loc, err := storage.Parse(url)
	if err != nil {
		return nil, fmt.Errorf("--journal: %w", err)
	}
	if loc.Scheme == "file" {
		if err := os.MkdirAll(loc.Path, 0o700); err != nil {
			return nil, fmt.Errorf("--journal %s: %w", loc.Path, err)
		}
		return journal.OpenDir(loc.Path)
	}
	b, err := p.Opener.Open(ctx, loc, p.Config)
	if err != nil {
		return nil, fmt.Errorf("--journal: %w", err)
	}
	return journal.OpenRemote(b)
}

// OpenRunJournal opens the journal a run writes to. Before the table is known (reload opens
// its journal first) the place is checked against the tables the probes find, so that no
// folder is made in a table's storage; CheckJournal checks it against the table once the
// table is known.
func (p *Places) OpenRunJournal(ctx context.Context, url string) (journal.Store, error) {
	if url != "" {
		if _, err := p.Checked(ctx, place.Journal, url, nil, nil); err != nil {
			return nil, err
		}
	}
	return p.OpenJournal(ctx, url)
}

// CheckJournal refuses --journal url (place.Check) when it is, lies inside or contains the
// table's root or another table's, lies in a _zerobus/ folder, or is a table's root its
// probes find: before the journal records anything of the table. The local state directory
// (url "") is never in a table's storage.
func (p *Places) CheckJournal(ctx context.Context, url string, tgt *tableref.Ref) error {
	if url == "" {
		return nil
	}
	_, err := p.Checked(ctx, place.Journal, url, tgt, nil)
	return err
}

// OpenTableJournal opens the journal of a run on tgt once CheckJournal passed it. That check
// holds the probes OpenRunJournal's would make (it compares with the table too), so they are
// not made twice.
func (p *Places) OpenTableJournal(ctx context.Context, url string, tgt *tableref.Ref) (journal.Store, error) {
	if err := p.CheckJournal(ctx, url, tgt); err != nil {
		return nil, err
	}
	return p.OpenJournal(ctx, url)
}

// CloseJournal releases what a journal holds open (the local store's files).
func CloseJournal(s journal.Store) {
	if c, ok := s.(interface{ Close() error }); ok {
		_ = c.Close()
	}
}
