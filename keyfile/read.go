package keyfile

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"slices"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"
	"golang.org/x/sync/semaphore"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"

	"github.com/zbrecover/zbrecover/inspect"
	"github.com/zbrecover/zbrecover/internal/textfmt"
	"github.com/zbrecover/zbrecover/schemadiff"
	"github.com/zbrecover/zbrecover/storage"
)

// Defaults of Options.
const (
	// DefaultConcurrency is the default number of files read at once.
	DefaultConcurrency = 16
	// DefaultBatchRows is the default number of rows decoded and handed on at once.
	DefaultBatchRows = 8192
	// DefaultMaxBytesInFlight is the default cap on the column chunk bytes held at once
	// across the files being read.
	DefaultMaxBytesInFlight = 256 << 20
	// DefaultMaxPageBytes is the default cap on the size, compressed and uncompressed, that
	// one page of a key column may declare.
	DefaultMaxPageBytes = 64 << 20
	// DefaultFileBuffer is the default cap on the decoded keys of one file held back until
	// the file is read whole.
	DefaultFileBuffer = 4 << 20
)

// Options configure Read and Write. The zero value reads with the defaults above.
type Options struct {
	// Concurrency is the most files read at once; 0 means DefaultConcurrency.
	Concurrency int
	// TailSize is how many bytes at the end of a file the footer read fetches when the
	// source's FooterLength is unknown; 0 means inspect.DefaultTailSize (64 KiB).
	TailSize int64
	// BatchRows is the most rows of a key column decoded at once and handed on in one
	// Batch; 0 means DefaultBatchRows.
	BatchRows int
	// MaxBytesInFlight caps the column chunk bytes held at once across the files being
	// read (one row group's key chunks per file); 0 means DefaultMaxBytesInFlight. A row
	// group whose key chunks alone are larger is an error naming the file.
	MaxBytesInFlight int64
	// MaxPageBytes caps the size a page of a key column may declare, compressed and
	// uncompressed, before it is decompressed; 0 means DefaultMaxPageBytes.
	MaxPageBytes int64
	// FileBuffer caps the decoded keys of one file that are held back until the file has
	// been read whole; 0 means DefaultFileBuffer, a negative value holds nothing back. A
	// file that fails before it reaches the cap hands on no rows; a larger one hands on its
	// rows as they are decoded once it passes the cap (FileResult.Delivered).
	FileBuffer int64
	// Progress, when set, is called after each row group and each file; never concurrently.
	Progress func(Progress)

	// RowOrdinals adds the row ordinal within its file to each row of the keys file (Write).
	RowOrdinals bool
	// Compression is the keys file's codec (Write): compress.Codecs.Zstd or .Snappy; the
	// zero value (Uncompressed) means Zstd.
	Compression compress.Compression
	// RowGroupRows is the most rows per row group of the keys file (Write); 0 means
	// DefaultRowGroupRows.
	RowGroupRows int64
}

func (o Options) concurrency() int { return positiveOr(o.Concurrency, DefaultConcurrency) }

func (o Options) batchRows() int { return positiveOr(o.BatchRows, DefaultBatchRows) }

func (o Options) maxBytesInFlight() int64 {
	return positiveOr(o.MaxBytesInFlight, DefaultMaxBytesInFlight)
}

func (o Options) maxPageBytes() int64 { return positiveOr(o.MaxPageBytes, DefaultMaxPageBytes) }

