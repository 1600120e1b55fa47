package journal

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
)

var _ runStore = (*Dir)(nil)

// snapshotPath is where a run's snapshot is kept: <dir>/<table_id>/<run_id>.snapshot.
func (d *Dir) snapshotPath(tableID, run string) string {
	return filepath.Join(d.dir, tableID, run+".snapshot")
}

func (d *Dir) runCache() *infoCache { return &d.cache }

// lineReader reads a run file's complete lines, keeping the CRC-32C, the count and the
// length of what it returned.
type lineReader struct {
	br    *bufio.Reader
	long  []byte // a line longer than br's buffer
	lines int
	off   int64
	sum   uint32
	torn  int // bytes after the last newline, once the end is reached
}

// checkBufs are the buffers of snapshot checks, reused: a table has many runs.
var checkBufs = sync.Pool{New: func() any { b := make([]byte, 256<<10); return &b }}

// readers are the buffered readers of run files, reused: a table has many runs.
var readers = newReaderPool(256 << 10)

func newLineReader(r io.Reader) *lineReader { return &lineReader{br: readers.get(r)} }

// close returns the reader's buffer for reuse.
func (lr *lineReader) close() {
	readers.put(lr.br)
	lr.br = nil
}

// readerPool keeps buffered readers of one size for reuse.
type readerPool struct{ p sync.Pool }

func newReaderPool(size int) *readerPool {
	return &readerPool{p: sync.Pool{New: func() any { return bufio.NewReaderSize(nil, size) }}}
}

// get returns a buffered reader of r.
func (rp *readerPool) get(r io.Reader) *bufio.Reader {
	br := rp.p.Get().(*bufio.Reader)
	br.Reset(r)
	return br
}

// put takes br back; its caller no longer uses it.
func (rp *readerPool) put(br *bufio.Reader) {
	br.Reset(nil)
	rp.p.Put(br)
}

// next returns the next complete line, newline included, valid until the following call;
// io.EOF at the end, with torn set to the length of a last line without its newline.
func (lr *lineReader) next() ([]byte, error) {
	frag, err := lr.br.ReadSlice('\n')
	line := frag
	if errors.Is(err, bufio.ErrBufferFull) {
		lr.long = append(lr.long[:0], frag...)
		for errors.Is(err, bufio.ErrBufferFull) {
			frag, err = lr.br.ReadSlice('\n')
			if len(lr.long)+len(frag) > cap(lr.long) {
				// Doubling, so that a line of n bytes costs about 2n, not the 5n of
				// append's growth for large slices.
				lr.long = slices.Grow(lr.long, max(len(frag), cap(lr.long)))
			}
			lr.long = append(lr.long, frag...)
		}
		line = lr.long
	}
	if err == io.EOF {
		lr.torn = len(line)
		return nil, io.EOF
	}
	if err != nil {
		return nil, err
	}
	lr.lines++
	lr.off += int64(len(line))
	lr.sum = crc32.Update(lr.sum, castagnoli, line)
	return line, nil
}

// done says the line last returned is no longer used: a very long one (a plan of many
// batches) is let go rather than kept for the next.
func (lr *lineReader) done() {
	if cap(lr.long) > 4<<20 {
		lr.long = nil
	}
}

func (lr *lineReader) fingerprint() fingerprint {
	return fingerprint{Records: lr.lines, Size: lr.off, Sum: uint64(lr.sum)}
}

// replayRun implements runStore: the run file is read line by line and each record applied
// as it is decoded, so that a run is never held whole. Anything irregular (damage, a record
// of another run, records out of order, a replay error) sends the read to Read and Replay,
// which report it as they always have.
func (d *Dir) replayRun(ctx context.Context, tableID, run string) (*State, fingerprint, bool, error) {
	st, fp, err := d.streamRun(ctx, tableID, run)
	if errors.Is(err, errRereadWhole) {
		st, err = readStateWhole(ctx, d, tableID, run)
		return st, fingerprint{}, false, err
	}
	return st, fp, err == nil, err
}

