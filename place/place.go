// Package place holds the one rule every place zbrecover writes to passes before anything is
// written there: a staging location (--stage-to), an archive (--archive-to), a keys place
// (--keys-to) and a remote journal (--journal).
//
// A place is a storage.Location compared as a value (storage.Location.Equal and Contains: two
// spellings of one place are one place). Check refuses a candidate that is the same as, lies
// inside or contains:
//
//   - the table's root, and so its fallback folder (_zerobus/table_rejected_parquets/);
//   - the root of another table Unity Catalog knows (Facts.Others);
//   - the run's staging locations (Facts.Staging), for an archive or a keys place: cleanup
//     deletes the staged copies, and an archive or a keys file there would go with them;
//   - a folder holding a _delta_log folder (a table's root, registered or not): the place
//     itself or an ancestor, probed with one listing each, and what the first page of the
//     place's own listing shows of its descendants;
//
// and a candidate inside any table's _zerobus/ folder or _delta_log/ folder (a path element
// _zerobus or _delta_log), or with a ".." element. Local places are compared as written and
// with their symbolic links resolved; a Unity Catalog volume is compared as its /Volumes
// path and, where Facts.Resolve knows it, as its storage location too.
//
// The package is a leaf: it reads storage through the backends Facts.Open returns and knows
// nothing of tables, journals or commands.
package place

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/zbrecover/zbrecover/internal/redact"
	"github.com/zbrecover/zbrecover/storage"
)

// Role is what a place is used for.
type Role string

// The roles of the places zbrecover writes to.
const (
	Staging Role = "staging"
	Archive Role = "archive"
	Keys    Role = "keys"
	Journal Role = "journal"
)

// Flag returns the command-line flag that names a place of the role.
func (r Role) Flag() string {
	switch r {
	case Staging:
		return "--stage-to"
	case Archive:
		return "--archive-to"
	case Keys:
		return "--keys-to"
	case Journal:
		return "--journal"
	}
	return string(r)
}

// instead says where a place of the role may go.
func (r Role) instead() string {
	switch r {
	case Staging:
		return "stage to a folder of a Unity Catalog volume (/Volumes/<catalog>/<schema>/<volume>/<dir>) or of an external location, outside every table's storage"
	case Archive:
		return "archive to a folder outside every table's storage and outside the run's staging location (a volume folder of its own, or a bucket path of its own)"
	case Keys:
		return "put the keys file in a volume or external location folder outside every table's storage and outside the staging location, or leave --keys-to out to keep it beside the staged copies"
	case Journal:
		return "keep the journal in a folder of its own outside every table's storage, or leave --journal out to use the local state directory"
	}
	return "use a folder outside every table's storage"
}

// Rule names the rule that refused a place.
type Rule string

// The rules.
const (
	// RuleTableRoot: the place is, lies inside or contains the table's root.
	RuleTableRoot Rule = "table-root"
	// RuleOtherTable: the place is, lies inside or contains another table's root that
	// Unity Catalog lists.
	RuleOtherTable Rule = "other-table-root"
	// RuleStaging: an archive or keys place is, lies inside or contains a staging location of
	// the run.
	RuleStaging Rule = "staging-location"
	// RuleFallback: the place lies inside a _zerobus/ folder (a table's fallback folder).
	RuleFallback Rule = "zerobus-folder"
	// RuleDeltaLog: the place is, lies inside or contains a folder holding a _delta_log
	// folder (a table's root), or lies inside a _delta_log folder.
	RuleDeltaLog Rule = "delta-log"
	// RulePath: the place has a ".." element, which a store may or may not resolve.
	RulePath Rule = "path"
)

// ErrRefused is what every refusal wraps.
var ErrRefused = errors.New("the place is refused")

// RefusedError says which rule refused which place, and what to use instead.
type RefusedError struct {
	Role Role
	Rule Rule
	// Place is the candidate, Other the place it was compared with ("" for RuleFallback and
	// RulePath), both as printed (secrets redacted).
	Place, Other string
	// Msg is the whole message.
	Msg string
}

