package warehouse

import (
	"context"
	"fmt"
	"os"
	"path"
	"regexp"
	"strconv"
	"strings"
)

// How a path-based source is read, as Spark's file index and Parquet reader do it (CODE:
// apache/spark PartitioningAwareFileIndex.allFiles, PartitioningUtils.parsePartitions,
// ParquetFileFormat.inferSchema):
//
//   - A directory is listed recursively, but without recursiveFileLookup only the files directly
//     in it are read, unless some folders are named k=v: then the folders' names are partition
//     columns (their values typed by inference) and only the files of partition folders are
//     read. All partition folders must sit under one base and name the same columns, or the read
//     fails. With recursiveFileLookup every file is read and no partition is inferred.
//   - The schema of a multi-file source is the first file's (in listing order, or FILES order):
//     columns only later files have are dropped, columns they lack are NULL. FORMAT_OPTIONS
//     mergeSchema merges every file's schema instead.

// partValue is one k=v folder component of a file's path.
type partValue struct{ name, value string }

// canonical normalises a location as canonicalURL does, and maps Unity Catalog volume paths
// (/Volumes/<catalog>/<schema>/<volume>/…, dbfs:/Volumes/…) to their folders.
func (e *DuckDB) canonical(raw string) (string, error) {
	r := raw // a path keeps its spaces: a file name may end in one
	r = strings.TrimPrefix(r, "dbfs:")
	if strings.HasPrefix(r, "/Volumes/") {
		parts := strings.SplitN(strings.TrimPrefix(r, "/Volumes/"), "/", 4)
		if len(parts) < 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
			return "", &SQLError{Class: "INVALID_PARAMETER_VALUE", SQLState: "22023",
				Message: fmt.Sprintf("Invalid volume path '%s': expected /Volumes/<catalog>/<schema>/<volume>/<path>.", raw)}
		}
		key := strings.ToLower(parts[0] + "." + parts[1] + "." + parts[2])
		dir, ok := e.volumes[key]
		if !ok {
			return "", &SQLError{Class: "UC_VOLUME_NOT_FOUND", SQLState: "42704",
				Message: fmt.Sprintf("Volume %s does not exist. Please use 'SHOW VOLUMES' to list available volumes.", quoteName(strings.Split(key, ".")...))}
		}
		rest := ""
		if len(parts) == 4 {
			rest = parts[3]
		}
		return canonicalURL(path.Join(dir, rest))
	}
	return canonicalURL(raw)
}

var rePartitionDir = regexp.MustCompile(`^([^=/]+)=([^/]*)$`)

// selectFiles applies Spark's rules for reading a directory to its recursive listing: it
// returns the files read and the partition columns inferred.
func selectFiles(all []srcFile, recursive bool) ([]srcFile, []Field, error) {
	if recursive {
		return all, nil, nil
	}
	type leaf struct {
		base  string
		parts []partValue
	}
	leaves := map[string]*leaf{}
	var order []string
	for _, f := range all {
		dir := path.Dir(f.Rel)
		if dir == "." {
			dir = ""
		}
		if _, ok := leaves[dir]; ok {
			continue
		}
		l := &leaf{base: dir}
		if dir != "" {
			comps := strings.Split(dir, "/")
			i := len(comps) - 1
			for ; i >= 0; i-- {
				m := rePartitionDir.FindStringSubmatch(comps[i])
				if m == nil {
					if len(l.parts) > 0 {
						break
					}
					continue
				}
				l.parts = append([]partValue{{name: m[1], value: m[2]}}, l.parts...)
			}
			if len(l.parts) > 0 {
				l.base = strings.Join(comps[:i+1], "/")
			}
		}
		leaves[dir] = l
		order = append(order, dir)
	}
	partitioned := false
	for _, d := range order {
		if len(leaves[d].parts) > 0 {
			partitioned = true
		}
	}
	if !partitioned {
		var out []srcFile
		for _, f := range all {
			if !strings.Contains(f.Rel, "/") {
				out = append(out, f)
			}
		}
		return out, nil, nil
	}
	bases := map[string]bool{}
	var names []string
	for _, d := range order {
		l := leaves[d]
		bases[l.base] = true
		if len(l.parts) == 0 {
			continue
		}
		var ns []string
		for _, p := range l.parts {
			ns = append(ns, strings.ToLower(p.name))
		}
		if names == nil {
			names = ns
		} else if strings.Join(names, ",") != strings.Join(ns, ",") {
			return nil, nil, &SQLError{Class: "CONFLICTING_PARTITION_COLUMN_NAMES", SQLState: "KD009", Message: fmt.Sprintf(
				"Conflicting partition column names detected: Partition column name list #0: %s Partition column name list #1: %s.",
				strings.Join(names, ", "), strings.Join(ns, ", "))}
		}
	}
	if len(bases) > 1 {
		var bs []string
		for _, d := range order {
			bs = append(bs, "/"+leaves[d].base)
		}
		return nil, nil, &SQLError{Class: "CONFLICTING_DIRECTORY_STRUCTURES", SQLState: "KD009", Message: fmt.Sprintf(
			"Conflicting directory structures detected. Suspicious paths: %s. If provided paths are partition directories, "+
				"please set \"basePath\" in the options of the data source to specify the root directory of the table.", strings.Join(bs, ", "))}
	}
	values := make([][]string, len(names))
	var out []srcFile
	for _, f := range all {
		dir := path.Dir(f.Rel)
		if dir == "." {
			dir = ""
		}
		l := leaves[dir]
		if len(l.parts) == 0 {
			continue // files outside partition folders are not read
		}
		f.parts = l.parts
		for i, p := range l.parts {
			values[i] = append(values[i], p.value)
		}
		out = append(out, f)
	}
	var first *leaf
	for _, d := range order {
		if len(leaves[d].parts) > 0 {
			first = leaves[d]
			break
		}
	}
	cols := make([]Field, len(names))
	for i := range names {
		cols[i] = Field{Name: first.parts[i].name, Type: inferPartitionType(values[i]), Nullable: true}
	}
	return out, cols, nil
}