// positiveOr returns v, or def when v is not positive (an option left at zero).
func positiveOr[T int | int64](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

func (o Options) fileBuffer() int64 {
	switch {
	case o.FileBuffer < 0:
		return 0
	case o.FileBuffer == 0:
		return DefaultFileBuffer
	}
	return o.FileBuffer
}

// Progress is a snapshot of a Read for progress bars.
type Progress struct {
	Files     int   // sources to read
	Done      int   // sources finished, read whole or failed
	Failed    int   // sources that failed
	Rows      int64 // key rows read so far
	Requests  int64 // storage requests made so far
	BytesRead int64 // bytes those requests returned
}

// Batch is up to Options.BatchRows consecutive rows of one file's keys.
type Batch struct {
	// Source is the file's index in the sources given to Read.
	Source int
	// Row is the ordinal within the file of the batch's first row (0 for the file's first).
	Row int64
	// Keys holds one array per key column, of the table's type (arrowType), all of the same
	// length: the batch's rows. The arrays are released after the sink returns: a sink that
	// keeps one retains it.
	Keys []arrow.Array
}

// Rows is the number of rows in the batch.
func (b Batch) Rows() int64 {
	if len(b.Keys) == 0 {
		return 0
	}
	return int64(b.Keys[0].Len())
}

func (b Batch) release() {
	for _, a := range b.Keys {
		a.Release()
	}
}

func (b Batch) size() int64 {
	var n int64
	for _, a := range b.Keys {
		for _, buf := range a.Data().Buffers() {
			if buf != nil {
				n += int64(buf.Len())
			}
		}
	}
	return n
}

// FileResult is what Read did with one source.
type FileResult struct {
	Key   string
	Group string
	// Rows is the number of rows decoded: the footer's num_rows when Err is nil; for a failed
	// file, those of the batches decoded before it failed.
	Rows int64
	// Delivered is the number of rows handed to the sink: Rows when Err is nil; for a failed
	// file, 0 unless its decoded keys passed Options.FileBuffer before it failed.
	Delivered int64
	RowGroups int
	// Requests and BytesRead are the storage requests made for the file and the bytes they
	// returned.
	Requests  int
	BytesRead int64
	// FooterBytes is the length of the thrift footer and its 8-byte trailer; KeyBytes the
	// compressed size of the key column chunks of every row group: together, the least a
	// reader of the keys must fetch.
	FooterBytes int64
	KeyBytes    int64
	// Err is why the file's keys could not all be read; it names the file.
	Err error
}

// Result is what Read did: one FileResult per source, in the order given, and totals.
type Result struct {
	Files []FileResult
	// Rows is the rows of the files read whole; Delivered the rows handed to the sink.
	Rows, Delivered int64
	// Requests, BytesRead, FooterBytes and KeyBytes are the sums over the files.
	Requests                         int64
	BytesRead, FooterBytes, KeyBytes int64
}

// Failed returns the results of the files that could not be read whole.
func (r *Result) Failed() []FileResult {
	var out []FileResult
	for _, f := range r.Files {
		if f.Err != nil {
			out = append(out, f)
		}
	}
	return out
}

// FileErrors is the error of a Read in which some files could not be read whole; the other
// files were read whole.
type FileErrors struct {
	Files  int          // sources given
	Failed []FileResult // those that failed, in the order given
}

func (e *FileErrors) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "the keys of %s of %s could not be read", textfmt.Count(len(e.Failed)), textfmt.Plural(e.Files, "file"))
	for i, f := range e.Failed {
		if i == 3 {
			fmt.Fprintf(&b, "; and %d more", len(e.Failed)-i)
			break
		}
		b.WriteString("; ")
		b.WriteString(f.Err.Error())
	}
	return b.String()
}

// Unwrap returns the files' errors.
func (e *FileErrors) Unwrap() []error {
	out := make([]error, len(e.Failed))
	for i, f := range e.Failed {
		out[i] = f.Err
	}
	return out
}

// sinkError is a failure of the sink: it stops the whole Read.
type sinkError struct{ err error }

func (e *sinkError) Error() string { return e.err.Error() }
func (e *sinkError) Unwrap() error { return e.err }

