package reload

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/zbrecover/zbrecover/journal"
	"github.com/zbrecover/zbrecover/storage"
)

// ErrSecondPath is returned (wrapped) when a run would load a file through another path than
// the one it was planned or loaded through: COPY INTO tracks loaded files by path, so a copy
// under another path would be loaded again.
var ErrSecondPath = errors.New("a file would be loaded through a second path")

// ErrStageLocation is returned (wrapped) when the staging location cannot be used: it does
// not exist, or the identity may not write there. Nothing was staged or loaded.
var ErrStageLocation = errors.New("the staging location cannot be used")

// Stage copies the planned files to a place the warehouse may read (a Unity Catalog volume or
// an external location) before they are loaded, when Unity Catalog refuses path access to
// the fallback folder inside the managed table's storage.
type Stage struct {
	// Src is the table root the originals are read from.
	Src storage.Backend
	// Dst is the staging location; a file's copy is at its StagedPath under it.
	Dst storage.Backend
	// Location is Dst as SQL and the journal name it (a /Volumes/… path or a URL without
	// secrets).
	Location string
	// Claims, when set, is where staging claims files, create-only, before any statement
	// reads a copy: <Claims>/_zbrecover/claims/<table id>/<hash of the key>.json names the
	// source a file is loaded through, so that a run of another journal staging the same
	// file to another path is refused. For a volume it is the volume's root; ClaimsLocation
	// names it for messages.
	Claims         storage.Backend
	ClaimsLocation string
	// Describe names the staging location for messages about its existence and privileges
	// ("volume main.sales.staging (the workspace identity needs READ VOLUME and WRITE
	// VOLUME)").
	Describe string
	// Concurrency bounds the copies in flight (default 16).
	Concurrency int
	// SrcIdentity and DstIdentity say which credentials read the originals and write the
	// copies, for errors ("the vended READ credentials of main.sales.orders").
	SrcIdentity, DstIdentity string
}

// Claim is a staging claim: the staged copy a fallback file of a table is loaded through.
type Claim struct {
	TableID string `json:"table_id"`
	Key     string `json:"key"` // the file's key under the table root
	// Path is the staged copy the statements read (the staging location and the copy's
	// path, as SQL names it); claims of earlier versions name only Source, a folder.
	Path    string    `json:"path,omitempty"`
	Version string    `json:"version,omitempty"` // the original's version (FileVersion)
	Source  string    `json:"source"`            // the folder URL the statements read it from
	Run     string    `json:"run"`
	Host    string    `json:"host,omitempty"`
	Time    time.Time `json:"time"`
}

// claimKey is where a file's claim is kept under the claims root.
func claimKey(tableID, key string) string {
	sum := sha256.Sum256([]byte(key))
	return "_zbrecover/claims/" + tableID + "/" + hex.EncodeToString(sum[:]) + ".json"
}

// Check makes sure the staging location can be used before anything is copied: it exists
// (or can be created) and the identity can write there. The error wraps ErrStageLocation and
// names the location with what it needs (Describe).
func (s *Stage) Check(ctx context.Context) error {
	p, ok := storage.AsPutter(s.Dst)
	if !ok {
		return fmt.Errorf("%w: %s cannot be written to", ErrStageLocation, s.where())
	}
	probe := "_zbrecover/probe-" + randomSuffix()
	if _, err := p.Put(ctx, probe, bytes.NewReader([]byte("zbrecover")), 9, storage.PutOptions{CreateOnly: true}); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrStageLocation, s.where(), err)
	}
	_ = s.Dst.Delete(ctx, probe, storage.Precondition{})
	return nil
}

func (s *Stage) where() string {
	if s.Describe != "" {
		return s.Describe
	}
	return s.Location
}

func randomSuffix() string {
	return fmt.Sprintf("%d-%d", os.Getpid(), time.Now().UnixNano())
}

// stagedObject is the URL of a staged copy as statements read it.
func (s *Stage) stagedObject(rel string) string {
	return strings.TrimSuffix(s.Location, "/") + "/" + rel
}

