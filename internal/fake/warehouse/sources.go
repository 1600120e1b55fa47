package warehouse

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/zbrecover/zbrecover/storage"
)

// srcFile is one file of a path-based source.
type srcFile struct {
	URL     string // identity: file:///abs/path or scheme://bucket/prefix/key
	Rel     string // path relative to the source directory, "/"-separated
	Size    int64
	ModTime time.Time
	ETag    string
	local   string      // local copy DuckDB reads ("" until staged, for remote files)
	parts   []partValue // partition folder values, when partitions were inferred
}

// sourceDir is a directory-like source location, local or remote.
type sourceDir struct {
	url   string          // canonical URL, no trailing "/"
	local string          // local directory, for file URLs
	be    storage.Backend // remote backend rooted at url
}

// canonicalURL normalises a location: local paths and file: URLs become file:///abs/path,
// object-store URLs keep their scheme, bucket and path; trailing slashes are dropped.
func canonicalURL(raw string) (string, error) {
	// A path keeps its spaces: a file name may begin or end with one.
	if raw == "" {
		return "", &SQLError{Class: "INVALID_EMPTY_LOCATION", SQLState: "42K05", Message: "The location name cannot be empty string, but `` was given."}
	}
	switch {
	case strings.HasPrefix(raw, "file:"):
		p := strings.TrimPrefix(raw, "file:")
		p = strings.TrimPrefix(p, "//localhost")
		if strings.HasPrefix(p, "//") {
			p = p[2:]
			if !strings.HasPrefix(p, "/") {
				return "", &SQLError{Class: "INVALID_PARAMETER_VALUE", SQLState: "22023", Message: fmt.Sprintf("Invalid file URL '%s'.", raw)}
			}
		}
		return "file://" + filepath.ToSlash(filepath.Clean(filepath.FromSlash(p))), nil
	case strings.Contains(raw, "://"):
		loc, err := storage.Parse(raw)
		if err != nil {
			return "", &SQLError{Class: "INVALID_PARAMETER_VALUE", SQLState: "22023", Message: storage.Redact(err.Error())}
		}
		if loc.Scheme == "file" {
			return "file://" + filepath.ToSlash(loc.Path), nil
		}
		s := loc.String()
		if i := strings.IndexByte(s, '?'); i >= 0 {
			s = s[:i]
		}
		return strings.TrimRight(s, "/"), nil
	case strings.HasPrefix(raw, "dbfs:"):
		return "", errUnsupported("dbfs: paths")
	}
	abs, err := filepath.Abs(raw)
	if err != nil {
		return "", errInternal(err)
	}
	return "file://" + filepath.ToSlash(abs), nil
}

// localPath returns the local path of a file:// URL.
func localPath(u string) (string, bool) {
	if !strings.HasPrefix(u, "file://") {
		return "", false
	}
	return filepath.FromSlash(strings.TrimPrefix(u, "file://")), true
}

// isUnder reports whether url is loc or inside it.
func isUnder(url, loc string) bool {
	return url == loc || strings.HasPrefix(url, strings.TrimRight(loc, "/")+"/")
}

// checkOverlap refuses path access inside a managed table's storage, as Unity Catalog does
// (unless Unknowns.PathAccess allows it); call is the internal call the error names.
func (e *DuckDB) checkOverlap(url, call string) error {
	pa := e.Unknowns().PathAccess
	if pa == OverlapAllowed {
		return nil
	}
	for _, t := range e.allTables() {
		if t.managed && (isUnder(url, t.location) || isUnder(t.location, url)) {
			return pa.overlapError(url, call)
		}
	}
	return nil
}

func errPathNotFound(url string) *SQLError {
	return &SQLError{Class: "PATH_NOT_FOUND", SQLState: "42K03", Message: fmt.Sprintf("Path does not exist: %s.", url)}
}

// openSource opens a source directory (or the directory of a single file).
func (e *DuckDB) openSource(ctx context.Context, url string) (*sourceDir, error) {
	if p, ok := localPath(url); ok {
		return &sourceDir{url: url, local: p}, nil
	}
	if e.opts.Storage == nil {
		return nil, &SQLError{Class: "UNSUPPORTED_FEATURE", SQLState: "0A000",
			Message: fmt.Sprintf("The feature is not supported: reading %s (the fake warehouse has no storage configured for remote paths).", url)}
	}
	be, err := e.opts.Storage(ctx, url)
	if err != nil {
		return nil, &SQLError{Class: "INVALID_PARAMETER_VALUE", SQLState: "22023", Message: storage.Redact(err.Error())}
	}
	return &sourceDir{url: url, be: be}, nil
}

// hidden reports whether a relative path has a component Spark treats as hidden.
func hidden(rel string) bool {
	for _, part := range strings.Split(rel, "/") {
		if sparkHidden(part) {
			return true
		}
	}
	return false
}