var reDateValue = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)

// inferPartitionType types partition values as Spark's partition inference does: int, then
// bigint, then double, then date, else string; __HIVE_DEFAULT_PARTITION__ is NULL.
func inferPartitionType(values []string) *Type {
	all := func(ok func(string) bool) bool {
		for _, v := range values {
			if v != hiveNull && !ok(v) {
				return false
			}
		}
		return true
	}
	switch {
	case all(func(v string) bool { _, err := strconv.ParseInt(v, 10, 32); return err == nil }):
		return Prim(KindInt)
	case all(func(v string) bool { _, err := strconv.ParseInt(v, 10, 64); return err == nil }):
		return Prim(KindLong)
	case all(func(v string) bool { _, err := strconv.ParseFloat(v, 64); return err == nil }):
		return Prim(KindDouble)
	case all(reDateValue.MatchString):
		return Prim(KindDate)
	}
	return Prim(KindString)
}

const hiveNull = "__HIVE_DEFAULT_PARTITION__"

// readFileSchema returns a Parquet file's columns with Spark types.
func (e *DuckDB) readFileSchema(ctx context.Context, f srcFile) ([]Field, error) {
	var key fileSchemaKey
	if fi, err := os.Stat(f.local); err == nil && fi.Mode().IsRegular() {
		key = fileSchemaKey{local: f.local, size: fi.Size(), modNano: fi.ModTime().UnixNano()}
		e.schemaMu.Lock()
		cols, ok := e.fileSchemas[key]
		e.schemaMu.Unlock()
		if ok {
			return append([]Field(nil), cols...), nil
		}
	}
	cols, err := e.readFileSchemaUncached(ctx, f)
	if err == nil && key.local != "" {
		e.schemaMu.Lock()
		if e.fileSchemas == nil {
			e.fileSchemas = map[fileSchemaKey][]Field{}
		}
		e.fileSchemas[key] = append([]Field(nil), cols...)
		e.schemaMu.Unlock()
	}
	return cols, err
}

func (e *DuckDB) readFileSchemaUncached(ctx context.Context, f srcFile) ([]Field, error) {
	cols, err := e.describeSQL(ctx, "SELECT * FROM read_parquet("+duckString(f.local)+", hive_partitioning = false)")
	if err != nil {
		return nil, &SQLError{Class: "FAILED_READ_FILE.CANNOT_READ_FILE_FOOTER", SQLState: "KD001",
			Message: fmt.Sprintf("Error while reading file %s. Could not read footer. Please ensure that the file is in either ORC or Parquet format. "+
				"If not, please convert it to a valid format. If the file is in the valid format, please check if it is corrupt. "+
				"If it is, you can choose to either ignore it or fix the corruption.", f.URL)}
	}
	if err := e.fixInt96(ctx, f.local, cols); err != nil {
		return nil, err
	}
	return cols, nil
}