// ErrStagedChanged is returned (wrapped) when a staged copy is not what was copied there:
// another object is at its path, or it changed between staging and the statement that reads
// it. The batch is not sent.
var ErrStagedChanged = errors.New("a staged copy is not the file that was staged")

// claimFiles records, create-only, the staged copy each file is loaded through, and refuses
// a file another run (of any journal) claimed through another copy: COPY INTO would load it
// again through a second path. A claim of a run of this journal that never sent a statement
// for the file (it is not among the files the journal shows loaded) follows the run that
// stages it now.
func (r *runner) claimFiles(ctx context.Context, files []journal.File, paths map[string]string) error {
	s := r.o.Stage
	if s == nil || s.Claims == nil {
		return nil
	}
	p, ok := storage.AsPutter(s.Claims)
	if !ok {
		return fmt.Errorf("%w: %s cannot be written to (staging claims)", ErrStageLocation, s.ClaimsLocation)
	}
	loaded := map[string]bool{}
	for _, fs := range r.p.facts.Loaded {
		loaded[fs.Key] = true
	}
	host, _ := os.Hostname()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(s.Concurrency, 4))
	for _, f := range files {
		g.Go(func() error {
			c := Claim{TableID: r.p.tgt.TableID, Key: f.Key, Path: s.stagedObject(paths[f.Key]), Version: FileVersion(f),
				Source: r.p.Source, Run: r.w.Run(), Host: host, Time: r.o.Now().UTC()}
			data, _ := json.Marshal(c)
			key := claimKey(c.TableID, f.Key)
			_, err := p.Put(gctx, key, bytes.NewReader(data), int64(len(data)), storage.PutOptions{CreateOnly: true})
			if err == nil {
				return nil
			}
			if !errors.Is(err, storage.ErrExist) {
				return fmt.Errorf("%w: claim %s at %s: %v", ErrStageLocation, f.Key, s.ClaimsLocation, err)
			}
			raw, rerr := storage.ReadAll(gctx, s.Claims, key, 0, -1)
			var have Claim
			if rerr != nil || json.Unmarshal(raw, &have) != nil {
				return fmt.Errorf("%w: the claim of %s at %s cannot be read (%v): refusing to load it", ErrSecondPath, f.Key, s.ClaimsLocation, rerr)
			}
			if have.TableID != c.TableID || have.Key != c.Key {
				return fmt.Errorf("%w: the claim %s at %s names another file (%s of table %s)", ErrSecondPath, key, s.ClaimsLocation, have.Key, have.TableID)
			}
			if have.Path != "" && sameSource(have.Path, c.Path) {
				return nil // the same copy: COPY INTO loads it once, whoever sends it
			}
			// (A file whose rows an undo took back is not among the loaded files either: its
			// claim follows the redo, which loads it through a path of its own.)
			ours := have.Run == c.Run || r.p.facts.Runs[have.Run] && !loaded[f.Key]
			if ours {
				// A run of this journal claimed the file through another copy and sent no
				// statement naming it (Prepare allows a change of source only then): the
				// claim follows the run staging it now.
				if _, err := p.Put(gctx, key, bytes.NewReader(data), int64(len(data)), storage.PutOptions{}); err != nil {
					return fmt.Errorf("%w: claim %s at %s: %v", ErrStageLocation, f.Key, s.ClaimsLocation, err)
				}
				return nil
			}
			through := have.Path
			if through == "" {
				through = have.Source + " (a run of an earlier version)"
			}
			return fmt.Errorf("%s was claimed by run %s (host %s, %s) to load through %s: %w; finish that run with its journal, or stage to that location",
				f.Key, have.Run, orDefault(have.Host, "unknown"), have.Time.Format(time.RFC3339), through, ErrSecondPath)
		})
	}
	return g.Wait()
}

