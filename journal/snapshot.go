package journal

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"strings"
	"time"
	"unsafe"
)

// A snapshot is a derived, rebuildable summary of one run, stored next to its records: what
// history, reload's planning and cleanup's choice of a run read of every run of a table (the
// run's summary, whether a re-run continues it, its claimed and unpinned commits, its source,
// and the files it loaded or may have loaded), so that they need not replay every run.
//
// It is never the source of truth. It names the records it was made from (their number,
// their bytes and a checksum: the fingerprint), and it is used only when the run's records as
// stored now have that fingerprint; a snapshot that is missing, of another format, corrupt
// (its own checksums), or stale (the run was continued after it was written, or its records
// changed) is ignored and the run is replayed from its records.
//
// Layout (integers are unsigned varints unless said otherwise, strings a length and the
// bytes; each section is its length, its bytes and their CRC-32C in 4 bytes, little endian):
//
//	"zbsnap" format(1 byte) 0x0a
//	header section: the table id, the run id, the fingerprint, the summary, the flags, the
//	                source, the claimed and unpinned batches, and the number of files
//	file sections:  up to snapshotBlock loaded files each (their number, then the files)
//
// A reader that needs only the summary reads the header; one that needs the files reads
// them a section at a time, each checked before any of its files is used.
const snapshotMagic = "zbsnap"

// snapshotBlock is the number of files in a file section.
const snapshotBlock = 1024

// maxSection bounds the length of a section a reader accepts.
const maxSection = 256 << 20

// snapshotFormat is the format of the snapshots this version writes and reads. It changes
// whenever what a snapshot holds, or a rule of Replay that decides it, changes: snapshots of
// another format are ignored (and rewritten), never interpreted.
const snapshotFormat = 3

// castagnoli is the CRC-32C table of run file checksums and of snapshots.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// fingerprint identifies a run's records as stored: how many, how many bytes, and a checksum.
// In a local directory, Sum is the CRC-32C of the run file's complete lines; on an object
// store, the sum of the CRC-64s of the record objects' listed identities (name, size, ETag,
// generation, MD5, modification time), since record objects are created once and never
// rewritten in place.
type fingerprint struct {
	Records int
	Size    int64
	Sum     uint64
}

func (f fingerprint) String() string {
	return fmt.Sprintf("%d records, %d bytes, checksum %016x", f.Records, f.Size, f.Sum)
}

// claim is a commit version a batch was proved by.
type claim struct {
	Version int64
	Ref     BatchRef
}

// runInfo is what a snapshot holds of a run besides its files.
type runInfo struct {
	fp  fingerprint
	sum RunSummary
	// unfinished is State.Unfinished; atRest is set when the run's last record is an end
	// record (a process ended its work on the run).
	unfinished, atRest bool
	merge              bool   // a load by key
	source             string // State.Source
	claimed            []claim
	unpinned           []BatchRef
	loaded             int // files in the snapshot's files section
	// undone are the keys of the files of undone batches (loadable again).
	undone []string
}

// infoOf returns the snapshot's view of st, replayed from records with fingerprint fp.
func infoOf(st *State, fp fingerprint) *runInfo {
	in := &runInfo{fp: fp, unfinished: st.Unfinished(), atRest: st.endSeq == st.LastSeq, merge: st.Merge != nil, source: st.Source}
	in.sum = RunSummary{TableID: st.TableID, Run: st.Run, Table: st.Table, Root: st.Root, Started: st.Started, Status: st.Status,
		Batches: len(st.Batches), Files: len(st.files), ExpectedRows: st.ExpectedRows(), InsertedRows: st.InsertedRows(), UndoneRows: st.Rows().Undone}
	if len(st.Processes) > 0 {
		in.sum.Command, in.sum.User = st.Processes[0].Command, st.Processes[0].User
	}
	if st.Wedge != nil { // never in a snapshot: a wedged run is not read as a stream
		in.sum.Wedged = st.Wedge.Message(st.Run)
	}
	for _, f := range st.VerifiedFiles() {
		if f.Staged != "" && !f.StagedRemoved {
			in.sum.StagedLeft++
		}
	}
	if st.Merge == nil { // a load by key's batches commit to its staging table, not to the table
		for _, b := range st.Batches {
			ref := BatchRef{Run: st.Run, Batch: b.Batch, Rows: b.ExpectedRows, Base: b.FirstBase}
			if b.Result != nil && b.Result.Inserted != nil {
				ref.Rows = *b.Result.Inserted
			}
			switch {
			case b.Outcome != nil && b.Outcome.Version != nil:
				in.claimed = append(in.claimed, claim{*b.Outcome.Version, ref})
			case b.Result != nil && b.Result.Version != nil:
				in.claimed = append(in.claimed, claim{*b.Result.Version, ref})
			case b.Result != nil && b.Result.Inserted != nil && *b.Result.Inserted > 0:
				in.unpinned = append(in.unpinned, ref)
			}
		}
	}
	for _, f := range st.files {
		switch st.batch(f.Batch).Status {
		case BatchUndone:
			in.undone = append(in.undone, f.Key)
		default:
			if st.batch(f.Batch).Status.PossiblyLoaded() {
				in.loaded++
			}
		}
	}
	return in
}

