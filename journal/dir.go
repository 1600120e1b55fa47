package journal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// syncFile makes a file's written data durable; tests count its calls.
var syncFile = func(f *os.File) error { return f.Sync() }

// Dir is a journal in a local directory: <dir>/<table_id>/<run_id>.jsonl, one record per
// line, and <dir>/<table_id>/lock.json. Close releases the files it keeps open.
type Dir struct {
	dir string

	mu    sync.Mutex
	files map[string]*runFile // by path

	cache infoCache // run summaries read by this process
	rmu   sync.Mutex
	read  map[string]readMark // run files read by this process, by path
}

// runFile is a run's file open for appending.
type runFile struct {
	f    *os.File
	next int   // the seq the next record must have
	size int64 // bytes of complete records
}

var _ Store = (*Dir)(nil)

// OpenDir returns the journal in dir, creating dir (mode 0700) if needed.
func OpenDir(dir string) (*Dir, error) {
	if dir == "" {
		return nil, fmt.Errorf("journal: no directory given")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	return &Dir{dir: filepath.Clean(dir), files: map[string]*runFile{}}, nil
}

// Location implements Store.
func (d *Dir) Location() string { return d.dir }

// Close closes the run files kept open for appending.
func (d *Dir) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	var errs []error
	for p, rf := range d.files {
		errs = append(errs, rf.f.Close())
		delete(d.files, p)
	}
	return errors.Join(errs...)
}

func (d *Dir) runPath(tableID, run string) (string, error) {
	if err := checkName("table id", tableID); err != nil {
		return "", err
	}
	if err := checkName("run id", run); err != nil {
		return "", err
	}
	return filepath.Join(d.dir, tableID, run+".jsonl"), nil
}

// Append implements Store: the line is written with one write to a file opened O_APPEND and
// fsynced before Append returns; a new file's directory is fsynced too. A record whose seq
// is not the file's next (another process appended) fails with ErrRunConflict: the file is
// checked and written under an exclusive flock of the run file (where the system has flock),
// so that of two processes appending one record number, whatever its kind, one fails.
func (d *Dir) Append(ctx context.Context, r Record) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	line, err := encode(r)
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	path, err := d.runPath(r.TableID, r.Run)
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	rf := d.files[path]
	if rf == nil {
		if rf, err = d.openRun(r.TableID, r.Run, path); err != nil {
			return err
		}
		d.files[path] = rf
	}
	if r.Seq != rf.next {
		return fmt.Errorf("journal: run %s: record %d, but the run's next record is %d in %s: %w", r.Run, r.Seq, rf.next, path, ErrRunConflict)
	}
	// The check that the file is as this process left it and the write are one step for
	// every process that appends to the file: without it, two processes past their checks
	// could both write record r.Seq.
	unlock, err := lockAppend(rf.f)
	if err != nil {
		return fmt.Errorf("journal: lock %s for appending: %w", path, err)
	}
	drop := func() { // unlocked before the close, so that no other file's lock is touched
		unlock()
		_ = rf.f.Close()
		delete(d.files, path)
	}
	if fi, err := rf.f.Stat(); err != nil || fi.Size() != rf.size {
		drop()
		if err != nil {
			return fmt.Errorf("journal: %w", err)
		}
		return fmt.Errorf("journal: run %s: %s changed under this process: %w", r.Run, path, ErrRunConflict)
	}
	n, err := rf.f.Write(line)
	if err == nil {
		err = syncFile(rf.f)
	}
	if err != nil {
		// Take back a partial line, and read the file afresh next time.
		_ = rf.f.Truncate(rf.size)
		drop()
		return fmt.Errorf("journal: append to %s: %w", path, err)
	}
	unlock()
	rf.size += int64(n)
	rf.next++
	return nil
}

// openRun opens (creating) a run's file for appending. An existing file is read to learn its
// next seq; a torn last line, which no Append acknowledged, is cut off so that the next line
// starts clean.
func (d *Dir) openRun(tableID, run, path string) (*runFile, error) {
	if err := mkdirSynced(d.dir, filepath.Join(d.dir, tableID)); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE|os.O_EXCL, 0o600)
	if err == nil {
		if err := syncDir(filepath.Dir(path)); err != nil {
			f.Close()
			return nil, err
		}
		return &runFile{f: f, next: 1}, nil
	}
	if !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("journal: %w", err)
	}
	if f, err = os.OpenFile(path, os.O_RDWR|os.O_APPEND, 0); err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	// A file this process read whole, unchanged since, is not read again: its complete lines
	// are known, and so its next seq and whether a torn line follows them.
	if fi, err := f.Stat(); err == nil {
		if fp, ok := d.readAt(path, fi); ok {
			if fi.Size() > fp.Size {
				if err := f.Truncate(fp.Size); err == nil {
					err = syncFile(f)
				}
				if err != nil {
					f.Close()
					return nil, fmt.Errorf("journal: cut the torn last line of %s: %w", path, err)
				}
			}
			return &runFile{f: f, next: fp.Records + 1, size: fp.Size}, nil
		}
	}
	data, err := readAll(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("journal: read %s: %w", path, err)
	}
	recs, good, _, err := parseLines(data, run)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("journal: %s: %w", path, err)
	}
	if good < int64(len(data)) {
		if err := f.Truncate(good); err == nil {
			err = syncFile(f)
		}
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("journal: cut the torn last line of %s: %w", path, err)
		}
	}
	next := 1
	for _, r := range recs { // the highest number, also in a run two processes wrote at once
		next = max(next, r.Seq+1)
	}
	return &runFile{f: f, next: next, size: good}, nil
}

