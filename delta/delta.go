// Package delta reads a Delta table's latest schema and table properties from its transaction
// log (_delta_log/) through a storage.Backend, with no Spark and no warehouse. It is the offline
// source of the target schema.
//
// Read follows the Delta protocol's snapshot reconstruction, reading as little as it can: the
// newest version checksum file (NNN.crc) when one holds the metadata, otherwise JSON commits
// from the newest down to the newest complete checkpoint, then that checkpoint (classic,
// multi-part or V2, in Parquet or JSON). The last metaData and protocol actions win.
package delta

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"path"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/zbrecover/zbrecover/schemadiff"
	"github.com/zbrecover/zbrecover/storage"
)

// LogDir is the transaction log directory under the table root.
const LogDir = "_delta_log/"

// ErrNotDeltaTable is returned (wrapped) when the location has no Delta log.
var ErrNotDeltaTable = errors.New("no Delta transaction log (_delta_log/) found: is this a Delta table root?")

// ErrCatalogManaged is returned (wrapped) for a catalog-managed table, whose newest commits may
// exist only in the catalog: reading its log from storage would give a stale schema.
var ErrCatalogManaged = errors.New("the table is catalog-managed (reader feature catalogManaged): " +
	"its log in storage may be incomplete; read the schema through Unity Catalog or the warehouse instead")

// ErrUnsupportedProtocol is returned (wrapped) for a table whose protocol asks for a reader
// version newer than MaxReaderVersion, or for a reader feature this reader does not know: the
// protocol says such a table must not be read, since its log may mean something else.
var ErrUnsupportedProtocol = errors.New("unsupported Delta protocol")

// MaxReaderVersion is the newest Delta reader protocol version Read supports: 1, 2 (column
// mapping) and 3 (table features, checked one by one against readerFeatures).
const MaxReaderVersion = 3

// readerFeatures are the reader features Read knows, with why each leaves the latest schema
// readable from the log. Read refuses a table listing any other, naming it. The
// catalog-managed features are known too, and refused with ErrCatalogManaged.
var readerFeatures = map[string]string{
	"columnMapping":            "physical names are mapped (delta.columnMapping.physicalName)",
	"deletionVectors":          "changes which rows of a data file count, not the schema",
	"timestampNtz":             "timestamp_ntz is a type of the model",
	"v2Checkpoint":             "V2 checkpoints are read",
	"vacuumProtocolCheck":      "constrains VACUUM, not readers",
	"typeWidening":             "the schema holds each column's current (widened) type",
	"typeWidening-preview":     "the schema holds each column's current (widened) type",
	"variantType":              "variant is a type of the model",
	"variantType-preview":      "variant is a type of the model",
	"variantShredding":         "changes how variant values are stored, not the schema",
	"variantShredding-preview": "changes how variant values are stored, not the schema",
	"geospatial":               "geometry and geography are types of the model",
	"catalogManaged":           "refused: ErrCatalogManaged",
	"catalogOwned-preview":     "refused: ErrCatalogManaged",
}

// Snapshot is the latest state of a table's metadata and protocol.
type Snapshot struct {
	// Version is the newest table version in the log.
	Version int64 `json:"version"`
	// TableID is metaData.id.
	TableID string `json:"table_id"`
	// Schema is the parsed SchemaString.
	Schema schemadiff.Schema `json:"-"`
	// SchemaString is metaData.schemaString exactly as the log holds it.
	SchemaString     string            `json:"schema_string"`
	PartitionColumns []string          `json:"partition_columns"`
	Configuration    map[string]string `json:"configuration"`
	MinReaderVersion int               `json:"min_reader_version"`
	MinWriterVersion int               `json:"min_writer_version"`
	ReaderFeatures   []string          `json:"reader_features"`
	WriterFeatures   []string          `json:"writer_features"`
	// CheckpointVersion is the newest complete checkpoint's version, nil when there is none.
	CheckpointVersion *int64 `json:"checkpoint_version"`
	// MetaDataFile and ProtocolFile name the log files (relative to _delta_log/) whose metaData
	// and protocol actions won: a commit, a checkpoint (its first part holding the action) or a
	// version checksum file.
	MetaDataFile string `json:"metadata_file"`
	ProtocolFile string `json:"protocol_file"`
	// ColumnMappingMode is delta.columnMapping.mode: "none", "name" or "id".
	ColumnMappingMode string `json:"column_mapping_mode"`
}

