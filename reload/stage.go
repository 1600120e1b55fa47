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
	// Dst is the staging location; a file's copy has its key relative to the fallback
	// folder (StagedKey: its folders kept, glob characters made safe).
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
	// Progress, when set, is told the files staged so far (copied or reused) and the total
	// of this staging step, after each file.
	Progress func(done, total int)
}

// Claim is a staging claim: the source a fallback file of a table is loaded through.
type Claim struct {
	TableID string    `json:"table_id"`
	Key     string    `json:"key"`    // the file's key under the table root
	Source  string    `json:"source"` // the folder URL the statements read it from
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

// claim records, create-only, that each file is loaded through the run's source, and
// refuses a file another run (of any journal) claimed under another source.
func (r *runner) claimFiles(ctx context.Context, files []journal.File) error {
	s := r.o.Stage
	if s == nil || s.Claims == nil {
		return nil
	}
	p, ok := storage.AsPutter(s.Claims)
	if !ok {
		return fmt.Errorf("%w: %s cannot be written to (staging claims)", ErrStageLocation, s.ClaimsLocation)
	}
	host, _ := os.Hostname()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(s.Concurrency, 4))
	for _, f := range files {
		g.Go(func() error {
			c := Claim{TableID: r.p.tgt.TableID, Key: f.Key, Source: r.p.Source, Run: r.w.Run(), Host: host, Time: r.o.Now().UTC()}
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
			if have.Run == c.Run && !sameSource(have.Source, c.Source) {
				// This run claimed the file for another source and sent no statement since
				// (Prepare allows a change of source only then): the claim follows the run.
				if _, err := p.Put(gctx, key, bytes.NewReader(data), int64(len(data)), storage.PutOptions{}); err != nil {
					return fmt.Errorf("%w: claim %s at %s: %v", ErrStageLocation, f.Key, s.ClaimsLocation, err)
				}
				return nil
			}
			if !sameSource(have.Source, c.Source) {
				return fmt.Errorf("%s was claimed by run %s (host %s, %s) to load through %s: %w; finish that run with its journal, or stage to that location",
					f.Key, have.Run, orDefault(have.Host, "unknown"), have.Time.Format(time.RFC3339), have.Source, ErrSecondPath)
			}
			return nil
		})
	}
	return g.Wait()
}

// stage claims the files, then copies those that have no verified copy yet and records the
// mapping in the journal before any statement reads the copies. A copy the journal records
// is reused when its size is still the recorded one; any other is made again.
func (r *runner) stage(ctx context.Context, files []journal.File) error {
	s := r.o.Stage
	if err := s.Check(ctx); err != nil {
		return err
	}
	conc := s.Concurrency
	if conc <= 0 {
		conc = 16
	}
	start := time.Now()
	r.log.Info("staging", "location", s.Location, "files", len(files), "concurrency", conc)
	if err := r.claimFiles(ctx, files); err != nil {
		return err
	}
	claimed := time.Since(start)
	prefix := r.p.Plan.Prefix
	known := map[string]int64{} // original key → verified staged size
	if r.st != nil {
		for _, st := range r.st.Staging {
			if st.Location != s.Location {
				continue
			}
			for _, f := range st.Files {
				if st.Removed || st.Removing {
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
			key := StagedKey(strings.TrimPrefix(f.Key, prefix))
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
	elapsed := time.Since(start)
	r.log.Info("staged", "location", s.Location, "copied", len(staged), "reused", reused,
		"elapsed", elapsed.Round(time.Millisecond).String(), "claims", claimed.Round(time.Millisecond).String(),
		"files_per_second", fmt.Sprintf("%.0f", float64(len(staged)+reused)/max(elapsed.Seconds(), 1e-3)))
	r.rep.Staged += len(staged)
	r.rep.StagedReused += reused
	if err == nil && ctx.Err() != nil {
		err = fmt.Errorf("%w while staging", ErrInterrupted)
	}
	return err
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
