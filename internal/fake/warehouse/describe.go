package warehouse

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

func (e *DuckDB) describe(ctx context.Context, sess *Session, p *parser) (*Result, error) {
	p.next() // DESCRIBE / DESC
	switch {
	case p.acceptKw("HISTORY"):
		return e.describeHistory(sess, p)
	case p.acceptKw("DETAIL"):
		return e.describeDetail(sess, p)
	case p.acceptKw("QUERY"), p.peek().isKw("SELECT"), p.peek().isKw("WITH"), p.peek().isKw("VALUES"):
		q, _, err := e.rewrite(ctx, sess, p.toks[p.i:], rewriteOpts{})
		if err != nil {
			return nil, err
		}
		cols, err := e.describeSQL(ctx, q)
		if err != nil {
			return nil, err
		}
		return describeColumns(cols), nil
	case p.acceptKw("SCHEMA"), p.acceptKw("DATABASE"):
		p.acceptKw("EXTENDED")
		parts, err := p.qualifiedName()
		if err != nil {
			return nil, err
		}
		cat, sch := sess.Catalog, parts[len(parts)-1]
		if len(parts) == 2 {
			cat = parts[0]
		}
		s, err := e.schemaOf(strings.ToLower(cat), strings.ToLower(sch))
		if err != nil {
			return nil, err
		}
		return infoResult("database_description_item", "database_description_value",
			[][2]string{{"Catalog Name", strings.ToLower(cat)}, {"Namespace Name", s.name}, {"Comment", s.comment}}), nil
	case p.acceptKw("CATALOG"):
		p.acceptKw("EXTENDED")
		name, err := p.ident()
		if err != nil {
			return nil, err
		}
		c, ok := e.catalogs[strings.ToLower(name)]
		if !ok {
			return nil, errCatalogNotFound(strings.ToLower(name))
		}
		return infoResult("info_name", "info_value", [][2]string{{"Catalog Name", c.name}, {"Comment", c.comment}}), nil
	}
	p.acceptKw("TABLE")
	extended := p.acceptKw("EXTENDED") || p.acceptKw("FORMATTED")
	parts, err := p.qualifiedName()
	if err != nil {
		return nil, err
	}
	asJSON := p.acceptKw("AS", "JSON")
	if !p.atEnd() {
		return nil, errUnsupported("DESCRIBE of a single column or partition")
	}
	t, err := e.table(sess, parts)
	if err != nil {
		return nil, err
	}
	if asJSON {
		if !extended {
			return nil, &SQLError{Class: "DESCRIBE_JSON_NOT_EXTENDED", SQLState: "0A000",
				Message: "DESCRIBE TABLE ... AS JSON only supported when [EXTENDED|FORMATTED] is specified.\nFor example: DESCRIBE EXTENDED <tableName> AS JSON is supported but DESCRIBE <tableName> AS JSON is not."}
		}
		doc, err := e.describeJSON(t)
		if err != nil {
			return nil, err
		}
		return &Result{Columns: []Column{{Name: "json_metadata", Type: Prim(KindString)}}, Rows: [][]any{{doc}}}, nil
	}
	res := describeColumns(t.cols)
	add := func(a, b, c any) { res.Rows = append(res.Rows, []any{a, b, c}) }
	if len(t.partitionCols) > 0 {
		add("# Partition Information", "", "")
		add("# col_name", "data_type", "comment")
		for _, pc := range t.partitionCols {
			if i := t.col(pc); i >= 0 {
				add(t.cols[i].Name, t.cols[i].Type.Simple(), nullIfEmpty(t.cols[i].Comment))
			}
		}
	}
	if extended {
		add("", "", "")
		add("# Detailed Table Information", "", "")
		typ := "MANAGED"
		if !t.managed {
			typ = "EXTERNAL"
		}
		for _, kv := range [][2]string{
			{"Catalog", t.catalog}, {"Database", t.schema}, {"Table", t.name},
			{"Created Time", t.created.Format("Mon Jan 02 15:04:05 UTC 2006")}, {"Last Access", "UNKNOWN"},
			{"Created By", "Spark "}, {"Type", typ}, {"Comment", t.comment}, {"Location", t.location},
			{"Provider", "delta"}, {"Owner", e.opts.UserName}, {"Is_managed_location", strconv.FormatBool(t.managed)},
			{"Table Properties", propsString(t.props)},
		} {
			if kv[1] != "" || kv[0] == "Created By" {
				add(kv[0], kv[1], "")
			}
		}
	}
	return res, nil
}

func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func describeColumns(cols []Field) *Result {
	res := &Result{Columns: []Column{
		{Name: "col_name", Type: Prim(KindString)}, {Name: "data_type", Type: Prim(KindString)}, {Name: "comment", Type: Prim(KindString)},
	}}
	for _, c := range cols {
		res.Rows = append(res.Rows, []any{c.Name, c.Type.Simple(), nullIfEmpty(c.Comment)})
	}
	return res
}

func infoResult(k, v string, rows [][2]string) *Result {
	res := &Result{Columns: []Column{{Name: k, Type: Prim(KindString)}, {Name: v, Type: Prim(KindString)}}}
	for _, r := range rows {
		res.Rows = append(res.Rows, []any{r[0], r[1]})
	}
	return res
}