// Read reads the key columns of every source and hands their rows to sink, a Batch at a
// time, in the table's types.
//
// Of each file it reads the footer (nothing when Source.Footer is set; one ranged request of
// the footer and its trailer when Source.FooterLength is known; else one of the last
// Options.TailSize bytes, and a second only for a longer footer), then, for each row group,
// the byte ranges of the key column chunks with one request per run of adjacent chunks
// (chunks with a gap of at most a tenth of their size between them count as adjacent; a
// chunk inside the bytes of the footer read is not fetched again); never another byte of the
// file. Files are read Options.Concurrency at a time, row group by row group: memory is
// bounded by the options, not by the number of files or rows.
//
// Each file is either read whole, every row of every row group, with the rows read equal to
// the footer's num_rows, or it fails with an error that names it: a footer or page the
// Parquet library cannot read (panics included, wrapping inspect.ErrPanic), a key column the
// file lacks (ErrColumn), a type or value that does not cast (ErrCast), a column chunk that
// holds fewer or more values than its row group's row count. A failed file does not stop the
// others; Read then returns the full Result and a *FileErrors listing the failed files. A
// file's rows reach the sink only once it is read whole, unless its keys pass
// Options.FileBuffer (see FileResult.Delivered).
//
// sink is never called concurrently, and a file's batches reach it in row order; batches of
// different files may interleave. An error from sink, a spec that does not hold, two sources
// with the same key and the context's end stop the Read and are returned as they are.
func Read(ctx context.Context, b storage.Backend, sources []Source, spec Spec, opts Options, sink func(Batch) error) (*Result, error) {
	if err := spec.check(); err != nil {
		return nil, err
	}
	seen := make(map[string]struct{}, len(sources))
	for _, s := range sources {
		if _, dup := seen[s.Key]; dup {
			return nil, fmt.Errorf("keyfile: %s is listed twice", s.Key)
		}
		seen[s.Key] = struct{}{}
	}
	seen = nil
	r := &reader{
		b: b, sources: sources, spec: spec, opts: opts, sink: sink,
		budget: semaphore.NewWeighted(opts.maxBytesInFlight()),
		res:    &Result{Files: make([]FileResult, len(sources))},
	}
	r.prog.Files = len(sources)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(opts.concurrency())
	for i := range sources {
		if gctx.Err() != nil {
			break
		}
		g.Go(func() error { return r.readFile(gctx, i) })
	}
	err := g.Wait()
	res := r.res
	for _, f := range res.Files {
		if f.Err == nil {
			res.Rows += f.Rows
		}
		res.Delivered += f.Delivered
		res.Requests += int64(f.Requests)
		res.BytesRead += f.BytesRead
		res.FooterBytes += f.FooterBytes
		res.KeyBytes += f.KeyBytes
	}
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		var se *sinkError
		if errors.As(err, &se) {
			return res, se.err
		}
		return res, err
	}
	if failed := res.Failed(); len(failed) > 0 {
		return res, &FileErrors{Files: len(sources), Failed: failed}
	}
	return res, nil
}

// reader is one Read.
type reader struct {
	b       storage.Backend
	sources []Source
	spec    Spec
	opts    Options
	sink    func(Batch) error
	budget  *semaphore.Weighted

	mu      sync.Mutex // guards res.Files entries, prog, sinkErr, and calls to sink and Progress
	res     *Result
	prog    Progress
	sinkErr error // the sink's failure: it is not called again
}

// fileRun is the state of one file being read.
type fileRun struct {
	i         int
	res       FileResult
	pending   []Batch
	held      int64 // bytes of pending
	streaming bool  // pending passed the file buffer: batches go to the sink as decoded
}