func (e *RefusedError) Error() string { return e.Msg }

// Unwrap makes errors.Is(err, ErrRefused) hold.
func (e *RefusedError) Unwrap() error { return ErrRefused }

// Facts are what a candidate place is compared with.
type Facts struct {
	// Table is the table's storage root.
	Table storage.Location
	// Others are the roots of the other tables Unity Catalog lists (those of the table's
	// schema, for example).
	Others []storage.Location
	// Staging are the run's staging locations: an archive or keys place there is refused.
	// They are not compared with a staging or journal candidate.
	Staging []storage.Location
	// Resolve, when set, returns the other location a place is also reached through: the
	// storage location of a Unity Catalog volume. It answers ok=false when it knows none.
	Resolve func(ctx context.Context, l storage.Location) (storage.Location, bool, error)
	// Open opens a backend at a location for the _delta_log probes (called with the root of
	// a bucket, container or volume). When nil, nothing is probed: only for callers that
	// checked the place with probes before, and for tests of the other rules. Local places
	// are probed through the file system, without Open.
	Open func(ctx context.Context, l storage.Location) (storage.Backend, error)
}

// descendantProbe is how many objects of the candidate's own listing the descendant probe
// looks at (one list request on a cloud store).
const descendantProbe = 1000

// Check refuses cand as a place for role when it is the same as, inside or containing one of
// the places Facts name or a table's root it probes, or inside a _zerobus/ or _delta_log/
// folder. It writes nothing. A refusal is a *RefusedError (errors.Is(err, ErrRefused)); any
// other error is a probe that failed (the place could not be listed).
func Check(ctx context.Context, role Role, cand storage.Location, f Facts) error {
	c := checker{role: role, cand: cand}
	for _, el := range cand.Elements() {
		if el == ".." {
			return c.refuse(RulePath, "", fmt.Sprintf("%s has a \"..\" element, which a store may resolve or take literally", show(cand)))
		}
	}
	candAlias, err := resolve(ctx, f.Resolve, cand)
	if err != nil {
		return err
	}
	if err := c.compare(ctx, RuleTableRoot, "the table's root", []storage.Location{f.Table}, candAlias, nil); err != nil {
		return err
	}
	if err := c.compare(ctx, RuleOtherTable, "another table's root", f.Others, candAlias, nil); err != nil {
		return err
	}
	if role == Archive || role == Keys {
		if err := c.compare(ctx, RuleStaging, "the run's staging location", f.Staging, candAlias, f.Resolve); err != nil {
			return err
		}
	}
	for _, l := range []storage.Location{cand, candAlias} {
		if l.Scheme == "" {
			continue
		}
		for _, el := range l.Elements() {
			switch el {
			case "_zerobus":
				return c.refuse(RuleFallback, "", fmt.Sprintf("%s lies inside a _zerobus/ folder, where Zerobus parks a table's fallback files "+
					"and from which that table's next reload loads them as its own", show(l)))
			case "_delta_log":
				return c.refuse(RuleDeltaLog, "", fmt.Sprintf("%s lies inside a _delta_log/ folder, a table's log", show(l)))
			}
		}
	}
	// A volume is probed through the Files API, not through its storage location: the
	// identity rarely holds credentials for a managed volume's store.
	return c.probe(ctx, f.Open, cand)
}

type checker struct {
	role Role
	cand storage.Location
}

func (c checker) refuse(rule Rule, other, what string) error {
	return &RefusedError{Role: c.role, Rule: rule, Place: show(c.cand), Other: other,
		Msg: redact.String(what + "; " + c.role.instead())}
}

// why says what goes wrong when a place of the role overlaps a place of the rule.
func (c checker) why(rule Rule) string {
	switch rule {
	case RuleTableRoot:
		switch c.role {
		case Archive:
			return "archiving there copies the files onto themselves or into the table's storage, and deleting the originals could delete the only copy"
		case Staging:
			return "the copies would land in the table's own storage, which Unity Catalog refuses to read by path, next to its fallback folder"
		}
		return "zbrecover never writes into a table's storage"
	case RuleOtherTable:
		return "files written there would land in that table's storage, and in its fallback folder be loaded into that table as its own"
	case RuleStaging:
		return "cleanup deletes the staged copies, and what lies among them could go with them"
	case RuleDeltaLog:
		return "zbrecover never writes into a table's storage"
	}
	return ""
}

