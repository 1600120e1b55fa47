package warehouse

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// read_files and parquet.`…` take their path as a Hadoop glob, as read_files documents (DOC:
// "Can contain globs") and Spark's DataSource resolves a read path (CODE:
// DataSource.checkAndGlobPathIfNecessary, Hadoop GlobPattern): "*" and "?" within one path
// component, "[abc]", "[a-c]", "[^a]" and "[!a]", "{a,b}" within one component, and "\"
// escaping the next character. COPY INTO takes its FROM folder and FILES entries literally by
// default: "[b]", "*", "{a,b}" and "\" are characters of a folder or file name like any
// other; with Unknowns.GlobPaths they are Hadoop globs too. Non-ASCII characters are read as
// they are. PATTERN is a glob either way (DOC).

// globMeta are the characters that make a path component a Hadoop glob.
const globMeta = `*?[{\`

// hasGlob reports whether a path has a glob character in its path part (after any scheme
// and authority).
func hasGlob(raw string) bool {
	p := raw
	if i := strings.Index(p, "://"); i >= 0 {
		p = p[i+3:]
		if j := strings.IndexByte(p, '/'); j >= 0 {
			p = p[j:]
		} else {
			p = ""
		}
	}
	return strings.ContainsAny(p, globMeta)
}

// unescapeGlob removes the escaping backslashes of a glob without other glob characters.
func unescapeGlob(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// globRoot is one path a glob matched, relative to the glob's base folder.
type globRoot struct {
	rel  string   // "/"-separated, never empty
	file *srcFile // the file itself when the glob matched a file, nil for a folder
}

// globPattern is a glob split at its first component with a glob character: the literal
// base folder and one regular expression per remaining component.
type globPattern struct {
	base  string
	comps []*regexp.Regexp
}

// parseGlob splits raw into its literal base and the regular expressions of its glob
// components; a trailing "/" is dropped.
func parseGlob(raw string) (globPattern, error) {
	trimmed := strings.TrimRight(raw, "/")
	prefix, rest := "", trimmed
	if i := strings.Index(trimmed, "://"); i >= 0 {
		j := strings.IndexByte(trimmed[i+3:], '/')
		if j < 0 {
			return globPattern{base: trimmed}, nil
		}
		prefix, rest = trimmed[:i+3+j], trimmed[i+3+j:]
	}
	parts := strings.Split(rest, "/")
	k := 0
	for k < len(parts) && !strings.ContainsAny(parts[k], globMeta) {
		k++
	}
	gp := globPattern{base: prefix + strings.Join(parts[:k], "/")}
	if k == 0 {
		gp.base = prefix + "."
	} else if gp.base == prefix && prefix == "" {
		gp.base = "/"
	}
	for _, c := range parts[k:] {
		if c == "" {
			continue
		}
		re, err := globToRegexp(c)
		if err != nil {
			return globPattern{}, &SQLError{Class: "INVALID_PARAMETER_VALUE", SQLState: "22023", Message: err.Error()}
		}
		gp.comps = append(gp.comps, re)
	}
	return gp, nil
}

// matchRoots returns the paths of files (listed relative to the base) that the glob's
// components match: a file whose path the components match entirely, or the folder of a
// file whose leading components they match. Roots are sorted and unique.
func (gp globPattern) matchRoots(files []srcFile) []globRoot {
	seen := map[string]bool{}
	var out []globRoot
	for i := range files {
		comps := strings.Split(files[i].Rel, "/")
		if len(comps) < len(gp.comps) {
			continue
		}
		ok := true
		for j, re := range gp.comps {
			if !re.MatchString(comps[j]) {
				ok = false
				break
			}
		}
		if !ok {
			continue
		}
		rel := strings.Join(comps[:len(gp.comps)], "/")
		if seen[rel] {
			continue
		}
		seen[rel] = true
		r := globRoot{rel: rel}
		if len(comps) == len(gp.comps) {
			r.file = &files[i]
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].rel < out[j].rel })
	return out
}

// globFiles resolves a read path that is a glob: every file it matches
// and, for every folder it matches, that folder's files read as Spark reads a folder (see
// selectFiles). Each root is checked against managed storage. A glob that matches nothing
// is PATH_NOT_FOUND, as in Spark.
func (e *DuckDB) globFiles(ctx context.Context, raw string, recursive bool) (*sourceDir, []srcFile, []Field, error) {
	gp, err := parseGlob(raw)
	if err != nil {
		return nil, nil, nil, err
	}
	url, err := e.canonical(gp.base)
	if err != nil {
		return nil, nil, nil, err
	}
	sd, err := e.openSource(ctx, url)
	if err != nil {
		return nil, nil, nil, err
	}
	all, _, err := sd.list(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	roots := gp.matchRoots(all)
	if len(roots) == 0 {
		return nil, nil, nil, errPathNotFound(raw)
	}
	var (
		out      []srcFile
		partCols []Field
		partSeen bool
	)
	for _, r := range roots {
		if err := e.checkOverlap(url+"/"+r.rel, "CheckPathAccess"); err != nil {
			return nil, nil, nil, err
		}
		if r.file != nil {
			out = append(out, *r.file)
			continue
		}
		var sub []srcFile
		for _, f := range all {
			if strings.HasPrefix(f.Rel, r.rel+"/") {
				f.Rel = strings.TrimPrefix(f.Rel, r.rel+"/")
				sub = append(sub, f)
			}
		}
		files, parts, err := selectFiles(sub, recursive)
		if err != nil {
			return nil, nil, nil, err
		}
		if len(parts) > 0 {
			if partSeen && fieldNames(parts) != fieldNames(partCols) {
				return nil, nil, nil, &SQLError{Class: "CONFLICTING_PARTITION_COLUMN_NAMES", SQLState: "KD009", Message: "Conflicting partition column names detected: Partition column name list #0: " +
					fieldNames(partCols) + " Partition column name list #1: " + fieldNames(parts) + "."}
			}
			partCols, partSeen = parts, true
		}
		for _, f := range files {
			f.Rel = r.rel + "/" + f.Rel
			out = append(out, f)
		}
	}
	return sd, out, partCols, nil
}

// globDirs resolves a FROM folder that is a glob (Unknowns.GlobPaths) for COPY INTO … FILES:
// the base source and the folders the glob matches, relative to it.
func (e *DuckDB) globDirs(ctx context.Context, raw string) (*sourceDir, []string, error) {
	gp, err := parseGlob(raw)
	if err != nil {
		return nil, nil, err
	}
	url, err := e.canonical(gp.base)
	if err != nil {
		return nil, nil, err
	}
	sd, err := e.openSource(ctx, url)
	if err != nil {
		return nil, nil, err
	}
	all, _, err := sd.list(ctx)
	if err != nil {
		return nil, nil, err
	}
	var dirs []string
	for _, r := range gp.matchRoots(all) {
		if r.file == nil {
			if err := e.checkOverlap(url+"/"+r.rel, "CheckPathAccess"); err != nil {
				return nil, nil, err
			}
			dirs = append(dirs, r.rel)
		}
	}
	if len(dirs) == 0 {
		return nil, nil, errPathNotFound(raw)
	}
	return sd, dirs, nil
}

// filesEntries resolves COPY INTO's FILES entries against the FROM folder (a glob with
// Unknowns.GlobPaths) and returns the files that exist, in FILES order, each once. Missing
// entries are skipped (ignoreMissingFiles). Entries are literal names, or globs matched
// against the folder's files with Unknowns.GlobPaths.
func (e *DuckDB) filesEntries(ctx context.Context, folder string, names []string, unk Unknowns) (*sourceDir, []srcFile, error) {
	var (
		sd   *sourceDir
		dirs = []string{""}
		err  error
	)
	if unk.GlobPaths && hasGlob(folder) {
		if sd, dirs, err = e.globDirs(ctx, folder); err != nil {
			return nil, nil, err
		}
	} else {
		url, err := e.canonical(folder)
		if err != nil {
			return nil, nil, err
		}
		if err := e.checkOverlap(url, "CheckPathAccess"); err != nil {
			return nil, nil, err
		}
		if sd, err = e.openSource(ctx, url); err != nil {
			return nil, nil, err
		}
	}
	var listing []srcFile // listed once, when an entry is a glob
	seen := map[string]bool{}
	var files []srcFile
	add := func(f srcFile) {
		if !seen[f.URL] {
			seen[f.URL] = true
			files = append(files, f)
		}
	}
	for _, name := range names {
		if unk.RefuseFilesPaths && (strings.Contains(name, "/") || strings.Contains(name, "://") || strings.HasPrefix(name, "file:")) {
			return nil, nil, &SQLError{Class: "INVALID_PARAMETER_VALUE", SQLState: "22023", Message: "The file '" + name +
				"' in FILES is not a file name: FILES takes names relative to the source path '" + sd.url + "'."}
		}
		for _, dir := range dirs {
			dirURL := sd.url
			if dir != "" {
				dirURL += "/" + dir
			}
			rel, err := relativeFile(dirURL, name)
			if err != nil {
				return nil, nil, err
			}
			if dir != "" {
				rel = dir + "/" + rel
			}
			if unk.GlobPaths && strings.ContainsAny(rel, globMeta) {
				if listing == nil {
					if listing, _, err = sd.list(ctx); err != nil {
						return nil, nil, err
					}
				}
				gp, err := parseGlob(rel)
				if err != nil {
					return nil, nil, err
				}
				prefix := strings.TrimPrefix(strings.TrimPrefix(gp.base, "."), "/")
				var under []srcFile
				for _, f := range listing {
					if prefix == "" || strings.HasPrefix(f.Rel, prefix+"/") {
						g := f
						if prefix != "" {
							g.Rel = strings.TrimPrefix(f.Rel, prefix+"/")
						}
						under = append(under, g)
					}
				}
				for _, r := range gp.matchRoots(under) {
					if r.file != nil {
						f := *r.file
						if prefix != "" {
							f.Rel = prefix + "/" + f.Rel
						}
						add(f)
					}
				}
				continue
			}
			if unk.GlobPaths {
				rel = unescapeGlob(rel)
			}
			f, ok, err := sd.stat(ctx, rel)
			if err != nil {
				return nil, nil, err
			}
			if ok {
				add(f)
			}
		}
	}
	return sd, files, nil
}

// duckGlobChars are the characters DuckDB's file readers expand as a glob.
const duckGlobChars = `*?[{\`

// literalLocal returns a path DuckDB reads literally for the local file p: p itself, or, when
// p has characters DuckDB would expand as a glob, a symbolic link to p under the working
// directory (<Dir>/literal/<hash><ext>), so that "[b]/x.parquet" never reads "b/x.parquet".
func (e *DuckDB) literalLocal(p string) (string, error) {
	if !strings.ContainsAny(p, duckGlobChars) {
		return p, nil
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", errInternal(err)
	}
	sum := sha256.Sum256([]byte(abs))
	ext := path.Ext(filepath.Base(abs))
	if strings.ContainsAny(ext, duckGlobChars) {
		ext = ""
	}
	link := filepath.Join(e.opts.Dir, "literal", hex.EncodeToString(sum[:12])+ext)
	if target, err := os.Readlink(link); err == nil && target == abs {
		return link, nil
	}
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		return "", errInternal(err)
	}
	_ = os.Remove(link)
	if err := os.Symlink(abs, link); err != nil {
		return "", errInternal(err)
	}
	return link, nil
}