// loadedFiles calls fn with every file of st that is verified or possibly loaded, in batch
// order (what Facts lists).
func loadedFiles(st *State, fn func(FileState)) {
	for _, f := range st.files {
		if v := st.view(f); v.Status.PossiblyLoaded() {
			fn(v)
		}
	}
}

// encodeSnapshot returns the snapshot of st, replayed from records with fingerprint fp.
func encodeSnapshot(st *State, fp fingerprint) []byte {
	in := infoOf(st, fp)
	var h snapWriter
	h.str(st.TableID)
	h.str(st.Run)
	h.uint(uint64(fp.Records))
	h.uint(uint64(fp.Size))
	h.u64(fp.Sum)
	s := in.sum
	for _, v := range []string{s.Table, s.Root, s.Command, s.User, string(s.Status), in.source} {
		h.str(v)
	}
	h.time(s.Started)
	for _, n := range []int64{int64(s.Batches), int64(s.Files), s.ExpectedRows, s.InsertedRows, s.UndoneRows, int64(s.StagedLeft), int64(in.loaded)} {
		h.int(n)
	}
	h.bools(in.unfinished, in.atRest, in.merge)
	h.uint(uint64(len(in.claimed)))
	for _, c := range in.claimed {
		h.int(c.Version)
		h.ref(c.Ref)
	}
	h.uint(uint64(len(in.unpinned)))
	for _, r := range in.unpinned {
		h.ref(r)
	}
	h.uint(uint64(len(in.undone)))
	for _, k := range in.undone {
		h.str(k)
	}

	out := []byte(snapshotMagic)
	out = append(out, snapshotFormat, '\n')
	out = appendSection(out, h.b)
	var f snapWriter
	n := 0
	flush := func() {
		if n == 0 {
			return
		}
		var sec snapWriter
		sec.uint(uint64(n))
		sec.b = append(sec.b, f.b...)
		out = appendSection(out, sec.b)
		f.b, n = f.b[:0], 0
	}
	loadedFiles(st, func(fs FileState) {
		f.str(fs.Key)
		f.int(fs.Size)
		f.str(fs.ETag)
		f.int(fs.Generation)
		f.time(fs.ModTime)
		f.int(fs.Rows)
		f.int(int64(fs.Batch))
		f.str(string(fs.Status))
		f.str(fs.Staged)
		f.int(fs.StagedSize)
		f.str(fs.StagedLocation)
		f.bools(fs.StagedRemoving, fs.StagedRemoved, fs.DeleteIntent)
		f.str(string(fs.Delete))
		f.str(fs.DeleteReason)
		f.str(fs.Archive)
		if n++; n == snapshotBlock {
			flush()
		}
	})
	flush()
	return out
}

func appendSection(out, sec []byte) []byte {
	out = binary.AppendUvarint(out, uint64(len(sec)))
	out = append(out, sec...)
	return binary.LittleEndian.AppendUint32(out, crc32.Checksum(sec, castagnoli))
}

// errSnapshot marks a snapshot that cannot be used: of another format, or damaged.
var errSnapshot = errors.New("unusable snapshot")

// snapshotReader reads a stored snapshot: its header, then (when asked) its files.
type snapshotReader struct {
	r    *bufio.Reader
	info *runInfo
	buf  []byte // the section being read, when it is not kept
}

// snapshotReaders are the buffered readers of snapshots, reused: a table has many runs.
var snapshotReaders = newReaderPool(64 << 10)

func newSnapshotReader(r io.Reader) *snapshotReader {
	return &snapshotReader{r: snapshotReaders.get(r)}
}

// close returns the reader's buffer for reuse.
func (sr *snapshotReader) close() {
	snapshotReaders.put(sr.r)
	sr.r = nil
}

// section reads the next section into buf (a new buffer when keep is set) and checks it.
func (sr *snapshotReader) section(keep bool) ([]byte, error) {
	n, err := binary.ReadUvarint(sr.r)
	if err != nil || n > maxSection {
		return nil, fmt.Errorf("%w: damaged", errSnapshot)
	}
	var b []byte
	if keep {
		b = make([]byte, n+4)
	} else {
		if uint64(cap(sr.buf)) < n+4 {
			sr.buf = make([]byte, n+4)
		}
		b = sr.buf[:n+4]
	}
	if _, err := io.ReadFull(sr.r, b); err != nil {
		return nil, fmt.Errorf("%w: damaged", errSnapshot)
	}
	if crc32.Checksum(b[:n], castagnoli) != binary.LittleEndian.Uint32(b[n:]) {
		return nil, fmt.Errorf("%w: damaged", errSnapshot)
	}
	return b[:n], nil
}

