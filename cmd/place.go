package cmd

// The places a run writes to (--stage-to, --keys-to, --archive-to, --journal) and the places
// the journal names (staged copies, keys files): parsed with storage.Parse (a /Volumes path
// is the volume scheme), checked with place.Check before anything is written there, and
// opened with openLocation, one way for every store.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/zbrecover/zbrecover/internal/redact"
	"github.com/zbrecover/zbrecover/place"
	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/tableref"
)

// parsePlace parses the place raw given to role's flag: a usage error when it is no place.
func parsePlace(role place.Role, raw string) (storage.Location, error) {
	if err := checkPathElements(raw); err != nil {
		return storage.Location{}, FlagErrorf("%s %q: %v", role.Flag(), raw, err)
	}
	loc, err := storage.Parse(raw)
	if err != nil {
		return storage.Location{}, FlagErrorf("%s: %v", role.Flag(), err)
	}
	return loc, nil
}

// checkPlace refuses loc, given to role's flag as raw, as a place for role (place.Check)
// against the table's root, the roots of the other tables of its schema that Unity Catalog
// lists, the given staging locations, and the tables its probes find. A refusal is a usage
// error that names the place as given and as compared; nothing is written.
func (f *Factory) checkPlace(ctx context.Context, role place.Role, raw string, loc storage.Location, tgt *tableref.Ref, staging []storage.Location) error {
	facts := f.placeFacts(ctx, tgt, staging)
	if err := place.Check(ctx, role, loc, facts); err != nil {
		if errors.Is(err, place.ErrRefused) {
			return FlagErrorf("%s %q: %v", role.Flag(), redact.String(raw), err)
		}
		return fmt.Errorf("%s: %w", role.Flag(), err)
	}
	return nil
}

// placeFacts are what place.Check compares a place with for tgt; with a nil tgt (a place
// opened before the table is known), only the tables its probes find.
func (f *Factory) placeFacts(ctx context.Context, tgt *tableref.Ref, staging []storage.Location) place.Facts {
	facts := place.Facts{Staging: staging, Resolve: f.volumeStorage(),
		Open: func(ctx context.Context, l storage.Location) (storage.Backend, error) {
			return f.openLocation(ctx, l, f.Global.StorageConfig())
		}}
	if tgt == nil {
		return facts
	}
	facts.Table = tgt.Loc
	for _, r := range f.otherTableRoots(ctx, tgt) {
		l, err := storage.Parse(r)
		if err != nil {
			f.Logger.Info("another table's root cannot be parsed; places are not compared with it", "root", r, "error", err)
			continue
		}
		facts.Others = append(facts.Others, l)
	}
	return facts
}

// volumeStorage returns place.Facts.Resolve for the run: a volume's storage location as
// Unity Catalog records it, asked once per volume. A volume Unity Catalog says nothing of (or
// a run without a workspace) is compared as its /Volumes path only.
func (f *Factory) volumeStorage() func(context.Context, storage.Location) (storage.Location, bool, error) {
	ws := f.workspace()
	if ws == nil {
		return nil
	}
	var mu sync.Mutex
	known := map[string]storage.Location{}
	return func(ctx context.Context, l storage.Location) (storage.Location, bool, error) {
		name := l.Catalog + "." + l.Schema + "." + l.Volume
		mu.Lock()
		root, ok := known[name]
		mu.Unlock()
		if !ok {
			c, err := ws.Client(ctx)
			if err != nil {
				return storage.Location{}, false, err
			}
			raw, err := c.VolumeStorageLocation(ctx, name)
			if err == nil && raw != "" {
				root, err = storage.Parse(raw)
			}
			if err != nil {
				f.Logger.Info("the volume's storage location is unknown: places are compared with its /Volumes path only", "volume", name, "error", err)
			}
			mu.Lock()
			known[name] = root
			mu.Unlock()
		}
		if root.Scheme == "" {
			return storage.Location{}, false, nil
		}
		return root.Join(l.Path), true, nil
	}
}

// openPlace opens the place raw given to role's flag, after place.Check passed it (checkedPlace
// and openChecked): the one way a run opens a place it writes to. staging are the run's
// staging locations (for an archive or a keys place).
func (f *Factory) openPlace(ctx context.Context, role place.Role, raw string, tgt *tableref.Ref, staging []storage.Location) (storage.Location, storage.Backend, error) {
	loc, err := f.checkedPlace(ctx, role, raw, tgt, staging)
	if err != nil {
		return loc, nil, err
	}
	b, err := f.openChecked(ctx, role, loc)
	return loc, b, err
}

// checkedPlace parses raw and refuses it with place.Check; it writes nothing.
func (f *Factory) checkedPlace(ctx context.Context, role place.Role, raw string, tgt *tableref.Ref, staging []storage.Location) (storage.Location, error) {
	loc, err := parsePlace(role, raw)
	if err != nil {
		return loc, err
	}
	return loc, f.checkPlace(ctx, role, raw, loc, tgt, staging)
}

// openChecked opens a place checkedPlace passed. A local folder is created; a volume opens
// through the Files API with the workspace identity; any other store with its own
// credentials.
func (f *Factory) openChecked(ctx context.Context, role place.Role, loc storage.Location) (storage.Backend, error) {
	if loc.Scheme == "file" {
		if err := os.MkdirAll(loc.Path, 0o755); err != nil {
			return nil, fmt.Errorf("%s %s: %w", role.Flag(), loc.Path, err)
		}
	}
	b, err := f.openLocation(ctx, loc, f.Global.StorageConfig())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", role.Flag(), err)
	}
	return b, nil
}

// openStagedLocation opens a place as the journal names it (a staging location, a keys
// file's folder): a /Volumes path or a URL without its query.
func (f *Factory) openStagedLocation(ctx context.Context, raw string) (storage.Backend, error) {
	loc, err := storage.Parse(raw)
	if err != nil {
		return nil, err
	}
	return f.openLocation(ctx, loc, f.Global.StorageConfig())
}

// otherTableRoots are the storage roots of the other tables Unity Catalog lists in the
// table's schema, listed once per run: a place there would plant this table's files as
// theirs. Empty when they cannot be listed (logged).
func (f *Factory) otherTableRoots(ctx context.Context, tgt *tableref.Ref) []string {
	ws := f.workspace()
	if ws == nil || !tgt.HasName {
		return nil
	}
	name := tgt.Name.String()
	if roots, ok := f.tableRoots[name]; ok {
		return roots
	}
	roots, err := ws.SchemaTableRoots(ctx, tgt.Name)
	if err != nil {
		f.Logger.Info("could not list the schema's tables to compare places with their roots", "error", err)
		return nil
	}
	if f.tableRoots == nil {
		f.tableRoots = map[string][]string{}
	}
	f.tableRoots[name] = roots
	return roots
}