func propsString(props map[string]string) string {
	if len(props) == 0 {
		return ""
	}
	parts := make([]string, 0, len(props))
	for _, k := range sortedKeys(props) {
		parts = append(parts, k+"="+props[k])
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// describeJSON renders the document of DESCRIBE TABLE EXTENDED … AS JSON (Spark's
// DescribeRelationJsonCommand: null fields omitted, not pretty-printed).
func (e *DuckDB) describeJSON(t *tableMeta) (string, error) {
	cols := make([]any, len(t.cols))
	for i, c := range t.cols {
		m := orderedJSON{{"name", c.Name}, {"type", c.Type.JSON()}}
		if c.Comment != "" {
			m = append(m, kv{"comment", c.Comment})
		}
		m = append(m, kv{"nullable", c.Nullable})
		cols[i] = m
	}
	typ := "MANAGED"
	if !t.managed {
		typ = "EXTERNAL"
	}
	doc := orderedJSON{
		{"table_name", t.name},
		{"catalog_name", t.catalog},
		{"schema_name", t.schema},
		{"namespace", []string{t.schema}},
		{"type", typ},
		{"provider", "delta"},
		{"columns", cols},
		{"partition_columns", nonNil(t.partitionCols)},
		{"location", t.location},
		{"owner", e.opts.UserName},
	}
	if t.comment != "" {
		doc = append(doc, kv{"comment", t.comment})
	}
	props := orderedJSON{}
	for _, k := range sortedKeys(t.props) {
		props = append(props, kv{k, t.props[k]})
	}
	doc = append(doc,
		kv{"table_properties", props},
		kv{"created_time", t.created.UTC().Format("2006-01-02T15:04:05Z")},
		kv{"created_by", "Spark "},
		kv{"last_access", "UNKNOWN"},
		kv{"partition_provider", "Catalog"},
	)
	b, err := json.Marshal(doc)
	if err != nil {
		return "", errInternal(err)
	}
	return string(b), nil
}

type kv struct {
	k string
	v any
}

// orderedJSON marshals as a JSON object with keys in slice order.
type orderedJSON []kv

func (o orderedJSON) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, p := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(p.k)
		b.Write(k)
		b.WriteByte(':')
		v, err := json.Marshal(p.v)
		if err != nil {
			return nil, err
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

var historyColumns = []Column{
	{Name: "version", Type: Prim(KindLong)},
	{Name: "timestamp", Type: Prim(KindTimestamp)},
	{Name: "userId", Type: Prim(KindString)},
	{Name: "userName", Type: Prim(KindString)},
	{Name: "operation", Type: Prim(KindString)},
	{Name: "operationParameters", Type: MapOf(Prim(KindString), Prim(KindString))},
	{Name: "job", Type: StructOf(
		Field{Name: "jobId", Type: Prim(KindString), Nullable: true},
		Field{Name: "jobName", Type: Prim(KindString), Nullable: true},
		Field{Name: "jobRunId", Type: Prim(KindString), Nullable: true},
		Field{Name: "runId", Type: Prim(KindString), Nullable: true},
		Field{Name: "jobOwnerId", Type: Prim(KindString), Nullable: true},
		Field{Name: "triggerType", Type: Prim(KindString), Nullable: true},
	)},
	{Name: "notebook", Type: StructOf(Field{Name: "notebookId", Type: Prim(KindString), Nullable: true})},
	{Name: "clusterId", Type: Prim(KindString)},
	{Name: "readVersion", Type: Prim(KindLong)},
	{Name: "isolationLevel", Type: Prim(KindString)},
	{Name: "isBlindAppend", Type: Prim(KindBoolean)},
	{Name: "operationMetrics", Type: MapOf(Prim(KindString), Prim(KindString))},
	{Name: "userMetadata", Type: Prim(KindString)},
	{Name: "engineInfo", Type: Prim(KindString)},
}

// describeHistory implements DESCRIBE HISTORY t [LIMIT n]: newest version first, metrics as
// string maps, as Delta reports them.
func (e *DuckDB) describeHistory(sess *Session, p *parser) (*Result, error) {
	parts, err := p.qualifiedName()
	if err != nil {
		return nil, err
	}
	limit := -1
	if p.acceptKw("LIMIT") {
		n, err := strconv.Atoi(p.next().val)
		if err != nil || n < 0 {
			return nil, p.errorf("LIMIT takes a non-negative number")
		}
		limit = n
	}
	t, err := e.table(sess, parts)
	if err != nil {
		return nil, err
	}
	res := &Result{Columns: historyColumns}
	for i := len(t.history) - 1; i >= 0; i-- {
		if limit >= 0 && len(res.Rows) >= limit {
			break
		}
		c := t.history[i]
		var rv any
		if c.ReadVersion != nil {
			rv = *c.ReadVersion
		}
		res.Rows = append(res.Rows, []any{
			c.Version, c.Timestamp, userID(c.UserName), c.UserName, c.Operation,
			mapEntries(c.Parameters), nil, nil, clusterID(c.EngineInfo), rv, "WriteSerializable", c.IsBlindAppend,
			mapEntries(c.Metrics), nullIfEmpty(c.UserMetadata), c.EngineInfo,
		})
	}
	return res, nil
}

// userID is a stable numeric user id for a user name, as history shows one.
func userID(name string) string {
	h := uint64(14695981039346656037)
	for i := 0; i < len(name); i++ {
		h = (h ^ uint64(name[i])) * 1099511628211
	}
	return strconv.FormatUint(h%1e15, 10)
}

// clusterID is the clusterId of a commit: the warehouse's for its own statements, none for
// other engines (Zerobus).
func clusterID(engineInfo string) any {
	if engineInfo == defaultEngineInfo {
		return "fake-warehouse"
	}
	return nil
}

func mapEntries(m map[string]string) []MapEntry {
	out := make([]MapEntry, 0, len(m))
	for _, k := range sortedKeys(m) {
		out = append(out, MapEntry{Key: k, Value: m[k]})
	}
	return out
}

// describeDetail implements DESCRIBE DETAIL t (one row).
func (e *DuckDB) describeDetail(sess *Session, p *parser) (*Result, error) {
	parts, err := p.qualifiedName()
	if err != nil {
		return nil, err
	}
	t, err := e.table(sess, parts)
	if err != nil {
		return nil, err
	}
	parts2 := make([]any, len(t.partitionCols))
	for i, c := range t.partitionCols {
		parts2[i] = c
	}
	files := int64(len(t.files))
	res := &Result{Columns: []Column{
		{Name: "format", Type: Prim(KindString)}, {Name: "id", Type: Prim(KindString)}, {Name: "name", Type: Prim(KindString)},
		{Name: "description", Type: Prim(KindString)}, {Name: "location", Type: Prim(KindString)},
		{Name: "createdAt", Type: Prim(KindTimestamp)}, {Name: "lastModified", Type: Prim(KindTimestamp)},
		{Name: "partitionColumns", Type: ArrayOf(Prim(KindString))}, {Name: "numFiles", Type: Prim(KindLong)},
		{Name: "sizeInBytes", Type: Prim(KindLong)}, {Name: "properties", Type: MapOf(Prim(KindString), Prim(KindString))},
		{Name: "minReaderVersion", Type: Prim(KindInt)}, {Name: "minWriterVersion", Type: Prim(KindInt)},
	}}
	res.Rows = [][]any{{"delta", t.id, t.fullName(), nullIfEmpty(t.comment), t.location, t.created, t.lastModified,
		parts2, files, filesSize(t.files), mapEntries(t.props), int64(1), int64(2)}}
	return res, nil
}

// HistoryEntry is one version of a table, for tests that inspect the engine directly.
type HistoryEntry struct {
	Version   int64
	Operation string
	Metrics   map[string]string
}

// History returns a table's versions, oldest first.
func (e *DuckDB) History(name string) ([]HistoryEntry, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	t, err := e.table(&Session{Catalog: "main", Schema: "default"}, strings.Split(name, "."))
	if err != nil {
		return nil, err
	}
	out := make([]HistoryEntry, len(t.history))
	for i, c := range t.history {
		out[i] = HistoryEntry{Version: c.Version, Operation: c.Operation, Metrics: c.Metrics}
	}
	return out, nil
}

// LoadedFiles returns the source files COPY INTO has loaded into a table, as URLs, sorted.
func (e *DuckDB) LoadedFiles(name string) ([]string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	t, err := e.table(&Session{Catalog: "main", Schema: "default"}, strings.Split(name, "."))
	if err != nil {
		return nil, err
	}
	return sortedKeys(t.loaded), nil
}

// SetLocation sets a table's storage location (a URL or local path) and keeps it managed, so
// tests can place a managed table's root where their fallback files are.
func (e *DuckDB) SetLocation(name, location string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	t, err := e.table(&Session{Catalog: "main", Schema: "default"}, strings.Split(name, "."))
	if err != nil {
		return err
	}
	u, err := canonicalURL(location)
	if err != nil {
		return err
	}
	// Versions already written to a local log are read back from it.
	if old, ok := localPath(t.location); ok && !t.foreignLog {
		for i := range t.history {
			c := &t.history[i]
			if c.logLines != nil {
				continue
			}
			b, err := os.ReadFile(filepath.Join(old, "_delta_log", fmt.Sprintf("%020d.json", c.Version)))
			if err != nil {
				return err
			}
			c.logLines = strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
		}
	}
	t.location = u
	ensureLocalDir(u)
	if t.foreignLog = hasDeltaLog(u); !t.foreignLog {
		if err := writeDeltaLog(u, t.history); err != nil {
			return err
		}
		if _, ok := localPath(u); ok {
			for i := range t.history {
				t.history[i].logLines = nil
			}
		}
	}
	return nil
}

// Location returns a table's storage location URL.
func (e *DuckDB) Location(name string) (string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	t, err := e.table(&Session{Catalog: "main", Schema: "default"}, strings.Split(name, "."))
	if err != nil {
		return "", err
	}
	return t.location, nil
}