// header reads and returns the snapshot's info, which must be of run of table tableID.
func (sr *snapshotReader) header(tableID, run string) (*runInfo, error) {
	magic := make([]byte, len(snapshotMagic)+2)
	if _, err := io.ReadFull(sr.r, magic); err != nil || string(magic[:len(snapshotMagic)]) != snapshotMagic || magic[len(magic)-1] != '\n' {
		return nil, fmt.Errorf("%w: not a snapshot", errSnapshot)
	}
	if v := magic[len(snapshotMagic)]; v != snapshotFormat {
		return nil, fmt.Errorf("%w: format %d, this version reads %d", errSnapshot, v, snapshotFormat)
	}
	b, err := sr.section(true)
	if err != nil {
		return nil, err
	}
	h := snapReader{s: unsafe.String(unsafe.SliceData(b), len(b))}
	in := &runInfo{}
	if h.str() != tableID || h.str() != run {
		return nil, fmt.Errorf("%w: a snapshot of another run", errSnapshot)
	}
	in.fp = fingerprint{Records: int(h.uint()), Size: int64(h.uint()), Sum: h.u64()}
	s := &in.sum
	s.TableID, s.Run = tableID, run
	s.Table, s.Root, s.Command, s.User, s.Status, in.source = h.str(), h.str(), h.str(), h.str(), RunStatus(h.str()), h.str()
	s.Started = h.time()
	s.Batches, s.Files, s.ExpectedRows, s.InsertedRows, s.UndoneRows, s.StagedLeft, in.loaded = int(h.int()), int(h.int()), h.int(), h.int(), h.int(), int(h.int()), int(h.int())
	in.unfinished, in.atRest, in.merge = h.bools()
	for n := h.count(); n > 0; n-- {
		c := claim{Version: h.int()}
		c.Ref = h.ref(run)
		in.claimed = append(in.claimed, c)
	}
	for n := h.count(); n > 0; n-- {
		in.unpinned = append(in.unpinned, h.ref(run))
	}
	for n := h.count(); n > 0; n-- {
		in.undone = append(in.undone, strings.Clone(h.str()))
	}
	if h.bad || h.p != len(h.s) || in.loaded < 0 {
		return nil, fmt.Errorf("%w: header damaged", errSnapshot)
	}
	sr.info = in
	return in, nil
}

// files reads the snapshot's files after its header and returns those whose key keep
// accepts (every file when keep is nil), in their order. With share set, their strings share
// the memory of the sections read (every file is kept); otherwise they are copies, so that a
// few files kept of many hold no more than themselves.
func (sr *snapshotReader) files(keep func(string) bool, share bool) ([]FileState, error) {
	in := sr.info
	var out []FileState
	if keep == nil {
		out = make([]FileState, 0, in.loaded)
	}
	for left := in.loaded; left > 0; {
		b, err := sr.section(share)
		if err != nil {
			return nil, err
		}
		r := snapReader{s: unsafe.String(unsafe.SliceData(b), len(b))}
		n := r.count()
		if n == 0 || n > left {
			return nil, fmt.Errorf("%w: files damaged", errSnapshot)
		}
		left -= n
		str := r.str
		if !share {
			str = func() string { return strings.Clone(r.str()) }
		}
		for range n {
			key := r.str()
			if keep != nil && !keep(key) {
				r.skipFile()
				continue
			}
			if !share {
				key = strings.Clone(key)
			}
			fs := FileState{Run: in.sum.Run, Root: in.sum.Root}
			fs.Key, fs.Size, fs.ETag, fs.Generation, fs.ModTime, fs.Rows = key, r.int(), str(), r.int(), r.time(), r.int()
			fs.Batch, fs.Status = int(r.int()), batchStatus(r.str())
			fs.Staged, fs.StagedSize, fs.StagedLocation = str(), r.int(), str()
			fs.StagedRemoving, fs.StagedRemoved, fs.DeleteIntent = r.bools()
			fs.Delete, fs.DeleteReason, fs.Archive = deleteStatus(r.str()), str(), str()
			out = append(out, fs)
		}
		if r.bad || r.p != len(r.s) {
			return nil, fmt.Errorf("%w: files damaged", errSnapshot)
		}
	}
	if _, err := sr.r.ReadByte(); err != io.EOF {
		return nil, fmt.Errorf("%w: more than its files", errSnapshot)
	}
	return out, nil
}