// sourceSchema is the schema a multi-file read uses: the first file's, or with merge every
// file's merged; partition columns come last.
func sourceSchema(schemas [][]Field, merge bool, partCols []Field) ([]Field, error) {
	var out []Field
	if len(schemas) > 0 {
		out = append(out, schemas[0]...)
	}
	if merge {
		for _, s := range schemas[1:] {
			var err error
			if out, err = mergeFields(out, s); err != nil {
				return nil, err
			}
		}
	}
	for _, p := range partCols {
		if !containsField(out, p.Name) {
			out = append(out, p)
		}
	}
	return out, nil
}

// mergeFields merges two Parquet schemas as Spark's StructType.merge does: fields by name
// (case-insensitive), structs recursively, other types must be equal.
func mergeFields(a, b []Field) ([]Field, error) {
	out := append([]Field(nil), a...)
	for _, f := range b {
		i := -1
		for j := range out {
			if strings.EqualFold(out[j].Name, f.Name) {
				i = j
				break
			}
		}
		if i < 0 {
			out = append(out, f)
			continue
		}
		if out[i].Type.Equal(f.Type) {
			continue
		}
		if out[i].Type.Kind == KindStruct && f.Type.Kind == KindStruct {
			fs, err := mergeFields(out[i].Type.Fields, f.Type.Fields)
			if err != nil {
				return nil, err
			}
			out[i].Type = StructOf(fs...)
			continue
		}
		return nil, &SQLError{Class: "CANNOT_MERGE_SCHEMAS", SQLState: "42KD9", Message: fmt.Sprintf(
			"Failed merging schemas: Failed to merge fields '%s' and '%s'. Failed to merge incompatible data types %s and %s.",
			out[i].Name, f.Name, out[i].Type.Simple(), f.Type.Simple())}
	}
	return out, nil
}

// fileRelation is a DuckDB query reading one file in the source schema: columns the file
// lacks are NULL, columns only the file has are dropped, partition columns are the file's
// folder values.
func fileRelation(f srcFile, fileCols, src []Field) (string, error) {
	exprs := make([]string, 0, len(src))
	for _, c := range src {
		name := duckIdent(c.Name)
		if pv, ok := partitionValue(f, c.Name); ok {
			if pv == hiveNull {
				exprs = append(exprs, fmt.Sprintf("CAST(NULL AS %s) AS %s", c.Type.Duck(), name))
			} else {
				exprs = append(exprs, fmt.Sprintf("CAST(%s AS %s) AS %s", duckString(pv), c.Type.Duck(), name))
			}
			continue
		}
		fi := -1
		for j := range fileCols {
			if strings.EqualFold(fileCols[j].Name, c.Name) {
				fi = j
				break
			}
		}
		switch {
		case fi < 0:
			exprs = append(exprs, fmt.Sprintf("CAST(NULL AS %s) AS %s", c.Type.Duck(), name))
		case fileCols[fi].Type.Equal(c.Type):
			exprs = append(exprs, duckIdent(fileCols[fi].Name)+" AS "+name)
		case copyCompatible(fileCols[fi].Type, c.Type) || (fileCols[fi].Type.Kind == KindStruct && c.Type.Kind == KindStruct):
			exprs = append(exprs, fmt.Sprintf("CAST(%s AS %s) AS %s", duckIdent(fileCols[fi].Name), c.Type.Duck(), name))
		default:
			return "", &SQLError{Class: "FAILED_READ_FILE.PARQUET_COLUMN_DATA_TYPE_MISMATCH", SQLState: "KD001", Message: fmt.Sprintf(
				"Error while reading file %s. Data type mismatches when reading Parquet column %s. Expected Spark type %s, actual Parquet type %s.",
				f.URL, c.Name, c.Type.Simple(), fileCols[fi].Type.Simple())}
		}
	}
	if len(exprs) == 0 {
		exprs = append(exprs, "*")
	}
	return fmt.Sprintf("SELECT %s FROM read_parquet(%s, hive_partitioning = false)", strings.Join(exprs, ", "), duckString(f.local)), nil
}

func partitionValue(f srcFile, name string) (string, bool) {
	for _, p := range f.parts {
		if strings.EqualFold(p.name, name) {
			return p.value, true
		}
	}
	return "", false
}