// stagedMap returns where each file of one batch is staged, relative to the staging
// location: where this run recorded copies of all of them before (a run of an earlier
// version named copies otherwise; its statements read those), else their StagedPaths.
func (r *runner) stagedMap(files []journal.File) map[string]string {
	out := make(map[string]string, len(files))
	dir := ""
	for i, f := range files {
		rec, ok := r.staged[f.Key]
		if !ok {
			return stagedPaths(r.p.tgt.TableID, files, r.p.facts.Undone)
		}
		d, _ := path.Split(rec.Key)
		if i > 0 && d != dir {
			return stagedPaths(r.p.tgt.TableID, files, r.p.facts.Undone)
		}
		dir = d
		out[f.Key] = rec.Key
	}
	return out
}

// recordedCopies reads, from the run being continued, the copies it recorded at this
// staging location and has not removed.
func (r *runner) recordedCopies() {
	r.staged = map[string]journal.Staged{}
	if r.st == nil || r.o.Stage == nil {
		return
	}
	for _, sg := range r.st.Staging {
		if sg.Location != r.o.Stage.Location || sg.Removing {
			continue
		}
		for _, f := range sg.Files {
			if sg.Removed {
				if have, ok := r.staged[f.Source]; ok && have.Key == f.Key {
					delete(r.staged, f.Source)
				}
				continue
			}
			r.staged[f.Source] = f
		}
	}
}

