// Package demo builds the local example that `zbrecover demo` recovers: the storage root of a
// Delta table (main.sales.orders) whose last schema change broke Zerobus Ingest, with its
// Delta log and the fallback Parquet files Zerobus parked under
// _zerobus/table_rejected_parquets/ in two producer schemas, one corrupt file and hidden
// objects. It also summarises the JSON that `inspect -o json` and `schema -o json` print.
//
// The example is deterministic: the same Options give the same keys and the same bytes.
package demo

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"golang.org/x/sync/errgroup"

	"github.com/zbrecover/zbrecover/delta/deltatest"
	"github.com/zbrecover/zbrecover/internal/fallback"
	"github.com/zbrecover/zbrecover/internal/pqgen"
	"github.com/zbrecover/zbrecover/schemadiff"
)

// DefaultFiles is the number of fallback files Build writes when Options.Files is 0.
const DefaultFiles = 3000

// MinFiles and MaxFiles bound Options.Files: the example needs a file of each producer schema
// and the corrupt one.
const (
	MinFiles = 3
	MaxFiles = 200000
)

// DefaultSeed is the seed of the example's pseudo-random data.
const DefaultSeed = 20250602

// Options control Build.
type Options struct {
	// Files is the number of fallback Parquet files, the corrupt one included; 0 means
	// DefaultFiles.
	Files int
	// Seed seeds the generated data; 0 means DefaultSeed.
	Seed int64
	// Concurrency is the number of files written at once; 0 means GOMAXPROCS.
	Concurrency int
}

// Example describes what Build wrote.
type Example struct {
	// Root is the table's storage root (an absolute local path).
	Root string
	// Table is the table's name in the story.
	Table string
	// Prefix is the fallback folder under Root.
	Prefix string
	// TableVersion is the newest version of the Delta log.
	TableVersion int64
	// Files is the number of fallback Parquet files, the corrupt one included.
	Files int
	// FilesV1 and FilesV2 are the readable files in the producer's first and second schema.
	FilesV1, FilesV2 int
	// Rows is the number of rows in the readable files.
	Rows int64
	// Bytes is the size of all fallback Parquet files.
	Bytes int64
	// Days is the number of date folders the files are spread over.
	Days int
	// Corrupt is the key, relative to the fallback folder, of the file whose upload was cut
	// short.
	Corrupt string
	// Hidden are the keys, relative to the fallback folder, of the hidden objects.
	Hidden []string
	// Took is how long writing the example took.
	Took time.Duration

	specs []fileSpec
}

// incidentStart is when the breaking change landed and the first fallback file was written.
var incidentStart = time.Date(2025, 6, 2, 9, 14, 0, 0, time.UTC)

// incidentSpan is how long Zerobus kept parking files before the demo "notices".
const incidentSpan = 52 * time.Hour

// fileSpec is one fallback file to write, decided before the parallel writing starts.
type fileSpec struct {
	key      string // relative to the fallback folder
	v2       bool   // the producer's second schema
	firstID  int64  // order_id of the first row
	rows     int
	start    time.Time // order_ts of the first row
	seed     int64
	truncate bool // the corrupt file
}