// Option changes how Read works.
type Option func(*options)

type options struct {
	noChecksums bool
}

// IgnoreChecksums makes Read replay the log without looking at version checksum (.crc) files.
func IgnoreChecksums() Option { return func(o *options) { o.noChecksums = true } }

// metaData is the Delta metaData action (and the crc "metadata").
type metaData struct {
	ID               string            `json:"id"`
	SchemaString     string            `json:"schemaString"`
	PartitionColumns []string          `json:"partitionColumns"`
	Configuration    map[string]string `json:"configuration"`
}

// protocol is the Delta protocol action.
type protocol struct {
	MinReaderVersion int      `json:"minReaderVersion"`
	MinWriterVersion int      `json:"minWriterVersion"`
	ReaderFeatures   []string `json:"readerFeatures"`
	WriterFeatures   []string `json:"writerFeatures"`
}

var (
	commitRe     = regexp.MustCompile(`^(\d{20})\.json$`)
	crcRe        = regexp.MustCompile(`^(\d{20})\.crc$`)
	classicRe    = regexp.MustCompile(`^(\d{20})\.checkpoint\.parquet$`)
	multiPartRe  = regexp.MustCompile(`^(\d{20})\.checkpoint\.(\d{10})\.(\d{10})\.parquet$`)
	v2Re         = regexp.MustCompile(`^(\d{20})\.checkpoint\.[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\.(json|parquet)$`)
	lastCPName   = "_last_checkpoint"
	maxLineBytes = 256 << 20 // a single log line larger than this is refused
)

// checkpoint is one complete checkpoint: its files in part order.
type checkpoint struct {
	version int64
	files   []logFile
	kind    string // "classic", "multi-part", "v2"
}

type logFile struct {
	name string // relative to _delta_log/
	size int64
}

type listing struct {
	commits     map[int64]logFile
	crcs        map[int64]logFile
	checkpoints []checkpoint // complete ones, newest first
	lastCP      *logFile
	any         bool
}

