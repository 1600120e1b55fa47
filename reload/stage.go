package reload

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/zbrecover/zbrecover/journal"
	"github.com/zbrecover/zbrecover/storage"
)

// ErrSecondPath is returned (wrapped) when a run would load a file through another path than
// the one it was planned or loaded through: COPY INTO tracks loaded files by path, so a copy
// under another path would be loaded again.
var ErrSecondPath = errors.New("a file would be loaded through a second path")

// Stage copies the planned files to a place the warehouse may read (a Unity Catalog volume or
// an external location) before they are loaded, when Unity Catalog refuses path access to
// the fallback folder inside the managed table's storage.
type Stage struct {
	// Src is the table root the originals are read from.
	Src storage.Backend
	// Dst is the staging location; a file's copy has the file's key relative to the fallback
	// folder (its folders kept).
	Dst storage.Backend
	// Location is Dst as SQL and the journal name it (a /Volumes/… path or a URL without
	// secrets).
	Location string
	// Concurrency bounds the copies in flight (default 16).
	Concurrency int
	// SrcIdentity and DstIdentity say which credentials read the originals and write the
	// copies, for errors ("the vended READ credentials of main.sales.orders").
	SrcIdentity, DstIdentity string
	// Progress, when set, is told the files staged so far (copied or reused) and the total
	// of this staging step, after each file.
	Progress func(done, total int)
}

// stage copies the files that have no verified copy yet and records the mapping in the
// journal before any statement reads the copies. A copy the journal records is reused when
// its size is still the recorded one; any other is made again.
func (r *runner) stage(ctx context.Context, files []journal.File) error {
	s := r.o.Stage
	conc := s.Concurrency
	if conc <= 0 {
		conc = 16
	}
	known := map[string]int64{} // original key → verified staged size
	if r.st != nil {
		for _, st := range r.st.Staging {
			if st.Location != s.Location {
				continue
			}
			for _, f := range st.Files {
				if st.Removed {
					delete(known, f.Source)
				} else {
					known[f.Source] = f.Size
				}
			}
		}
	}
	var (
		mu     sync.Mutex
		staged []journal.Staged
		reused int
	)
	progress := func() {
		if s.Progress != nil {
			s.Progress(len(staged)+reused, len(files))
		}
	}
	mu.Lock()
	progress()
	mu.Unlock()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(conc)
	for _, f := range files {
		if err := gctx.Err(); err != nil {
			break
		}
		g.Go(func() error {
			key := strings.TrimPrefix(f.Key, r.o.Prefix)
			if size, ok := known[f.Key]; ok && size == f.Size {
				if o, err := s.Dst.Stat(gctx, key); err == nil && o.Size == f.Size {
					mu.Lock()
					reused++
					progress()
					mu.Unlock()
					return nil
				}
			}
			o, err := storage.CopyObject(gctx, s.Src, f.Key, s.Dst, key, f.Precondition(), storage.PutOptions{})
			if err != nil {
				return fmt.Errorf("stage %s to %s (originals read with %s, copies written with %s): %w",
					f.Key, s.Location, orDefault(s.SrcIdentity, "the store's credentials"), orDefault(s.DstIdentity, "the store's credentials"), err)
			}
			if o.Size != f.Size {
				return fmt.Errorf("stage %s: the copy has %d bytes, the original %d", f.Key, o.Size, f.Size)
			}
			sum := ""
			if o.MD5 != "" {
				sum = "md5:" + o.MD5
			}
			mu.Lock()
			staged = append(staged, journal.Staged{Source: f.Key, Key: key, Size: o.Size, Checksum: sum})
			progress()
			mu.Unlock()
			return nil
		})
	}
	err := g.Wait()
	// Record what was copied, even after a failure: a re-run then reuses those copies.
	for i := 0; i < len(staged); i += 1000 {
		chunk := staged[i:min(i+1000, len(staged))]
		if jerr := r.w.Append(context.WithoutCancel(ctx), journal.Record{Kind: journal.KindStaging,
			Staging: &journal.Staging{Location: s.Location, Files: chunk}}); jerr != nil && err == nil {
			err = jerr
		}
	}
	r.o.Log.Info("staged", "location", s.Location, "copied", len(staged), "reused", reused)
	r.rep.Staged += len(staged)
	r.rep.StagedReused += reused
	if err == nil && ctx.Err() != nil {
		err = fmt.Errorf("%w while staging", ErrInterrupted)
	}
	return err
}

// checkSource refuses batches of an earlier process that read another folder than this
// process's source: a file is loaded through one path only, ever.
func (r *runner) checkSource(sql string, n int) error {
	if r.o.Source == "" || strings.Contains(sql, "FROM '"+r.o.Source) {
		return nil
	}
	return fmt.Errorf("batch %d was planned to load from another location than %s (%s…): %w; re-run with the same --stage-to as that run",
		n, r.o.Source, truncateSQL(sql), ErrSecondPath)
}

func truncateSQL(s string) string {
	if len(s) > 160 {
		return s[:160]
	}
	return s
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
