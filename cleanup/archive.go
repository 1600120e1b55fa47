package cleanup

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/zbrecover/zbrecover/internal/redact"
	"github.com/zbrecover/zbrecover/journal"
	"github.com/zbrecover/zbrecover/storage"
)

// ErrArchiveLocation is returned (wrapped) for an --archive-to location where a copy would
// not be a second copy, or would plant files where a table reads them.
var ErrArchiveLocation = errors.New("the archive location is refused")

// CheckArchive refuses an archive location (a URL, its query ignored) that is the same as,
// inside or containing one of the places cleanup must never write to or count on: the
// table's root (and so its fallback folder: archiving there copies a file onto itself, and
// deleting the original deletes the only copy), a staging location of the run, or the root
// of another table (whose fallback folder the copies would become). Local folders are
// compared as named and with their symbolic links resolved, so that a link to the table's
// root is the table's root.
func CheckArchive(archive, root string, staging, otherTables []string) error {
	check := func(what, loc string) error {
		for _, pair := range [][2]string{{archive, loc}, {resolveLinks(archive), resolveLinks(loc)}} {
			a, l := urlKey(pair[0]), urlKey(pair[1])
			via := ""
			if pair[0] != archive {
				via = " (through a symbolic link)"
			}
			switch {
			case l == "" || a == "":
				return nil
			case a == l:
				return fmt.Errorf("%w: %s is %s%s", ErrArchiveLocation, redact.String(archive), what, via)
			case strings.HasPrefix(a, l):
				return fmt.Errorf("%w: %s lies inside %s (%s)%s", ErrArchiveLocation, redact.String(archive), what, redact.String(loc), via)
			case strings.HasPrefix(l, a):
				return fmt.Errorf("%w: %s contains %s (%s)%s", ErrArchiveLocation, redact.String(archive), what, redact.String(loc), via)
			}
		}
		return nil
	}
	if err := check("the table's root", root); err != nil {
		return err
	}
	for _, s := range staging {
		if err := check("the run's staging location", s); err != nil {
			return err
		}
	}
	for _, t := range otherTables {
		if err := check("another table's root", t); err != nil {
			return err
		}
	}
	return nil
}

// resolveLinks returns a local location (a file:// URL or an absolute path) with the
// symbolic links of the longest part of its path that exists resolved; any other location as
// it is.
func resolveLinks(u string) string {
	p := stripQuery(strings.TrimSpace(u))
	if rest, ok := strings.CutPrefix(p, "file://"); ok {
		p = rest
	}
	if !strings.HasPrefix(p, "/") || strings.HasPrefix(u, "dbfs:") {
		return u
	}
	p = filepath.Clean(filepath.FromSlash(p))
	rest := ""
	for {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return "file://" + filepath.ToSlash(filepath.Join(r, rest))
		}
		parent := filepath.Dir(p)
		if parent == p {
			return u
		}
		rest = filepath.Join(filepath.Base(p), rest)
		p = parent
	}
}

// urlKey is a location compared as a folder: no query, one trailing "/", a path (a local
// folder or a volume path, dbfs: or not) as a file:// URL, no empty or "." element.
func urlKey(s string) string {
	s = strings.TrimPrefix(stripQuery(strings.TrimSpace(s)), "dbfs:")
	if s == "" {
		return ""
	}
	if strings.HasPrefix(s, "/") {
		s = "file://" + s
	}
	if scheme, p, ok := strings.Cut(s, "://"); ok {
		host, rest, _ := strings.Cut(p, "/")
		var els []string
		for _, el := range strings.Split(rest, "/") {
			if el != "" && el != "." {
				els = append(els, el)
			}
		}
		s = scheme + "://" + host + "/" + strings.Join(els, "/")
	}
	return strings.TrimRight(s, "/") + "/"
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