// sparkHidden is Spark's rule for a file or folder its listing skips (PartitioningAwareFileIndex:
// a name starting with "." or "_", unless it holds "=", a partition folder such as "_p=1"). The
// local warehouse keeps its own copy of the rule on purpose, as the oracle zbrecover's own
// rule (internal/fallback.Hidden) is tested against, never calling it.
func sparkHidden(name string) bool {
	return strings.HasPrefix(name, ".") || (strings.HasPrefix(name, "_") && !strings.Contains(name, "="))
}

// list returns the visible files under the directory, recursively, sorted by path. The
// second result is false when the directory does not exist (no object under the prefix).
func (s *sourceDir) list(ctx context.Context) ([]srcFile, bool, error) { return s.walk(ctx, false) }

// listAll is list including hidden files and folders.
func (s *sourceDir) listAll(ctx context.Context) ([]srcFile, bool, error) { return s.walk(ctx, true) }

func (s *sourceDir) walk(ctx context.Context, withHidden bool) ([]srcFile, bool, error) {
	var out []srcFile
	if s.be == nil {
		fi, err := os.Stat(s.local)
		if err != nil {
			return nil, false, nil
		}
		if !fi.IsDir() {
			return nil, false, nil
		}
		err = filepath.WalkDir(s.local, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if p == s.local {
				return nil
			}
			rel := filepath.ToSlash(strings.TrimPrefix(p, s.local+string(filepath.Separator)))
			name := d.Name()
			if !withHidden && sparkHidden(name) {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			if d.IsDir() || !d.Type().IsRegular() {
				return nil
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			out = append(out, srcFile{URL: s.url + "/" + rel, Rel: rel, Size: info.Size(), ModTime: info.ModTime().UTC(), local: p})
			return nil
		})
		if err != nil {
			return nil, true, errInternal(err)
		}
		return out, true, nil
	}
	found := false
	err := s.be.List(ctx, "", func(o storage.ObjectInfo) error {
		found = true
		if (!withHidden && hidden(o.Key)) || strings.HasSuffix(o.Key, "/") {
			return nil
		}
		out = append(out, srcFile{URL: s.url + "/" + o.Key, Rel: o.Key, Size: o.Size, ModTime: o.ModTime, ETag: o.ETag})
		return nil
	})
	if err != nil {
		return nil, false, &SQLError{Class: "FAILED_READ_FILE", SQLState: "KD001", Message: storage.Redact(err.Error())}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Rel < out[j].Rel })
	return out, found, nil
}

// stat returns the file at rel, or ok=false when it does not exist.
func (s *sourceDir) stat(ctx context.Context, rel string) (srcFile, bool, error) {
	rel = strings.TrimPrefix(path.Clean("/"+rel), "/")
	if s.be == nil {
		p := filepath.Join(s.local, filepath.FromSlash(rel))
		fi, err := os.Stat(p)
		if err != nil || fi.IsDir() {
			return srcFile{}, false, nil
		}
		return srcFile{URL: s.url + "/" + rel, Rel: rel, Size: fi.Size(), ModTime: fi.ModTime().UTC(), local: p}, true, nil
	}
	o, err := s.be.Stat(ctx, rel)
	if errors.Is(err, storage.ErrNotExist) {
		return srcFile{}, false, nil
	}
	if err != nil {
		return srcFile{}, false, &SQLError{Class: "FAILED_READ_FILE", SQLState: "KD001", Message: storage.Redact(err.Error())}
	}
	return srcFile{URL: s.url + "/" + rel, Rel: rel, Size: o.Size, ModTime: o.ModTime, ETag: o.ETag}, true, nil
}

// stagedFile is a local copy of a remote object.
type stagedFile struct {
	local   string
	size    int64
	modTime time.Time
	etag    string
}

// stage makes a local copy of a remote file for DuckDB (a no-op for local files). Copies are
// reused while the object's size, modification time and ETag are unchanged.
func (e *DuckDB) stage(ctx context.Context, s *sourceDir, f *srcFile) error {
	if f.local != "" {
		lit, err := e.literalLocal(f.local)
		f.local = lit
		return err
	}
	if c, ok := e.staged[f.URL]; ok && c.size == f.Size && c.modTime.Equal(f.ModTime) && c.etag == f.ETag {
		f.local = c.local
		return nil
	}
	sum := sha256.Sum256([]byte(s.url))
	local := filepath.Join(e.opts.Dir, "staging", hex.EncodeToString(sum[:8]), filepath.FromSlash(f.Rel))
	if err := os.MkdirAll(filepath.Dir(local), 0o755); err != nil {
		return errInternal(err)
	}
	rc, err := s.be.ReadRange(ctx, f.Rel, 0, -1)
	if err != nil {
		return &SQLError{Class: "FAILED_READ_FILE", SQLState: "KD001", Message: storage.Redact(err.Error())}
	}
	defer rc.Close()
	tmp := local + ".part"
	out, err := os.Create(tmp)
	if err != nil {
		return errInternal(err)
	}
	if _, err := io.Copy(out, rc); err != nil {
		out.Close()
		return &SQLError{Class: "FAILED_READ_FILE", SQLState: "KD001", Message: storage.Redact(err.Error())}
	}
	if err := out.Close(); err != nil {
		return errInternal(err)
	}
	if err := os.Rename(tmp, local); err != nil {
		return errInternal(err)
	}
	if local, err = e.literalLocal(local); err != nil {
		return err
	}
	e.staged[f.URL] = stagedFile{local: local, size: f.Size, modTime: f.ModTime, etag: f.ETag}
	f.local = local
	return nil
}