// stage claims the files of the batches, then copies each to its staged path, create-only,
// and records in the journal what is there (as the staging location's listing shows it)
// before any statement reads the copies. A copy this run recorded is kept when the listing
// still shows it as recorded; an object already at a copy's path (an earlier process's copy,
// or another journal's copy of the same file) is taken only when it holds the original's
// bytes; anything else at that path is replaced.
func (r *runner) stage(ctx context.Context, batches [][]journal.File) error {
	s := r.o.Stage
	if err := s.Check(ctx); err != nil {
		return err
	}
	conc := s.Concurrency
	if conc <= 0 {
		conc = 16
	}
	paths := map[string]string{}
	var files []journal.File
	for _, b := range batches {
		for k, v := range r.stagedMap(b) {
			paths[k] = v
		}
		files = append(files, b...)
	}
	start := time.Now()
	r.log.Info("staging", "location", s.Location, "files", len(files), "concurrency", conc)
	if err := r.claimFiles(ctx, files, paths); err != nil {
		return err
	}
	claimed := time.Since(start)
	// What the staging location holds now, folder by folder.
	listed, err := r.listStaged(ctx, paths)
	if err != nil {
		return err
	}
	var (
		mu       sync.Mutex
		staged   []journal.Staged
		reused   int
		replaced int
		done     int
	)
	progress := func() {
		if r.run.StageProgress != nil {
			r.run.StageProgress(done, len(files))
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
		key := paths[f.Key]
		if rec, ok := r.staged[f.Key]; ok && rec.Key == key {
			if o, ok := listed[key]; ok && sameCopy(rec, o) {
				mu.Lock()
				reused++
				done++
				progress()
				mu.Unlock()
				continue
			}
		}
		g.Go(func() error {
			o, err := storage.CopyObject(gctx, s.Src, f.Key, s.Dst, key, f.Precondition(), storage.PutOptions{CreateOnly: true})
			for attempt := 0; errors.Is(err, storage.ErrExist) && attempt < 2; attempt++ {
				same, there, cerr := sameAsOriginal(gctx, s, f.Key, key)
				if cerr != nil {
					return fmt.Errorf("stage %s: %s is already there and cannot be compared with the original: %w", f.Key, s.stagedObject(key), cerr)
				}
				if same {
					mu.Lock()
					reused++
					done++
					progress()
					mu.Unlock()
					return nil
				}
				// Other bytes at the copy's path: a copy cut short, or anything else. No
				// statement can have loaded it as this file (a cut copy is no Parquet file; a
				// path COPY INTO loaded once it never loads again, so the right bytes there
				// would insert nothing): it is replaced, at the version just read.
				r.log.Warn("replacing what is at a staged copy's path: it is not the original's bytes", "path", s.stagedObject(key), "size", there.Size)
				if derr := s.Dst.Delete(gctx, key, there.Version()); derr != nil && !errors.Is(derr, storage.ErrNotExist) {
					return fmt.Errorf("stage %s: %w: %s holds other bytes than the original and cannot be replaced (%v); nothing was loaded (remove it, or stage elsewhere)",
						f.Key, ErrStagedChanged, s.stagedObject(key), derr)
				}
				mu.Lock()
				replaced++
				mu.Unlock()
				o, err = storage.CopyObject(gctx, s.Src, f.Key, s.Dst, key, f.Precondition(), storage.PutOptions{CreateOnly: true})
			}
			switch {
			case errors.Is(err, storage.ErrExist):
				return fmt.Errorf("stage %s: %w: something keeps writing %s; nothing was loaded (stage elsewhere)", f.Key, ErrStagedChanged, s.stagedObject(key))
			case err != nil:
				return fmt.Errorf("stage %s to %s (originals read with %s, copies written with %s): %w",
					f.Key, s.Location, orDefault(s.SrcIdentity, "the store's credentials"), orDefault(s.DstIdentity, "the store's credentials"), err)
			case o.Size != f.Size:
				return fmt.Errorf("stage %s: the copy has %d bytes, the original %d", f.Key, o.Size, f.Size)
			}
			mu.Lock()
			staged = append(staged, journal.Staged{Source: f.Key, Key: key})
			done++
			progress()
			mu.Unlock()
			return nil
		})
	}
	err = g.Wait()
	if err == nil && ctx.Err() != nil {
		err = fmt.Errorf("%w while staging", ErrInterrupted)
	}
	// Record every copy as the listing shows it now, even after a failure (a re-run then
	// keeps those copies): what the statement's pre-check compares with.
	var record []journal.Staged
	if err == nil || len(staged) > 0 {
		now, lerr := r.listStaged(context.WithoutCancel(ctx), paths)
		if lerr != nil && err == nil {
			err = lerr
		}
		for _, f := range files {
			key := paths[f.Key]
			o, ok := now[key]
			if !ok {
				continue
			}
			if rec, had := r.staged[f.Key]; had && rec.Key == key && sameCopy(rec, o) {
				continue // recorded before, unchanged
			}
			st := stagedOf(f.Key, o)
			record = append(record, st)
			r.staged[f.Key] = st
		}
	}
	for i := 0; i < len(record); i += 1000 {
		chunk := record[i:min(i+1000, len(record))]
		if jerr := r.w.Append(context.WithoutCancel(ctx), journal.Record{Kind: journal.KindStaging,
			Staging: &journal.Staging{Location: s.Location, Files: chunk}}); jerr != nil && err == nil {
			err = jerr
		}
	}
	elapsed := time.Since(start)
	r.log.Info("staged", "location", s.Location, "copied", len(staged), "reused", reused,
		"elapsed", elapsed.Round(time.Millisecond).String(), "claims", claimed.Round(time.Millisecond).String(),
		"files_per_second", fmt.Sprintf("%.0f", float64(len(staged)+reused)/max(elapsed.Seconds(), 1e-3)))
	r.rep.Staged += len(staged)
	r.rep.StagedReused += reused
	r.rep.StagedReplaced += replaced
	return err
}

// sameAsOriginal compares what is at a copy's path with the original; it returns what is
// there.
func sameAsOriginal(ctx context.Context, s *Stage, src, key string) (bool, storage.ObjectInfo, error) {
	there, err := s.Dst.Stat(ctx, key)
	if err != nil {
		return false, there, err
	}
	same, err := storage.SameContent(ctx, s.Src, src, s.Dst, key)
	return same, there, err
}

// listStaged lists the folders of the staged paths once each and returns what it found at
// those paths.
func (r *runner) listStaged(ctx context.Context, paths map[string]string) (map[string]storage.ObjectInfo, error) {
	want := map[string]bool{}
	dirs := map[string]bool{}
	for _, p := range paths {
		want[p] = true
		d, _ := path.Split(p)
		dirs[d] = true
	}
	out := map[string]storage.ObjectInfo{}
	for d := range dirs {
		err := r.o.Stage.Dst.List(ctx, d, func(o storage.ObjectInfo) error {
			if want[o.Key] {
				out[o.Key] = o
			}
			return nil
		})
		if err != nil && !errors.Is(err, storage.ErrNotExist) {
			return nil, fmt.Errorf("list the staged copies at %s: %w", r.o.Stage.stagedObject(d), err)
		}
	}
	return out, nil
}

// stagedOf is the journal's record of a staged copy as a listing shows it.
func stagedOf(source string, o storage.ObjectInfo) journal.Staged {
	st := journal.Staged{Source: source, Key: o.Key, Size: o.Size, ETag: o.ETag, Generation: o.Generation}
	if !o.ModTime.IsZero() {
		t := o.ModTime.UTC()
		st.ModTime = &t
	}
	if o.MD5 != "" {
		st.Checksum = "md5:" + o.MD5
	}
	return st
}

// sameCopy reports whether a listed object is still the copy recorded: the same size, and
// the same ETag, generation, MD5 and modification time wherever both carry one.
func sameCopy(rec journal.Staged, o storage.ObjectInfo) bool {
	if rec.Size != o.Size {
		return false
	}
	if rec.ETag != "" && o.ETag != "" && rec.ETag != o.ETag {
		return false
	}
	if rec.Generation != 0 && o.Generation != 0 && rec.Generation != o.Generation {
		return false
	}
	if md5, ok := strings.CutPrefix(rec.Checksum, "md5:"); ok && o.MD5 != "" && md5 != o.MD5 {
		return false
	}
	if rec.ModTime != nil && !o.ModTime.IsZero() && !rec.ModTime.Equal(o.ModTime.UTC()) {
		return false
	}
	return true
}

// checkStaged makes sure, right before a batch's statement, that every staged copy it reads
// is the copy recorded at staging: one listing of the batch's folder. A copy missing or
// changed stops the batch before its statement (ErrStagedChanged).
func (r *runner) checkStaged(ctx context.Context, w work) error {
	if r.o.Stage == nil || len(w.files) == 0 {
		return nil
	}
	paths := r.stagedMap(w.files)
	listed, err := r.listStaged(ctx, paths)
	if err != nil {
		return fmt.Errorf("batch %d: %w; nothing was sent", w.n, err)
	}
	for _, f := range w.files {
		key := paths[f.Key]
		rec, ok := r.staged[f.Key]
		if !ok || rec.Key != key {
			return fmt.Errorf("batch %d: %w: no copy of %s is recorded at %s; nothing was sent", w.n, ErrStagedChanged, f.Key, r.o.Stage.stagedObject(key))
		}
		o, ok := listed[key]
		switch {
		case !ok:
			return fmt.Errorf("batch %d: %w: %s, the copy of %s, is gone; nothing was sent (re-run reload to stage it again)",
				w.n, ErrStagedChanged, r.o.Stage.stagedObject(key), f.Key)
		case !sameCopy(rec, o):
			return fmt.Errorf("batch %d: %w: %s, the copy of %s, changed since it was staged (%s); nothing was sent: something else writes there",
				w.n, ErrStagedChanged, r.o.Stage.stagedObject(key), f.Key, copyDiff(rec, o))
		}
	}
	return nil
}

// copyDiff says how a listed object differs from the recorded copy.
func copyDiff(rec journal.Staged, o storage.ObjectInfo) string {
	switch {
	case rec.Size != o.Size:
		return fmt.Sprintf("%d bytes, %d when staged", o.Size, rec.Size)
	case rec.ETag != o.ETag && rec.ETag != "" && o.ETag != "":
		return fmt.Sprintf("ETag %s, %s when staged", o.ETag, rec.ETag)
	case rec.ModTime != nil:
		return fmt.Sprintf("modified %s, %s when staged", o.ModTime.UTC().Format(time.RFC3339Nano), rec.ModTime.Format(time.RFC3339Nano))
	}
	return "another version"
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