// readFile reads one source and records its result. It returns only the errors that stop the
// whole Read: the sink's, and the context's.
func (r *reader) readFile(ctx context.Context, i int) error {
	src := r.sources[i]
	fr := &fileRun{i: i, res: FileResult{Key: src.Key, Group: src.Group}}
	err := r.read(ctx, fr)
	var se *sinkError
	switch {
	case errors.As(err, &se):
		fr.discard()
		return err
	case err != nil && ctx.Err() != nil:
		fr.discard()
		return ctx.Err()
	case err != nil:
		fr.discard()
		fr.res.Err = fmt.Errorf("%s: %w", src.Key, err)
	default:
		if err := r.flush(ctx, fr); err != nil {
			return err
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.res.Files[i] = fr.res
	r.prog.Done++
	if fr.res.Err != nil {
		r.prog.Failed++
	}
	r.report()
	return nil
}

func (fr *fileRun) discard() {
	for _, b := range fr.pending {
		b.release()
	}
	fr.pending, fr.held = nil, 0
}

// report calls Progress; the caller holds r.mu.
func (r *reader) report() {
	if r.opts.Progress != nil {
		r.opts.Progress(r.prog)
	}
}

// counted adds one file's requests to the progress.
func (r *reader) counted(reqs int, bytes int64) {
	r.mu.Lock()
	r.prog.Requests += int64(reqs)
	r.prog.BytesRead += bytes
	r.mu.Unlock()
}

// deliver hands a decoded batch on: held back while the file's keys fit the file buffer,
// to the sink once they have passed it.
func (r *reader) deliver(ctx context.Context, fr *fileRun, b Batch) error {
	if !fr.streaming {
		fr.pending = append(fr.pending, b)
		fr.held += b.size()
		if fr.held <= r.opts.fileBuffer() {
			return nil
		}
		fr.streaming = true
		return r.flush(ctx, fr)
	}
	defer b.release()
	return r.toSink(ctx, fr, b)
}

// flush hands the held-back batches to the sink.
func (r *reader) flush(ctx context.Context, fr *fileRun) error {
	pending := fr.pending
	fr.pending, fr.held = nil, 0
	for k, b := range pending {
		if err := r.toSink(ctx, fr, b); err != nil {
			for _, rest := range pending[k:] {
				rest.release()
			}
			return err
		}
		b.release()
	}
	return nil
}

// toSink calls the sink, unless it has failed or the context has ended: then the sink is
// not called again.
func (r *reader) toSink(ctx context.Context, fr *fileRun, b Batch) (err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sinkErr != nil {
		return r.sinkErr
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	defer func() {
		if p := recover(); p != nil {
			err = &sinkError{fmt.Errorf("keyfile: sink panicked: %v\n%s", p, debug.Stack())}
		}
		if err != nil {
			r.sinkErr = err
		}
	}()
	if err := r.sink(b); err != nil {
		return &sinkError{err}
	}
	fr.res.Delivered += b.Rows()
	return nil
}

// footer is what a file's key reading needs of its footer.
type footer struct {
	md     *metadata.FileMetaData
	schema schemadiff.Schema
	tail   []byte
	length int64
}

// readFooter returns the source's footer: the caller's, or one read as inspect reads it.
func (r *reader) readFooter(ctx context.Context, fr *fileRun) (footer, func(), error) {
	src := r.sources[fr.i]
	if src.Footer != nil {
		src.Footer.SetSourceFileSize(src.Size)
		s, err := inspect.FooterSchema(src.Footer)
		return footer{md: src.Footer, schema: s, length: int64(src.Footer.Size())}, func() {}, err
	}
	tailSize := r.opts.TailSize
	if src.FooterLength > 0 {
		tailSize = src.FooterLength + 8
	}
	ft, err := inspect.ReadFooter(ctx, r.b, src.Key, src.Size, tailSize)
	fr.res.Requests += ft.Reads
	fr.res.BytesRead += ft.BytesRead
	r.counted(ft.Reads, ft.BytesRead)
	if err != nil {
		return footer{}, func() {}, err
	}
	return footer{md: ft.Meta, schema: ft.Schema, tail: ft.Tail, length: ft.Length}, ft.Release, nil
}

// keyPlan is how one file holds the key columns.
type keyPlan struct {
	leaves []int    // leaf column index of each key column
	paths  []string // their paths in the file, for messages
	srcs   []source
}

// plan finds the key columns in a file of group and checks that they cast.
func (r *reader) plan(ft footer, group string) (keyPlan, error) {
	var p keyPlan
	err := contain("schema", func() error {
		for k, path := range r.spec.paths(group) {
			col := r.spec.Columns[k]
			names, f, err := resolve(ft.schema.Fields, path)
			if err != nil {
				return fmt.Errorf("key column %s: %w", schemadiff.QuoteIdent(col.Name), err)
			}
			if !castable(f.Type, col.Type) {
				return fmt.Errorf("%w: key column %s is %s in the file (%s) and %s in the table, and no cast keeps every key exactly",
					ErrCast, schemadiff.QuoteIdent(col.Name), f.Type, Path(names), col.Type)
			}
			leaf := -1
			for j := 0; j < ft.md.Schema.NumColumns(); j++ {
				if slices.Equal([]string(ft.md.Schema.Column(j).ColumnPath()), names) {
					leaf = j
					break
				}
			}
			if leaf < 0 {
				return fmt.Errorf("%w: key column %s: no Parquet column at %s", ErrColumn, schemadiff.QuoteIdent(col.Name), Path(names))
			}
			src, err := sourceOf(ft.md.Schema.Column(leaf), f.Type)
			if err != nil {
				return fmt.Errorf("key column %s (%s): %w", schemadiff.QuoteIdent(col.Name), Path(names), err)
			}
			p.leaves = append(p.leaves, leaf)
			p.paths = append(p.paths, Path(names).String())
			p.srcs = append(p.srcs, src)
		}
		return nil
	})
	return p, err
}

// read reads one file's keys, row group by row group.
func (r *reader) read(ctx context.Context, fr *fileRun) error {
	src := r.sources[fr.i]
	ft, release, err := r.readFooter(ctx, fr)
	defer release()
	if err != nil {
		return err
	}
	fr.res.FooterBytes = ft.length + 8
	plan, err := r.plan(ft, src.Group)
	if err != nil {
		return err
	}
	mem := memory.DefaultAllocator
	h := &held{size: src.Size}
	if len(ft.tail) > 0 {
		h.tail = heldPart{off: src.Size - int64(len(ft.tail)), data: ft.tail}
	}
	have := h.tail.off
	if len(ft.tail) == 0 {
		have = src.Size
	}
	var pf *file.Reader
	var dests []*dest
	err = contain("file", func() error {
		props := parquet.NewReaderProperties(mem)
		props.BufferedStreamEnabled = true
		props.BufferSize = 32 << 10
		props.MaxCompressedPageSize = r.opts.maxPageBytes()
		props.MaxUncompressedPageSize = r.opts.maxPageBytes()
		var err error
		pf, err = file.NewParquetReader(io.NewSectionReader(h, 0, src.Size), file.WithMetadata(ft.md), file.WithReadProps(props))
		if err != nil {
			return err
		}
		for _, c := range r.spec.Columns {
			dests = append(dests, newDest(c.Type, mem))
		}
		fr.res.RowGroups = ft.md.NumRowGroups()
		return nil
	})
	if err != nil {
		return err
	}
	defer func() {
		for _, d := range dests {
			d.b.Release()
		}
	}()
	for rg := 0; rg < fr.res.RowGroups; rg++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		var rows int64
		var chunks []span
		err := contain("row group metadata", func() error {
			var err error
			var keyBytes int64
			rows = ft.md.RowGroup(rg).NumRows()
			chunks, keyBytes, err = chunkSpans(ft.md, rg, plan.leaves, src.Size, ft.length)
			fr.res.KeyBytes += keyBytes
			return err
		})
		if err != nil {
			return err
		}
		if rows == 0 {
			continue
		}
		if err := r.rowGroup(ctx, fr, pf, h, have, plan, dests, rg, rows, chunks); err != nil {
			return err
		}
		r.mu.Lock()
		r.prog.Rows += rows
		r.report()
		r.mu.Unlock()
	}
	if fr.res.Rows != ft.md.NumRows {
		return fmt.Errorf("read %d rows, the footer's num_rows is %d", fr.res.Rows, ft.md.NumRows)
	}
	return nil
}

// rowGroup fetches the key chunks of row group rg (within the memory budget), decodes them
// in batches and delivers the batches.
func (r *reader) rowGroup(ctx context.Context, fr *fileRun, pf *file.Reader, h *held, have int64, plan keyPlan, dests []*dest, rg int, rows int64, chunks []span) error {
	src := r.sources[fr.i]
	reads := fetches(chunks, have)
	var need int64
	for _, s := range reads {
		need += s.len()
	}
	if need > r.opts.maxBytesInFlight() {
		return fmt.Errorf("row group %d: its key column chunks take %s, over the %s limit of bytes held at once",
			rg, textfmt.Bytes(need), textfmt.Bytes(r.opts.maxBytesInFlight()))
	}
	if need > 0 {
		if err := r.budget.Acquire(ctx, need); err != nil {
			return err
		}
		defer r.budget.Release(need)
	}
	parts := make([]heldPart, 0, len(reads))
	for _, s := range reads {
		data, n, err := readSpan(ctx, r.b, src.Key, s)
		fr.res.Requests++
		fr.res.BytesRead += n
		r.counted(1, n)
		if err != nil {
			return fmt.Errorf("row group %d: %w", rg, err)
		}
		parts = append(parts, heldPart{off: s.off, data: data})
	}
	h.set(parts)
	defer h.set(nil)

	batch := int64(r.opts.batchRows())
	var done int64
	var leaves []leafReader
	err := contain(fmt.Sprintf("row group %d", rg), func() error {
		rgr := pf.RowGroup(rg)
		for k, j := range plan.leaves {
			cr, err := rgr.Column(j)
			if err != nil {
				return err
			}
			l, err := newLeafReader(cr, plan.srcs[k], dests[k], int(min(batch, rows)))
			if err != nil {
				return fmt.Errorf("key column %s: %w", plan.paths[k], err)
			}
			leaves = append(leaves, l)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for done < rows {
		n := min(batch, rows-done)
		var b Batch
		err := contain(fmt.Sprintf("row group %d", rg), func() error {
			for k, l := range leaves {
				got, err := l.read(n)
				if err != nil {
					return fmt.Errorf("row group %d, key column %s: %w", rg, plan.paths[k], err)
				}
				if got != n {
					if err := l.err(); err != nil {
						return fmt.Errorf("row group %d, key column %s: %w", rg, plan.paths[k], err)
					}
					return fmt.Errorf("row group %d: key column %s ends after %d of the %d rows the footer gives the row group",
						rg, plan.paths[k], done+got, rows)
				}
			}
			b = Batch{Source: fr.i, Row: fr.res.Rows, Keys: make([]arrow.Array, len(dests))}
			for k, d := range dests {
				b.Keys[k] = d.b.NewArray()
			}
			return nil
		})
		if err != nil {
			return err
		}
		done += n
		fr.res.Rows += n
		if err := r.deliver(ctx, fr, b); err != nil {
			return err
		}
	}
	err = contain(fmt.Sprintf("row group %d", rg), func() error {
		for k, l := range leaves {
			if l.more() {
				return fmt.Errorf("row group %d: key column %s holds more values than the %d rows the footer gives the row group", rg, plan.paths[k], rows)
			}
			if err := l.err(); err != nil {
				return fmt.Errorf("row group %d, key column %s: %w", rg, plan.paths[k], err)
			}
		}
		return nil
	})
	return err
}

// contain runs f and turns a panic of the Parquet library into an error wrapping
// inspect.ErrPanic.
func contain(what string, f func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%s: %w: %v", what, inspect.ErrPanic, p)
		}
	}()
	return f()
}
