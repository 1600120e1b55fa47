package journal

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"
	"strings"

	"github.com/zbrecover/zbrecover/storage"
)

// Tail follows one run while processes append to it (zbrecover history --watch). Each Read
// reads only the records written since the previous one and replays them onto the state
// read so far, so that following a run costs what was appended, not the whole run, each
// time:
//
//   - in a local directory, the run file is read from the end of the last complete line
//     replayed (a line still being written is left for the next Read); a file whose size
//     did not change is not opened;
//   - on an object store, the run's record objects are listed after the last one replayed
//     where the store lists from a key (S3), else listed whole, and only the new ones are
//     read; a record not yet visible while a later one is stops the Read there;
//   - any other Store is read whole, and the records after the last replayed are applied.
//
// A Tail only reads; it takes no lock, so it follows a run while its writer holds the
// table's. It is not safe for concurrent use.
type Tail struct {
	s            Store
	tableID, run string
	p            *replayer
	st           *State
	off          int64  // a local run file: the length of the complete lines replayed
	lastKey      string // an object store: the key of the last record replayed
}

// NewTail returns a Tail of the run; nothing is read until Read.
func NewTail(s Store, tableID, run string) *Tail {
	p := newReplayer()
	p.owned = true
	return &Tail{s: s, tableID: tableID, run: run, p: p}
}

// Read returns the run's state with every record written so far, and whether records were
// added since the previous Read (always on the first). The state is the Tail's own: the
// next Read changes it. A run that does not exist, or a record that does not follow the ones
// read (damage, a run rewritten), is an error; after an error the Tail must not be used
// again.
func (t *Tail) Read(ctx context.Context) (*State, bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	before := t.p.n
	var err error
	switch s := t.s.(type) {
	case *Dir:
		err = t.readDir(s)
	case *Remote:
		err = t.readRemote(ctx, s)
	default:
		err = t.readWhole(ctx)
	}
	if err != nil {
		return nil, false, err
	}
	if t.p.n == 0 {
		return nil, false, fmt.Errorf("journal: run %s of table %s has no records yet", t.run, t.tableID)
	}
	if t.p.n == before && t.st != nil {
		return t.st, false, nil
	}
	st, err := t.p.finish()
	if err != nil {
		return nil, false, err
	}
	t.st = st
	return st, true, nil
}

// add applies the run's next record.
func (t *Tail) add(r Record) error {
	if r.Run != t.run {
		return fmt.Errorf("journal: run %s: a record of run %s", t.run, r.Run)
	}
	if err := t.p.add(r); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	return nil
}

// readDir reads the run file from the end of the last complete line replayed.
func (t *Tail) readDir(d *Dir) error {
	path, err := d.runPath(t.tableID, t.run)
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("journal: table %s has no run %s in %s: %w", t.tableID, t.run, d.dir, fs.ErrNotExist)
	}
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	if fi.Size() < t.off {
		return fmt.Errorf("journal: run %s of table %s: the run file is shorter (%d bytes) than what was read of it (%d): it was replaced", t.run, t.tableID, fi.Size(), t.off)
	}
	if fi.Size() == t.off {
		return nil
	}
	if _, err := f.Seek(t.off, io.SeekStart); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	br := bufio.NewReaderSize(f, 256<<10)
	for {
		line, err := br.ReadBytes('\n')
		if err == io.EOF {
			return nil // nothing more, or a line still being written: the next Read takes it
		}
		if err != nil {
			return fmt.Errorf("journal: read %s: %w", path, err)
		}
		r, err := decode(bytes.TrimSuffix(line, []byte("\n")))
		if err != nil {
			return fmt.Errorf("journal: %s at byte %d: %w", path, t.off, err)
		}
		if err := t.add(r); err != nil {
			return err
		}
		t.off += int64(len(line))
	}
}

// readRemote lists the run's records after the last one replayed and reads the new ones.
func (t *Tail) readRemote(ctx context.Context, j *Remote) error {
	if err := checkName("table id", t.tableID); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	if err := checkName("run id", t.run); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	prefix := t.tableID + "/runs/" + t.run + "/"
	type rec struct {
		key string
		seq int
	}
	var found []rec
	take := func(o storage.ObjectInfo) error {
		if o.Key <= t.lastKey {
			return nil
		}
		if seq, _, ok := parseRecordName(strings.TrimPrefix(o.Key, prefix)); ok && seq > t.p.n {
			found = append(found, rec{o.Key, seq})
		}
		return nil
	}
	var err error
	if al, ok := storage.AsAfterLister(j.b); ok && t.lastKey != "" {
		err = listPagesFrom(ctx, al, prefix, al.AfterToken(t.lastKey), take)
	} else {
		err = j.b.List(ctx, prefix, take)
	}
	if err != nil {
		return fmt.Errorf("journal: list %s: %w", prefix, err)
	}
	if len(found) == 0 && t.p.n == 0 {
		return fmt.Errorf("journal: table %s has no run %s in %s: %w", t.tableID, t.run, j.b.Location(), storage.ErrNotExist)
	}
	sort.Slice(found, func(a, b int) bool { return found[a].seq < found[b].seq })
	for _, f := range found {
		if f.seq != t.p.next() {
			return nil // the next record is not visible yet
		}
		r, err := j.readRecord(ctx, f.key, t.run, strings.TrimPrefix(f.key, prefix))
		if err != nil {
			return err
		}
		if err := t.add(r); err != nil {
			return err
		}
		t.lastKey = f.key
	}
	return nil
}

// listPagesFrom lists prefix from token on, page by page.
func listPagesFrom(ctx context.Context, p storage.Pager, prefix, token string, fn func(storage.ObjectInfo) error) error {
	for {
		page, next, err := p.ListPage(ctx, prefix, token)
		if err != nil {
			return err
		}
		for _, o := range page {
			if err := fn(o); err != nil {
				return err
			}
		}
		if next == "" {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		token = next
	}
}

// readWhole reads the run through Store.Read and applies the records after the last one
// replayed.
func (t *Tail) readWhole(ctx context.Context) error {
	log, err := t.s.Read(ctx, t.tableID, t.run)
	if err != nil {
		return err
	}
	recs := append([]Record(nil), log.Records...)
	sort.SliceStable(recs, func(i, j int) bool { return recs[i].Seq < recs[j].Seq })
	for _, r := range recs {
		if r.Seq <= t.p.n {
			continue
		}
		if err := t.add(r); err != nil {
			return err
		}
	}
	return nil
}