func (d *Dir) streamRun(ctx context.Context, tableID, run string) (*State, fingerprint, error) {
	if err := ctx.Err(); err != nil {
		return nil, fingerprint{}, err
	}
	path, err := d.runPath(tableID, run)
	if err != nil {
		return nil, fingerprint{}, fmt.Errorf("journal: %w", err)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fingerprint{}, errRereadWhole // Read names the missing run
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fingerprint{}, fmt.Errorf("journal: %w", err)
	}
	lr := newLineReader(f)
	defer lr.close()
	p := newReplayer()
	p.owned = true
	for {
		line, err := lr.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fingerprint{}, fmt.Errorf("journal: read %s: %w", path, err)
		}
		r, err := decode(line[:len(line)-1])
		lr.done()
		if err != nil || r.Run != run || r.Seq != p.next() {
			return nil, fingerprint{}, errRereadWhole
		}
		if err := p.add(r); err != nil {
			return nil, fingerprint{}, errRereadWhole
		}
		if lr.lines%1024 == 0 && ctx.Err() != nil {
			return nil, fingerprint{}, ctx.Err()
		}
	}
	if lr.lines == 0 {
		return nil, fingerprint{}, errRereadWhole
	}
	st, err := p.finish()
	if err != nil {
		return nil, fingerprint{}, errRereadWhole
	}
	if lr.torn > 0 {
		st.Warnings = append([]string{tornWarning(run, lr.lines+1, lr.torn)}, st.Warnings...)
	}
	fp := lr.fingerprint()
	d.noteRead(path, fi, fp)
	return st, fp, nil
}

func tornWarning(run string, line, n int) string {
	return fmt.Sprintf("run %s: line %d is incomplete (%d bytes, written when a process stopped) and was left out", run, line, n)
}

// probeRuns implements runStore: the run files of the table with their size, modification
// time and file identity.
func (d *Dir) probeRuns(ctx context.Context, tableID string) ([]runProbe, error) {
	ents, err := d.runDirEntries(tableID)
	if err != nil {
		return nil, err
	}
	var out []runProbe
	for _, e := range ents {
		fi, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed since the listing
		}
		if err != nil {
			return nil, fmt.Errorf("journal: %w", err)
		}
		out = append(out, runProbe{run: e.run, id: fileIdentity(fi), size: fi.Size()})
	}
	return out, ctx.Err()
}

// openSnapshot implements runStore.
func (d *Dir) openSnapshot(ctx context.Context, tableID, run string) (io.ReadCloser, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return os.Open(d.snapshotPath(tableID, run))
}

// current implements runStore: the run file's complete lines are exactly the records fp
// names (as many, as long, with the same CRC-32C), and what follows them is at most a torn
// last line.
func (d *Dir) current(ctx context.Context, tableID string, p runProbe, fp fingerprint) bool {
	if fp.Size > p.size {
		return false
	}
	path, err := d.runPath(tableID, p.run)
	return err == nil && d.holdsExactly(ctx, path, fp)
}

// holdsExactly reports whether the run file's complete lines have fingerprint fp, followed
// by at most a torn line.
func (d *Dir) holdsExactly(ctx context.Context, path string, fp fingerprint) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return false
	}
	if known, ok := d.readAt(path, fi); ok {
		return known == fp
	}
	bp := checkBufs.Get().(*[]byte)
	defer checkBufs.Put(bp)
	buf := *bp
	var sum uint32
	lines := 0
	var off int64
	var last byte
	for off < fp.Size {
		n, err := f.Read(buf[:min(int64(len(buf)), fp.Size-off)])
		sum = crc32.Update(sum, castagnoli, buf[:n])
		lines += bytes.Count(buf[:n], []byte{'\n'})
		off += int64(n)
		if n > 0 {
			last = buf[n-1]
		}
		if err != nil || ctx.Err() != nil {
			break
		}
	}
	if off != fp.Size || uint64(sum) != fp.Sum || lines != fp.Records || (fp.Size > 0 && last != '\n') {
		return false
	}
	// Past the records: at most a torn line, never another record.
	for {
		n, err := f.Read(buf)
		if bytes.IndexByte(buf[:n], '\n') >= 0 {
			return false
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return false
		}
	}
	d.noteRead(path, fi, fp)
	return true
}

// storeSnapshot implements runStore: the snapshot is written to a temporary file and renamed
// over the run's snapshot, so that a reader sees a whole snapshot or the previous one.
func (d *Dir) storeSnapshot(ctx context.Context, tableID, run string, data []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	path := d.snapshotPath(tableID, run)
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+run+".snapshot-*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
	}
	return err
}

// noteRead remembers, for this process, the fingerprint of a run file's complete lines as
// read at the file's identity fi: until the file changes, neither a snapshot check nor an
// append reads it again.
func (d *Dir) noteRead(path string, fi os.FileInfo, fp fingerprint) {
	d.rmu.Lock()
	defer d.rmu.Unlock()
	if d.read == nil {
		d.read = map[string]readMark{}
	}
	d.read[path] = readMark{id: fileIdentity(fi), fp: fp}
}

// readAt returns the fingerprint noted for the file at identity fi.
func (d *Dir) readAt(path string, fi os.FileInfo) (fingerprint, bool) {
	d.rmu.Lock()
	defer d.rmu.Unlock()
	m, ok := d.read[path]
	if !ok || m.id != fileIdentity(fi) {
		return fingerprint{}, false
	}
	return m.fp, true
}

// readMark is a run file's fingerprint as read at one identity of the file.
type readMark struct {
	id string
	fp fingerprint
}