func readAll(f *os.File) ([]byte, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	buf := make([]byte, fi.Size())
	n, err := f.ReadAt(buf, 0)
	if err != nil && n < len(buf) {
		return nil, err
	}
	return buf[:n], nil
}

// mkdirSynced creates dir (in parent) if missing and fsyncs parent so the entry is durable.
func mkdirSynced(parent, dir string) error {
	err := os.Mkdir(dir, 0o700)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	return syncDir(parent)
}

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	defer f.Close()
	if err := syncFile(f); err != nil {
		return fmt.Errorf("journal: sync %s: %w", dir, err)
	}
	return nil
}

// parseLines decodes a run file. It returns the records, the length of the complete lines,
// and a warning for a torn last line (one without its newline), which is left out. Any other
// damage is an error naming the line.
func parseLines(data []byte, run string) ([]Record, int64, []string, error) {
	var recs []Record
	var warns []string
	off, line := 0, 0
	for off < len(data) {
		line++
		i := bytes.IndexByte(data[off:], '\n')
		if i < 0 {
			warns = append(warns, fmt.Sprintf("run %s: line %d is incomplete (%d bytes, written when a process stopped) and was left out", run, line, len(data)-off))
			break
		}
		r, err := decode(data[off : off+i])
		if err != nil {
			return nil, 0, nil, fmt.Errorf("run %s line %d: %w", run, line, err)
		}
		if r.Run != run {
			return nil, 0, nil, fmt.Errorf("run %s line %d: a record of run %s", run, line, r.Run)
		}
		recs = append(recs, r)
		off += i + 1
	}
	return recs, int64(off), warns, nil
}

// Read implements Store.
func (d *Dir) Read(ctx context.Context, tableID, run string) (*Log, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	path, err := d.runPath(tableID, run)
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("journal: table %s has no run %s in %s: %w", tableID, run, d.dir, fs.ErrNotExist)
	}
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	recs, _, warns, err := parseLines(data, run)
	if err != nil {
		return nil, fmt.Errorf("journal: %s: %w", path, err)
	}
	return &Log{TableID: tableID, Run: run, Records: recs, Warnings: warns}, nil
}

// RunIDs implements Store.
func (d *Dir) RunIDs(ctx context.Context, tableID string) ([]string, error) {
	ents, err := d.runDirEntries(tableID)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, e := range ents {
		ids = append(ids, e.run)
	}
	return ids, ctx.Err()
}

// runDirEntry is a run file in a table's folder and its run id.
type runDirEntry struct {
	run string
	fs.DirEntry
}

// runDirEntries lists the run files in the table's folder, in name order: regular files named
// <run id>.jsonl with a valid run id. A table without a folder has none.
func (d *Dir) runDirEntries(tableID string) ([]runDirEntry, error) {
	if err := checkName("table id", tableID); err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	ents, err := os.ReadDir(filepath.Join(d.dir, tableID))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	var out []runDirEntry
	for _, e := range ents {
		if id, ok := strings.CutSuffix(e.Name(), ".jsonl"); ok && e.Type().IsRegular() && checkName("run id", id) == nil {
			out = append(out, runDirEntry{id, e})
		}
	}
	return out, nil
}

// Tables implements Store.
func (d *Dir) Tables(ctx context.Context) ([]string, error) {
	ents, err := os.ReadDir(d.dir)
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	var ids []string
	for _, e := range ents {
		if e.IsDir() && checkName("table id", e.Name()) == nil {
			ids = append(ids, e.Name())
		}
	}
	return ids, ctx.Err()
}

// Lock implements Store with <dir>/<table_id>/lock.json (see lockFile).
func (d *Dir) Lock(ctx context.Context, tableID string, o LockOptions) (Lock, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := checkName("table id", tableID); err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	if err := mkdirSynced(d.dir, filepath.Join(d.dir, tableID)); err != nil {
		return nil, err
	}
	return lockFile(tableID, filepath.Join(d.dir, tableID, "lock.json"), o)
}