// compare refuses c.cand when it is, lies inside or contains one of places (also as the
// candidate's alias, through symbolic links for local places, and through a place's own
// alias when resolveOthers is set).
func (c checker) compare(ctx context.Context, rule Rule, what string, places []storage.Location, candAlias storage.Location,
	resolveOthers func(context.Context, storage.Location) (storage.Location, bool, error)) error {
	for _, p := range places {
		if p.Scheme == "" {
			continue
		}
		type pair struct {
			a, b storage.Location
			via  string
		}
		pairs := []pair{{c.cand, p, ""}}
		if ra, rp := resolveLinks(c.cand), resolveLinks(p); !ra.Equal(c.cand) || !rp.Equal(p) {
			pairs = append(pairs, pair{ra, rp, " (through a symbolic link)"})
		}
		if candAlias.Scheme != "" {
			pairs = append(pairs, pair{candAlias, p, " (through the volume's storage location " + show(candAlias) + ")"})
		}
		if resolveOthers != nil {
			pa, err := resolve(ctx, resolveOthers, p)
			if err != nil {
				return err
			}
			if pa.Scheme != "" {
				pairs = append(pairs, pair{c.cand, pa, " (through its volume's storage location " + show(pa) + ")"})
				if candAlias.Scheme != "" {
					pairs = append(pairs, pair{candAlias, pa, " (through the volumes' storage locations)"})
				}
			}
		}
		for _, pr := range pairs {
			rel := ""
			switch {
			case pr.a.Equal(pr.b):
				rel = "is"
			case pr.b.Contains(pr.a):
				rel = "lies inside"
			case pr.a.Contains(pr.b):
				rel = "contains"
			default:
				continue
			}
			return c.refuse(rule, show(p), fmt.Sprintf("%s %s %s%s (%s): %s", show(c.cand), rel, what, pr.via, show(p), c.why(rule)))
		}
	}
	return nil
}

// resolve returns l's alias through fn, or the zero Location.
func resolve(ctx context.Context, fn func(context.Context, storage.Location) (storage.Location, bool, error), l storage.Location) (storage.Location, error) {
	if fn == nil || l.Scheme != storage.SchemeVolume {
		return storage.Location{}, nil
	}
	a, ok, err := fn(ctx, l)
	if err != nil {
		return storage.Location{}, fmt.Errorf("find the storage location of the volume %s: %w", show(l), err)
	}
	if !ok {
		return storage.Location{}, nil
	}
	return a, nil
}

// show is a location as messages print it: its secrets redacted.
func show(l storage.Location) string { return redact.String(l.String()) }

// resolveLinks returns a local location with the symbolic links of the longest part of its
// path that exists resolved; any other location as it is.
func resolveLinks(l storage.Location) storage.Location {
	if l.Scheme != "file" {
		return l
	}
	p := filepath.Clean(l.Path)
	rest := ""
	for {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			out := l
			out.Path = filepath.Join(r, rest)
			return out
		}
		parent := filepath.Dir(p)
		if parent == p {
			return l
		}
		rest = filepath.Join(filepath.Base(p), rest)
		p = parent
	}
}

