package cleanup

import (
	"context"
	"errors"
	"fmt"

	"github.com/zbrecover/zbrecover/internal/redact"
	"github.com/zbrecover/zbrecover/journal"
	"github.com/zbrecover/zbrecover/place"
	"github.com/zbrecover/zbrecover/storage"
)

// ErrArchiveLocation is returned (wrapped) for an --archive-to location where a copy would
// not be a second copy, or would plant files where a table reads them.
var ErrArchiveLocation = errors.New("the archive location is refused")

// CheckArchive refuses an archive location (a URL or a volume path) that is the same as,
// inside or containing one of the places cleanup must never write to or count on: the
// table's root (and so its fallback folder: archiving there copies a file onto itself, and
// deleting the original deletes the only copy), a staging location of the run, or the root
// of another table (whose fallback folder the copies would become); or that lies in a
// _zerobus/ folder. It is place.Check for an archive: places compared as values (any
// spelling, a query ignored), local folders also with their symbolic links resolved, so that
// a link to the table's root is the table's root. It lists nothing (CheckArchiveHoldsNoTable
// probes an opened archive). A place that does not parse is refused when it is an archive,
// and compared as written otherwise. Errors wrap ErrArchiveLocation (and place.ErrRefused).
func CheckArchive(archive, root string, staging, otherTables []string) error {
	cand, err := storage.Parse(archive)
	if err != nil {
		return fmt.Errorf("%w: %s is not a place zbrecover can compare: %v", ErrArchiveLocation, redact.String(archive), err)
	}
	var facts place.Facts
	known := func(what, s string) (storage.Location, error) {
		l, err := storage.Parse(s)
		if err == nil {
			return l, nil
		}
		if overlaps(archive, s) {
			return l, fmt.Errorf("%w: %s is, lies inside or contains %s (%s)", ErrArchiveLocation, redact.String(archive), what, redact.String(s))
		}
		return storage.Location{}, nil
	}
	if facts.Table, err = known("the table's root", root); err != nil {
		return err
	}
	for _, s := range staging {
		l, err := known("the run's staging location", s)
		if err != nil {
			return err
		}
		facts.Staging = append(facts.Staging, l)
	}
	for _, s := range otherTables {
		l, err := known("another table's root", s)
		if err != nil {
			return err
		}
		facts.Others = append(facts.Others, l)
	}
	if err := place.Check(context.Background(), place.Archive, cand, facts); err != nil {
		return fmt.Errorf("%w: %w", ErrArchiveLocation, err)
	}
	return nil
}

// CheckArchiveHoldsNoTable refuses an archive location that is itself a Delta table's root
// (it has a _delta_log folder).
func CheckArchiveHoldsNoTable(ctx context.Context, archive storage.Backend) error {
	found := false
	err := archive.List(ctx, "_delta_log/", func(storage.ObjectInfo) error {
		found = true
		return errStop
	})
	if err != nil && !errors.Is(err, errStop) && !errors.Is(err, storage.ErrNotExist) {
		return fmt.Errorf("check the archive location %s: %w", archive.Location(), err)
	}
	if found {
		return fmt.Errorf("%w: %s holds a _delta_log folder: it is a table's root", ErrArchiveLocation, archive.Location())
	}
	return nil
}

var errStop = errors.New("stop")

// archiveOne copies t to the archive and checks the copy; it reports whether the original
// may now be deleted, and otherwise fills in res.
func archiveOne(ctx context.Context, b, archive storage.Backend, t Candidate, res *FileResult) bool {
	url := storage.ObjectURL(archive, t.Key)
	o, err := storage.CopyObject(ctx, b, t.Key, archive, t.Key, t.Cond(), storage.PutOptions{CreateOnly: true})
	switch {
	case err == nil:
		if o.Size != t.Size {
			res.Status, res.Reason = journal.DeleteFailed, fmt.Sprintf("archive copy %s has %d bytes, the verified file %d: not deleted", url, o.Size, t.Size)
			return false
		}
		res.Archive = redact.String(url)
		return true
	case errors.Is(err, storage.ErrExist):
		// An earlier process copied it (and was interrupted before the delete), or the
		// archive holds another object under that key: accept only the same bytes.
		same, cerr := storage.SameContent(ctx, b, t.Key, archive, t.Key)
		if cerr != nil {
			res.Status, res.Reason = journal.DeleteFailed, redact.String(fmt.Sprintf("archive %s exists but cannot be compared with the original: %v", url, cerr))
			return false
		}
		if !same {
			res.Status, res.Reason = journal.DeleteFailed, redact.String(fmt.Sprintf("archive %s holds another object under this name (other bytes): not deleted", url))
			return false
		}
		if src, serr := b.Stat(ctx, t.Key); serr != nil || !t.Cond().Matches(src) {
			res.Status, res.Reason = journal.DeleteSkip, "changed since it was verified: kept"
			return false
		}
		res.Archive = redact.String(url)
		return true
	case errors.Is(err, storage.ErrPreconditionFailed):
		res.Status, res.Reason = journal.DeleteSkip, "changed since it was verified: not archived, kept"
	case errors.Is(err, storage.ErrNotExist):
		res.Status, res.Reason = journal.DeleteGone, "already absent"
		if a, serr := archive.Stat(ctx, t.Key); serr == nil && a.Size == t.Size {
			res.Archive = redact.String(url)
		}
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		// Unknown: no status, the re-run copies again.
	default:
		res.Status, res.Reason = journal.DeleteFailed, redact.String("archive: "+err.Error())
	}
	return false
}