// Read returns the latest snapshot of the table whose root is b. It reads _delta_log/ only,
// through List and ReadRange. Errors wrap ErrNotDeltaTable when there is no log and
// ErrCatalogManaged for catalog-managed tables; a log with commits missing where the replay
// needs them, or a corrupt checkpoint, is an error that names the file.
func Read(ctx context.Context, b storage.Backend, opts ...Option) (*Snapshot, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	ls, err := list(ctx, b)
	if err != nil {
		return nil, err
	}
	if !ls.any {
		return nil, fmt.Errorf("%s: %w", b.Location(), ErrNotDeltaTable)
	}
	// The listing is authoritative: the newest complete checkpoint wins. _last_checkpoint is
	// read only to choose among several complete checkpoints of that version.
	var cp *checkpoint
	if len(ls.checkpoints) > 0 {
		cp = &ls.checkpoints[0]
		if len(ls.checkpoints) > 1 && ls.checkpoints[1].version == cp.version {
			hint := readLastCheckpoint(ctx, b, ls.lastCP)
			for i := range ls.checkpoints {
				c := &ls.checkpoints[i]
				if c.version != cp.version {
					break
				}
				if hint.v2Path != "" && c.files[0].name == hint.v2Path {
					cp = c
				}
			}
		}
	}

	latest := int64(-1)
	for v := range ls.commits {
		latest = max(latest, v)
	}
	if cp != nil {
		latest = max(latest, cp.version)
	}
	if latest < 0 {
		return nil, fmt.Errorf("%s: %w (only checksum or incomplete checkpoint files)", b.Location(), ErrNotDeltaTable)
	}

	st := state{}
	floor := int64(0)
	if cp != nil {
		floor = cp.version
	}
	for v := latest; v >= floor && !st.done(); v-- {
		if !o.noChecksums {
			if f, ok := ls.crcs[v]; ok && st.fromChecksum(ctx, b, f) {
				break
			}
		}
		if cp != nil && v == cp.version {
			if err := st.fromCheckpoint(ctx, b, cp); err != nil {
				return nil, err
			}
			break
		}
		f, ok := ls.commits[v]
		if !ok {
			where := "with no checkpoint to start from"
			if cp != nil {
				where = fmt.Sprintf("after checkpoint %d", cp.version)
			}
			return nil, fmt.Errorf("%s: Delta log incomplete: commit %020d.json is missing (newest version %d, %s)%s",
				b.Location(), v, latest, where, missingCheckpointHint(ctx, b, ls))
		}
		if err := st.fromCommit(ctx, b, f); err != nil {
			return nil, err
		}
	}
	if st.md == nil || st.proto == nil {
		missing := "metaData"
		if st.md != nil {
			missing = "protocol"
		}
		return nil, fmt.Errorf("%s: Delta log has no %s action up to version %d", b.Location(), missing, latest)
	}
	if slices.Contains(st.proto.ReaderFeatures, "catalogManaged") || slices.Contains(st.proto.ReaderFeatures, "catalogOwned-preview") {
		return nil, fmt.Errorf("%s: %w", b.Location(), ErrCatalogManaged)
	}
	if err := checkProtocol(st.proto); err != nil {
		return nil, fmt.Errorf("%s: %s%s: %w", b.Location(), LogDir, st.protoFile, err)
	}
	schema, err := schemadiff.ParseDeltaSchema(st.md.SchemaString)
	if err != nil {
		return nil, fmt.Errorf("%s: schema in %s: %w", b.Location(), st.mdFile, err)
	}
	snap := &Snapshot{
		Version:           latest,
		TableID:           st.md.ID,
		Schema:            schema,
		SchemaString:      st.md.SchemaString,
		PartitionColumns:  orEmpty(st.md.PartitionColumns),
		Configuration:     st.md.Configuration,
		MinReaderVersion:  st.proto.MinReaderVersion,
		MinWriterVersion:  st.proto.MinWriterVersion,
		ReaderFeatures:    orEmpty(st.proto.ReaderFeatures),
		WriterFeatures:    orEmpty(st.proto.WriterFeatures),
		MetaDataFile:      st.mdFile,
		ProtocolFile:      st.protoFile,
		ColumnMappingMode: "none",
	}
	if snap.Configuration == nil {
		snap.Configuration = map[string]string{}
	}
	if m := snap.Configuration["delta.columnMapping.mode"]; m != "" {
		snap.ColumnMappingMode = m
	}
	if cp != nil {
		v := cp.version
		snap.CheckpointVersion = &v
	}
	return snap, nil
}

// checkProtocol refuses a protocol this reader cannot honour: a reader version outside
// 1..MaxReaderVersion, or a reader feature it does not know. The error names the version or
// the features, wraps ErrUnsupportedProtocol, and says where to read the schema instead.
func checkProtocol(p *protocol) error {
	const instead = "read the schema through Unity Catalog or the warehouse instead (--from uc or --from warehouse)"
	if p.MinReaderVersion < 1 {
		return fmt.Errorf("%w: the protocol action has minReaderVersion %d, which no Delta writer produces; the log is damaged or was not written by Delta",
			ErrUnsupportedProtocol, p.MinReaderVersion)
	}
	if p.MinReaderVersion > MaxReaderVersion {
		return fmt.Errorf("%w: the table needs Delta reader version %d (minReaderVersion), and zbrecover reads Delta reader versions 1 to %d; %s",
			ErrUnsupportedProtocol, p.MinReaderVersion, MaxReaderVersion, instead)
	}
	var unknown []string
	for _, f := range p.ReaderFeatures {
		if _, ok := readerFeatures[f]; !ok {
			unknown = append(unknown, strconv.Quote(f))
		}
	}
	if len(unknown) > 0 {
		what := "an unknown reader feature"
		if len(unknown) > 1 {
			what = "unknown reader features"
		}
		return fmt.Errorf("%w: the table needs %s, %s, which zbrecover does not know; %s",
			ErrUnsupportedProtocol, what, strings.Join(unknown, ", "), instead)
	}
	return nil
}