// globToRegexp compiles a Hadoop-style glob (*, ?, [abc], [^a], {a,b}) matched against a
// relative path; * and ? do not cross "/".
func globToRegexp(glob string) (*regexp.Regexp, error) {
	var b strings.Builder
	b.WriteString("^")
	depth := 0
	for i := 0; i < len(glob); i++ {
		c := glob[i]
		switch c {
		case '*':
			b.WriteString("[^/]*")
		case '?':
			b.WriteString("[^/]")
		case '[':
			j := strings.IndexByte(glob[i:], ']')
			if j < 0 {
				return nil, fmt.Errorf("unclosed [ in pattern %q", glob)
			}
			class := glob[i+1 : i+j]
			if strings.HasPrefix(class, "^") || strings.HasPrefix(class, "!") {
				class = "^" + class[1:]
			}
			b.WriteString("[" + class + "]")
			i += j
		case '{':
			b.WriteString("(?:")
			depth++
		case '}':
			if depth == 0 {
				return nil, fmt.Errorf("unbalanced } in pattern %q", glob)
			}
			b.WriteString(")")
			depth--
		case ',':
			if depth > 0 {
				b.WriteString("|")
			} else {
				b.WriteString(",")
			}
		case '\\':
			if i+1 < len(glob) {
				i++
				b.WriteString(regexp.QuoteMeta(string(glob[i])))
			}
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	if depth != 0 {
		return nil, fmt.Errorf("unbalanced { in pattern %q", glob)
	}
	b.WriteString("$")
	return regexp.Compile(b.String())
}

// pathFiles resolves a path read (COPY INTO, parquet.`…`, read_files): a directory (read as
// Spark reads one, see selectFiles; every visible file with recursive) or a single file,
// taken literally, or with glob a Hadoop glob (see globFiles). It returns the partition
// columns inferred.
func (e *DuckDB) pathFiles(ctx context.Context, raw string, recursive, glob bool) (*sourceDir, []srcFile, []Field, error) {
	if glob && hasGlob(raw) {
		return e.globFiles(ctx, raw, recursive)
	}
	base := raw
	url, err := e.canonical(base)
	if err != nil {
		return nil, nil, nil, err
	}
	if err := e.checkOverlap(url, "CheckPathAccess"); err != nil {
		return nil, nil, nil, err
	}
	// A single local file.
	if p, ok := localPath(url); ok {
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			dir := "file://" + filepath.ToSlash(filepath.Dir(p))
			return &sourceDir{url: dir, local: filepath.Dir(p)},
				[]srcFile{{URL: url, Rel: filepath.Base(p), Size: fi.Size(), ModTime: fi.ModTime().UTC(), local: p}}, nil, nil
		}
	}
	sd, err := e.openSource(ctx, url)
	if err != nil {
		return nil, nil, nil, err
	}
	files, exists, err := sd.list(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	if !exists && sd.be != nil {
		// Maybe a single remote object: open its parent and stat it.
		if i := strings.LastIndexByte(url, '/'); i > strings.Index(url, "://")+2 {
			parent, err := e.openSource(ctx, url[:i])
			if err == nil {
				if f, ok, err := parent.stat(ctx, url[i+1:]); err == nil && ok {
					return parent, []srcFile{f}, nil, nil
				}
			}
		}
	}
	if !exists {
		return nil, nil, nil, errPathNotFound(url)
	}
	files, parts, err := selectFiles(files, recursive)
	if err != nil {
		return nil, nil, nil, err
	}
	return sd, files, parts, nil
}

// pathSource returns a DuckDB table expression reading the Parquet files at raw in the
// source schema (the first file's; see read.go).
// The path is a glob, as read_files documents (DOC) and Spark's DataSource does (CODE).
func (e *DuckDB) pathSource(ctx context.Context, raw string) (string, error) {
	sd, files, parts, err := e.pathFiles(ctx, raw, false, true)
	if err != nil {
		return "", err
	}
	if len(files) == 0 {
		return "", &SQLError{Class: "UNABLE_TO_INFER_SCHEMA", SQLState: "42KD9",
			Message: "Unable to infer schema for Parquet. It must be specified manually."}
	}
	schemas := make([][]Field, len(files))
	for i := range files {
		if err := e.stage(ctx, sd, &files[i]); err != nil {
			return "", err
		}
		if schemas[i], err = e.readFileSchema(ctx, files[i]); err != nil {
			return "", err
		}
	}
	src, err := sourceSchema(schemas, false, parts)
	if err != nil {
		return "", err
	}
	rels := make([]string, len(files))
	for i, f := range files {
		if rels[i], err = fileRelation(f, schemas[i], src); err != nil {
			return "", err
		}
	}
	return "(" + strings.Join(rels, " UNION ALL ") + ")", nil
}