// probe refuses l when it, an ancestor of it in its store, or (as far as the first page of
// its listing shows) a folder below it holds a _delta_log folder.
func (c checker) probe(ctx context.Context, open func(context.Context, storage.Location) (storage.Backend, error), l storage.Location) error {
	if l.Scheme == "file" {
		return c.probeLocal(l)
	}
	if open == nil {
		return nil
	}
	root := l
	root.Path = ""
	b, err := open(ctx, root)
	if err != nil {
		return fmt.Errorf("open %s to look for a table's _delta_log there: %w", show(root), err)
	}
	els := l.Elements()
	// l itself first (an error there is the caller's to know), then its ancestors, nearest
	// first (an ancestor the identity may not list is skipped).
	for n := len(els); n >= 0; n-- {
		dir := strings.Join(els[:n], "/")
		prefix := "_delta_log/"
		if dir != "" {
			prefix = dir + "/" + prefix
		}
		found, err := holds(ctx, b, prefix)
		if err != nil {
			if n == len(els) && !errors.Is(err, storage.ErrNotExist) {
				return fmt.Errorf("look for a table's _delta_log in %s: %w", show(l), err)
			}
			continue
		}
		if found {
			return c.deltaLog(l, root.Join(dir), n == len(els))
		}
	}
	if p, ok := storage.AsPager(b); ok {
		prefix := ""
		if len(els) > 0 {
			prefix = strings.Join(els, "/") + "/"
		}
		page, _, err := p.ListPage(ctx, prefix, "")
		if err != nil {
			return nil // the place is new or may not be listed: nothing below it is known
		}
		for i, o := range page {
			if i == descendantProbe {
				break
			}
			if dir, ok := deltaLogDir(strings.TrimPrefix(o.Key, prefix)); ok {
				return c.deltaLog(l, l.Join(dir), false)
			}
		}
	}
	return nil
}

// deltaLog is the refusal of l because table (l, an ancestor or a descendant) holds a
// _delta_log folder.
func (c checker) deltaLog(l, table storage.Location, self bool) error {
	switch {
	case self:
		return c.refuse(RuleDeltaLog, show(table), fmt.Sprintf("%s holds a _delta_log folder: it is a table's root; %s", show(c.cand), c.why(RuleDeltaLog)))
	case table.Contains(l):
		return c.refuse(RuleDeltaLog, show(table), fmt.Sprintf("%s lies inside a table's root (%s holds a _delta_log folder); %s", show(c.cand), show(table), c.why(RuleDeltaLog)))
	}
	return c.refuse(RuleDeltaLog, show(table), fmt.Sprintf("%s contains a table's root (%s holds a _delta_log folder); %s", show(c.cand), show(table), c.why(RuleDeltaLog)))
}

// deltaLogDir returns the folder of rel (a key relative to the place) that holds a _delta_log
// folder, when rel lies in one.
func deltaLogDir(rel string) (string, bool) {
	els := strings.Split(rel, "/")
	for i, el := range els[:len(els)-1] {
		if el == "_delta_log" {
			return strings.Join(els[:i], "/"), true
		}
	}
	return "", false
}

var errFound = errors.New("found")

// holds reports whether b lists anything under prefix.
func holds(ctx context.Context, b storage.Backend, prefix string) (bool, error) {
	err := b.List(ctx, prefix, func(storage.ObjectInfo) error { return errFound })
	if errors.Is(err, errFound) {
		return true, nil
	}
	return false, err
}

// probeLocal is probe for a local folder, through the file system (links resolved).
func (c checker) probeLocal(l storage.Location) error {
	r := resolveLinks(l)
	isDir := func(p string) bool {
		fi, err := os.Stat(p)
		return err == nil && fi.IsDir()
	}
	for p, self := filepath.Clean(r.Path), true; ; self = false {
		if isDir(filepath.Join(p, "_delta_log")) {
			t := r
			t.Path = p
			return c.deltaLog(r, t, self)
		}
		parent := filepath.Dir(p)
		if parent == p {
			break
		}
		p = parent
	}
	seen := 0
	var found string
	stop := errors.New("stop")
	_ = filepath.WalkDir(r.Path, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if seen++; seen > descendantProbe {
			return stop
		}
		if d.IsDir() && d.Name() == "_delta_log" && p != filepath.Join(r.Path, "_delta_log") {
			found = filepath.Dir(p)
			return stop
		}
		return nil
	})
	if found != "" {
		t := r
		t.Path = found
		return c.deltaLog(r, t, false)
	}
	return nil
}