// Build writes the example under root, which must not exist or be an empty directory, and
// returns what it wrote. Files are written in parallel; the result does not depend on the
// concurrency.
func Build(ctx context.Context, root string, opts Options) (*Example, error) {
	start := time.Now()
	n := opts.Files
	if n == 0 {
		n = DefaultFiles
	}
	if n < MinFiles || n > MaxFiles {
		return nil, fmt.Errorf("the example needs between %d and %d files, not %d", MinFiles, MaxFiles, n)
	}
	seed := opts.Seed
	if seed == 0 {
		seed = DefaultSeed
	}
	conc := opts.Concurrency
	if conc <= 0 {
		conc = runtime.GOMAXPROCS(0)
	}
	root, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	if err := emptyDir(root); err != nil {
		return nil, err
	}

	version, err := deltatest.Write(root, deltatest.Table{
		Schema:        tableV0,
		Later:         []schemadiff.Schema{tableV1},
		Operations:    []string{"ADD COLUMNS"},
		Configuration: tableProperties,
		ID:            tableID,
		Time:          incidentStart.Add(-2 * time.Minute),
	})
	if err != nil {
		return nil, fmt.Errorf("write the delta log: %w", err)
	}

	specs := plan(n, seed)
	ex := &Example{Root: root, Table: Table, Prefix: fallback.Prefix, TableVersion: version, Files: n, specs: specs}
	days := map[string]bool{}
	for _, s := range specs {
		days[path.Dir(s.key)] = true
		if s.truncate {
			ex.Corrupt = s.key
			continue
		}
		ex.Rows += int64(s.rows)
		if s.v2 {
			ex.FilesV2++
		} else {
			ex.FilesV1++
		}
	}
	ex.Days = len(days)
	fallback := filepath.Join(root, filepath.FromSlash(fallback.Prefix))
	for d := range days {
		if err := os.MkdirAll(filepath.Join(fallback, d), 0o755); err != nil {
			return nil, err
		}
	}

	sizes := make([]int64, len(specs))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(conc)
	for i, s := range specs {
		if gctx.Err() != nil {
			break
		}
		g.Go(func() error {
			if err := gctx.Err(); err != nil {
				return err
			}
			size, err := writeFile(fallback, s)
			sizes[i] = size
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for _, s := range sizes {
		ex.Bytes += s
	}

	// Hidden objects: a job marker in the first date folder and a Hadoop-style checksum next
	// to the first file. Both start with "_" or ".", so Spark and inspect skip them.
	first := specs[0].key
	ex.Hidden = []string{
		path.Join(path.Dir(first), "_SUCCESS"),
		path.Join(path.Dir(first), "."+path.Base(first)+".crc"),
	}
	for i, h := range ex.Hidden {
		data := []byte{}
		if i == 1 {
			data = []byte("crc\x00\x00\x02\x00\x00\x00\x00\x00\x00")
		}
		p := filepath.Join(fallback, filepath.FromSlash(h))
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return nil, err
		}
		if err := os.Chtimes(p, specs[0].start, specs[0].start); err != nil {
			return nil, err
		}
	}
	sort.Strings(ex.Hidden)
	ex.Took = time.Since(start)
	return ex, nil
}

// emptyDir creates dir, or checks that it is an empty directory.
func emptyDir(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case os.IsNotExist(err):
		return os.MkdirAll(dir, 0o755)
	case err != nil:
		return err
	case len(entries) > 0:
		return fmt.Errorf("%s is not empty: the example is written into a new or empty directory", dir)
	}
	return nil
}

// plan decides every file: its key, schema, rows and order ids. Files follow each other in
// time over the incident; the share of the producer's second schema grows as it rolls out.
func plan(n int, seed int64) []fileSpec {
	rng := rand.New(rand.NewSource(seed))
	specs := make([]fileSpec, n)
	nextID := int64(73_000_000)
	corrupt := n / 2
	step := incidentSpan / time.Duration(n)
	seqPerDay := map[string]int{}
	for i := range specs {
		at := incidentStart.Add(time.Duration(i) * step)
		day := at.Format("2006-01-02")
		seq := seqPerDay[day]
		seqPerDay[day]++
		rows := 8 + rng.Intn(33)
		v2 := rng.Float64() < 0.25+0.6*float64(i)/float64(n)
		switch i {
		case 0:
			v2 = false
		case n - 1:
			v2 = true
		}
		var id [16]byte
		rng.Read(id[:])
		specs[i] = fileSpec{
			key:      fmt.Sprintf("%s/part-%05d-%x-%x-%x-%x-%x.c000.snappy.parquet", day, seq, id[0:4], id[4:6], id[6:8], id[8:10], id[10:16]),
			v2:       v2,
			firstID:  nextID,
			rows:     rows,
			start:    at,
			seed:     rng.Int63(),
			truncate: i == corrupt,
		}
		nextID += int64(rows)
	}
	return specs
}

// writeFile writes one fallback file and sets its modification time to when Zerobus wrote it.
func writeFile(fallback string, s fileSpec) (int64, error) {
	sc := producerV1
	if s.v2 {
		sc = producerV2
	}
	rec, err := records(sc, s)
	if err != nil {
		return 0, fmt.Errorf("generate %s: %w", s.key, err)
	}
	defer rec.Release()
	var buf bytes.Buffer
	if err := pqgen.Write(&buf, sc, []arrow.RecordBatch{rec}, pqgen.Options{Compression: compress.Codecs.Snappy}); err != nil {
		return 0, fmt.Errorf("write %s: %w", s.key, err)
	}
	data := buf.Bytes()
	if s.truncate {
		// The upload stopped part-way: the footer and the trailing magic never arrived.
		data = pqgen.Truncate(data, len(data)/2)
	}
	p := filepath.Join(fallback, filepath.FromSlash(s.key))
	if err := os.WriteFile(p, data, 0o644); err != nil {
		return 0, err
	}
	mt := s.start.Add(time.Duration(s.rows) * 3 * time.Second)
	if err := os.Chtimes(p, mt, mt); err != nil {
		return 0, err
	}
	return int64(len(data)), nil
}

var (
	statuses  = []string{"PLACED", "PAID", "PAID", "SHIPPED", "CANCELLED"}
	cities    = [][2]string{{"Lisbon", "PT"}, {"Berlin", "DE"}, {"Austin", "US"}, {"Osaka", "JP"}, {"Lyon", "FR"}, {"Toronto", "CA"}}
	skuPrices = []int64{199, 450, 1299, 2500, 4999, 8900, 15999}
)

// records builds the rows of one file: orders with line items whose amounts add up.
func records(sc *arrow.Schema, s fileSpec) (arrow.RecordBatch, error) {
	rng := rand.New(rand.NewSource(s.seed))
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	orderID := b.Field(0).(*array.Int64Builder)
	customer := b.Field(1).(*array.StringBuilder)
	ts := b.Field(2).(*array.TimestampBuilder)
	amount := b.Field(3).(*array.Decimal128Builder)
	items := b.Field(4).(*array.ListBuilder)
	item := items.ValueBuilder().(*array.StructBuilder)
	sku := item.FieldBuilder(0).(*array.StringBuilder)
	qty := item.FieldBuilder(1).(*array.Int32Builder)
	price := item.FieldBuilder(2).(*array.Decimal128Builder)
	ship := b.Field(5).(*array.StructBuilder)
	city := ship.FieldBuilder(0).(*array.StringBuilder)
	country := ship.FieldBuilder(1).(*array.StringBuilder)
	status := b.Field(6).(*array.StringBuilder)
	var gift *array.BooleanBuilder
	if sc.NumFields() > 7 {
		gift = b.Field(7).(*array.BooleanBuilder)
	}
	for r := 0; r < s.rows; r++ {
		orderID.Append(s.firstID + int64(r))
		if rng.Intn(40) == 0 {
			customer.AppendNull()
		} else {
			customer.Append(fmt.Sprintf("C-%06d", rng.Intn(250000)))
		}
		at := s.start.Add(time.Duration(r)*3*time.Second + time.Duration(rng.Intn(3000))*time.Millisecond)
		v, err := arrow.TimestampFromTime(at, arrow.Microsecond)
		if err != nil {
			return nil, err
		}
		ts.Append(v)
		items.Append(true)
		var total int64
		for k, nk := 0, 1+rng.Intn(4); k < nk; k++ {
			item.Append(true)
			p := skuPrices[rng.Intn(len(skuPrices))]
			q := int32(1 + rng.Intn(3))
			sku.Append(fmt.Sprintf("SKU-%05d", rng.Intn(40000)))
			qty.Append(q)
			price.Append(decimal128.FromI64(p))
			total += p * int64(q)
		}
		amount.Append(decimal128.FromI64(total))
		if rng.Intn(25) == 0 {
			ship.AppendNull()
		} else {
			c := cities[rng.Intn(len(cities))]
			ship.Append(true)
			city.Append(c[0])
			country.Append(c[1])
		}
		status.Append(statuses[rng.Intn(len(statuses))])
		if gift != nil {
			gift.Append(rng.Intn(8) == 0)
		}
	}
	return b.NewRecordBatch(), nil
}

// WriteStory writes the example's story: the table, its schema history and what Zerobus
// parked.
func (ex *Example) WriteStory(w io.Writer) error {
	days := fmt.Sprintf("%d days", ex.Days)
	if ex.Days == 1 {
		days = "1 day"
	}
	_, err := fmt.Fprintf(w, storyText, ex.Table, ex.Prefix, ex.Files, days)
	return err
}

// AlreadyPublished returns an INSERT statement of the records of the first files readable
// files that Zerobus also published to the table before parking them (delivery is
// at-least-once), in the table's columns after BreakingChange, and the number of rows and
// the keys of the files it took them from (relative to the fallback folder). The nested
// columns are left NULL.
func (ex *Example) AlreadyPublished(files int) (stmt string, rows int, keys []string, err error) {
	var values []string
	for _, s := range ex.specs {
		if len(keys) == files {
			break
		}
		if s.truncate {
			continue
		}
		sc := producerV1
		if s.v2 {
			sc = producerV2
		}
		rec, err := records(sc, s)
		if err != nil {
			return "", 0, nil, err
		}
		id := rec.Column(0).(*array.Int64)
		cust := rec.Column(1).(*array.String)
		ts := rec.Column(2).(*array.Timestamp)
		amount := rec.Column(3).(*array.Decimal128)
		for r := 0; r < int(rec.NumRows()); r++ {
			c := "NULL"
			if cust.IsValid(r) {
				c = "'" + cust.Value(r) + "'"
			}
			gift := "NULL"
			if s.v2 {
				gift = fmt.Sprint(rec.Column(7).(*array.Boolean).Value(r))
			}
			at := ts.Value(r).ToTime(arrow.Microsecond).UTC().Format("2006-01-02 15:04:05.000000")
			values = append(values, fmt.Sprintf("(%d, %s, TIMESTAMP '%s', %s, %s)", id.Value(r), c, at,
				amount.Value(r).ToString(2), gift))
		}
		rec.Release()
		keys = append(keys, s.key)
	}
	stmt = "INSERT INTO " + ex.Table + " (order_id, customer_key, order_ts, amount, is_gift) VALUES " + strings.Join(values, ", ")
	return stmt, len(values), keys, nil
}