// batchStatus and deleteStatus return the package's constants for the known values, so that
// a kept file holds no snapshot memory for them.
func batchStatus(s string) BatchStatus {
	for _, c := range []BatchStatus{BatchVerified, BatchPlanned, BatchOpen, BatchLoaded, BatchUnknown, BatchMismatch, BatchFailed, BatchUndoing, BatchUndone, BatchUndoMismatch} {
		if string(c) == s {
			return c
		}
	}
	return BatchStatus(strings.Clone(s))
}

func deleteStatus(s string) DeleteStatus {
	for _, c := range []DeleteStatus{"", Deleted, DeleteSkip, DeleteGone, DeleteFailed} {
		if string(c) == s {
			return c
		}
	}
	return DeleteStatus(strings.Clone(s))
}

type snapWriter struct{ b []byte }

func (w *snapWriter) uint(n uint64) { w.b = binary.AppendUvarint(w.b, n) }
func (w *snapWriter) int(n int64)   { w.b = binary.AppendVarint(w.b, n) }
func (w *snapWriter) u64(n uint64)  { w.b = binary.LittleEndian.AppendUint64(w.b, n) }
func (w *snapWriter) str(s string)  { w.uint(uint64(len(s))); w.b = append(w.b, s...) }

func (w *snapWriter) bools(bs ...bool) {
	var v byte
	for i, b := range bs {
		if b {
			v |= 1 << i
		}
	}
	w.b = append(w.b, v)
}

// time writes 0 for the zero time, else 1, the Unix seconds and the nanoseconds (the
// location is not kept: readers get UTC).
func (w *snapWriter) time(t time.Time) {
	if t.IsZero() {
		w.b = append(w.b, 0)
		return
	}
	w.b = append(w.b, 1)
	w.int(t.Unix())
	w.uint(uint64(t.Nanosecond()))
}

func (w *snapWriter) ref(r BatchRef) {
	w.int(int64(r.Batch))
	w.int(r.Rows)
	if r.Base == nil {
		w.b = append(w.b, 0)
		return
	}
	w.b = append(w.b, 1)
	w.int(*r.Base)
}

// snapReader reads what snapWriter wrote; past the end or on a malformed value it sets bad
// and returns zero values.
type snapReader struct {
	s   string
	p   int
	bad bool
}

func (r *snapReader) uint() uint64 {
	var n uint64
	for shift := 0; shift < 64; shift += 7 {
		if r.p >= len(r.s) {
			r.bad = true
			return 0
		}
		c := r.s[r.p]
		r.p++
		n |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return n
		}
	}
	r.bad = true
	return 0
}

func (r *snapReader) int() int64 {
	u := r.uint()
	n := int64(u >> 1)
	if u&1 != 0 {
		n = ^n
	}
	return n
}

func (r *snapReader) u64() uint64 {
	if r.p+8 > len(r.s) {
		r.bad = true
		return 0
	}
	n := binary.LittleEndian.Uint64(unsafe.Slice(unsafe.StringData(r.s[r.p:]), 8))
	r.p += 8
	return n
}

func (r *snapReader) byte() byte {
	if r.p >= len(r.s) {
		r.bad = true
		return 0
	}
	r.p++
	return r.s[r.p-1]
}

func (r *snapReader) str() string {
	n := r.uint()
	if r.bad || n > uint64(len(r.s)-r.p) {
		r.bad = true
		return ""
	}
	s := r.s[r.p : r.p+int(n)]
	r.p += int(n)
	return s
}

// count reads a number of entries to follow, each at least one byte long.
func (r *snapReader) count() int {
	n := r.uint()
	if n > uint64(len(r.s)-r.p) {
		r.bad = true
		return 0
	}
	return int(n)
}

func (r *snapReader) bools() (a, b, c bool) {
	v := r.byte()
	return v&1 != 0, v&2 != 0, v&4 != 0
}

func (r *snapReader) time() time.Time {
	switch r.byte() {
	case 0:
		return time.Time{}
	case 1:
		sec := r.int()
		ns := r.uint()
		if ns >= 1e9 {
			r.bad = true
			return time.Time{}
		}
		return time.Unix(sec, int64(ns)).UTC()
	}
	r.bad = true
	return time.Time{}
}

func (r *snapReader) ref(run string) BatchRef {
	ref := BatchRef{Run: run, Batch: int(r.int()), Rows: r.int()}
	switch r.byte() {
	case 0:
	case 1:
		v := r.int()
		ref.Base = &v
	default:
		r.bad = true
	}
	return ref
}

// skipFile skips the rest of a file entry after its key.
func (r *snapReader) skipFile() {
	r.int()  // size
	r.str()  // etag
	r.int()  // generation
	r.time() // mod time
	r.int()  // rows
	r.int()  // batch
	r.str()  // status
	r.str()  // staged
	r.int()  // staged size
	r.str()  // staged location
	r.byte() // flags
	r.str()  // delete
	r.str()  // delete reason
	r.str()  // archive
}