// checkMetaData refuses a metaData action without the table's schema, naming what is missing
// instead of failing later on an empty JSON document.
func checkMetaData(md *metaData) error {
	if md != nil && md.SchemaString == "" {
		return errors.New("the metaData action has no schemaString (the table's schema): the log is damaged or was not written by Delta")
	}
	return nil
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// list reads the names in _delta_log/ (not its subfolders) and groups them.
func list(ctx context.Context, b storage.Backend) (*listing, error) {
	ls := &listing{commits: map[int64]logFile{}, crcs: map[int64]logFile{}}
	type parts struct {
		of    int
		files map[int]logFile
	}
	multi := map[int64]map[int]*parts{} // version → part count → parts seen
	var classic, v2 []checkpoint
	err := b.List(ctx, LogDir, func(oi storage.ObjectInfo) error {
		name := strings.TrimPrefix(oi.Key, LogDir)
		if name == oi.Key || strings.Contains(name, "/") || strings.HasPrefix(name, ".") {
			return nil // subfolders (_sidecars, _staged_commits, …) and Hadoop side files
		}
		f := logFile{name: name, size: oi.Size}
		if name != lastCPName && len(name) >= 20 && isDigits(name[:20]) {
			if _, err := checkVersion(name); err != nil {
				return err
			}
		}
		switch {
		case name == lastCPName:
			ls.lastCP = &f
		case commitRe.MatchString(name):
			ls.commits[version(name)] = f
			ls.any = true
		case crcRe.MatchString(name):
			ls.crcs[version(name)] = f
		case classicRe.MatchString(name):
			classic = append(classic, checkpoint{version: version(name), files: []logFile{f}, kind: "classic"})
			ls.any = true
		case v2Re.MatchString(name):
			v2 = append(v2, checkpoint{version: version(name), files: []logFile{f}, kind: "v2"})
			ls.any = true
		default:
			if m := multiPartRe.FindStringSubmatch(name); m != nil {
				v := version(name)
				part, _ := strconv.Atoi(m[2])
				of, _ := strconv.Atoi(m[3])
				if multi[v] == nil {
					multi[v] = map[int]*parts{}
				}
				if multi[v][of] == nil {
					multi[v][of] = &parts{of: of, files: map[int]logFile{}}
				}
				multi[v][of].files[part] = f
				ls.any = true
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list Delta log: %w", err)
	}
	cps := append(classic, v2...)
	for v, byCount := range multi {
		for of, ps := range byCount {
			if of < 1 || len(ps.files) != of {
				continue // readers must ignore multi-part checkpoints with missing parts
			}
			files := make([]logFile, 0, of)
			complete := true
			for i := 1; i <= of; i++ {
				f, ok := ps.files[i]
				if !ok {
					complete = false
					break
				}
				files = append(files, f)
			}
			if complete {
				cps = append(cps, checkpoint{version: v, files: files, kind: "multi-part"})
			}
		}
	}
	// Newest first; within a version, V2 before classic before multi-part (the cheapest to read
	// first), then by name for a stable choice.
	rank := map[string]int{"v2": 0, "classic": 1, "multi-part": 2}
	sort.Slice(cps, func(i, j int) bool {
		a, b := cps[i], cps[j]
		if a.version != b.version {
			return a.version > b.version
		}
		if rank[a.kind] != rank[b.kind] {
			return rank[a.kind] < rank[b.kind]
		}
		return a.files[0].name < b.files[0].name
	})
	ls.checkpoints = cps
	return ls, nil
}

// version is the version a log file name starts with; list has checked it with checkVersion.
func version(name string) int64 {
	v, _ := checkVersion(name)
	return v
}

// checkVersion parses the 20-digit version a log file name starts with, refusing one past the
// largest version Delta allows (2^63-1) instead of capping it: a log holding such a name was
// not written by Delta, and its newest version cannot be known.
func checkVersion(name string) (int64, error) {
	v, err := strconv.ParseInt(name[:20], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s%s: version %s is out of range (at most %d)", LogDir, name, name[:20], int64(math.MaxInt64))
	}
	return v, nil
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// lastCheckpoint is what Read takes from _last_checkpoint: the V2 checkpoint it names, to
// prefer among several complete checkpoints of the newest version, and the version it names,
// to explain a replay that cannot start.
type lastCheckpoint struct {
	v2Path  string
	version *int64
}

// missingCheckpointHint explains a replay that found no commit to continue from when
// _last_checkpoint names a checkpoint the listing does not hold complete: the checkpoint was
// deleted, or is still being written, while the commits before it are already gone.
func missingCheckpointHint(ctx context.Context, b storage.Backend, ls *listing) string {
	hint := readLastCheckpoint(ctx, b, ls.lastCP)
	if hint.version == nil {
		return ""
	}
	for _, cp := range ls.checkpoints {
		if cp.version == *hint.version {
			return ""
		}
	}
	return fmt.Sprintf("; %s%s names checkpoint version %d, which is missing or incomplete in the listing",
		LogDir, lastCPName, *hint.version)
}

// readLastCheckpoint reads _last_checkpoint as a hint. It is advisory (writers update it after
// the checkpoint, and the listing is authoritative), so a missing or unreadable file is ignored.
func readLastCheckpoint(ctx context.Context, b storage.Backend, f *logFile) lastCheckpoint {
	if f == nil {
		return lastCheckpoint{}
	}
	data, err := storage.ReadAll(ctx, b, LogDir+f.name, 0, -1)
	if err != nil {
		return lastCheckpoint{}
	}
	var lc struct {
		Version      *int64 `json:"version"`
		V2Checkpoint *struct {
			Path string `json:"path"`
		} `json:"v2Checkpoint"`
	}
	if json.Unmarshal(data, &lc) != nil {
		return lastCheckpoint{}
	}
	out := lastCheckpoint{version: lc.Version}
	if lc.V2Checkpoint != nil {
		out.v2Path = path.Base(lc.V2Checkpoint.Path)
	}
	return out
}

// state collects the newest metaData and protocol while the log is read newest first.
type state struct {
	md                *metaData
	proto             *protocol
	mdFile, protoFile string
}

func (s *state) done() bool { return s.md != nil && s.proto != nil }

func (s *state) take(md *metaData, p *protocol, file string) {
	if s.md == nil && md != nil {
		s.md, s.mdFile = md, file
	}
	if s.proto == nil && p != nil {
		s.proto, s.protoFile = p, file
	}
}

// fromChecksum uses a version checksum file if it holds both metadata and protocol. A missing,
// unreadable or partial checksum is not an error: the caller replays the log instead.
func (s *state) fromChecksum(ctx context.Context, b storage.Backend, f logFile) bool {
	data, err := storage.ReadAll(ctx, b, LogDir+f.name, 0, -1)
	if err != nil {
		return false
	}
	var crc struct {
		Metadata *metaData `json:"metadata"`
		Protocol *protocol `json:"protocol"`
	}
	if json.Unmarshal(data, &crc) != nil || crc.Metadata == nil || crc.Protocol == nil ||
		crc.Metadata.SchemaString == "" || crc.Protocol.MinReaderVersion == 0 {
		return false
	}
	s.take(crc.Metadata, crc.Protocol, f.name)
	return true
}

// fromCommit reads a JSON commit (or a JSON V2 checkpoint) for metaData and protocol.
func (s *state) fromCommit(ctx context.Context, b storage.Backend, f logFile) error {
	md, p, err := readJSONActions(ctx, b, f)
	if err != nil {
		return err
	}
	s.take(md, p, f.name)
	return nil
}

func (s *state) fromCheckpoint(ctx context.Context, b storage.Backend, cp *checkpoint) error {
	for _, f := range cp.files {
		if s.done() {
			return nil
		}
		var (
			md  *metaData
			p   *protocol
			err error
		)
		if strings.HasSuffix(f.name, ".json") {
			md, p, err = readJSONActions(ctx, b, f)
		} else {
			md, p, err = readParquetCheckpoint(ctx, b, f)
		}
		if err != nil {
			return err
		}
		s.take(md, p, f.name)
	}
	return nil
}

var metaDataKey = []byte(`"metaData"`)

// readJSONActions scans newline-delimited actions and returns the metaData and protocol ones
// (the last of each, though a commit holds at most one).
func readJSONActions(ctx context.Context, b storage.Backend, f logFile) (*metaData, *protocol, error) {
	return readMetaDataAnd[protocol](ctx, b, f, "protocol")
}

// readMetaDataAnd scans a JSON commit for its metaData action and the action named other,
// decoded as a T, and returns the last of each (nil when the commit has none); a metaData
// without a schema is an error.
func readMetaDataAnd[T any](ctx context.Context, b storage.Backend, f logFile, other string) (*metaData, *T, error) {
	var (
		md *metaData
		o  *T
	)
	err := scanActions(ctx, b, f, [][]byte{metaDataKey, []byte(`"` + other + `"`)}, func(line []byte) error {
		var a map[string]json.RawMessage
		if err := json.Unmarshal(line, &a); err != nil {
			return err
		}
		var (
			lineMD *metaData
			lineO  *T
		)
		if raw, ok := a["metaData"]; ok {
			if err := json.Unmarshal(raw, &lineMD); err != nil {
				return err
			}
		}
		if raw, ok := a[other]; ok {
			if err := json.Unmarshal(raw, &lineO); err != nil {
				return err
			}
		}
		if err := checkMetaData(lineMD); err != nil {
			return err
		}
		if lineMD != nil {
			md = lineMD
		}
		if lineO != nil {
			o = lineO
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return md, o, nil
}

// scanActions reads the JSON commit f line by line and calls decode for each line holding one
// of keys (the cheap test that skips add and remove actions); a decode error names the line.
func scanActions(ctx context.Context, b storage.Backend, f logFile, keys [][]byte, decode func(line []byte) error) error {
	rc, err := b.ReadRange(ctx, LogDir+f.name, 0, -1)
	if err != nil {
		return fmt.Errorf("read %s%s: %w", LogDir, f.name, err)
	}
	defer rc.Close()
	r := bufio.NewReaderSize(rc, 64<<10)
	for lineNo := 1; ; lineNo++ {
		line, err := readLine(r)
		if len(bytes.TrimSpace(line)) > 0 && slices.ContainsFunc(keys, func(k []byte) bool { return bytes.Contains(line, k) }) {
			if jerr := decode(line); jerr != nil {
				return fmt.Errorf("%s: %s%s line %d: %w", b.Location(), LogDir, f.name, lineNo, jerr)
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read %s%s: %w", LogDir, f.name, err)
		}
	}
}

func readLine(r *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, isPrefix, err := r.ReadLine()
		line = append(line, chunk...)
		if len(line) > maxLineBytes {
			return nil, fmt.Errorf("log line longer than %d bytes", maxLineBytes)
		}
		if err != nil || !isPrefix {
			return line, err
		}
	}
}
