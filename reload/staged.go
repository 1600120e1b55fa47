package reload

import (
	"crypto/sha256"
	"encoding/hex"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/zbrecover/zbrecover/internal/fallback"
	"github.com/zbrecover/zbrecover/journal"
)

// A staged copy is named by what its original is, never by how the original's path is
// spelled relative to a folder an operator chose:
//
//	<table id>/<folders under the fallback folder>/<name>~<identity>.parquet
//
// The table id keeps two tables' copies apart, however their files are named; the folders
// are those under _zerobus/table_rejected_parquets/ whatever --prefix narrowed the listing
// to, so that two runs listing the table through two prefixes name one file's copy alike;
// the identity is a digest of the table id, the original's key and its version (ETag,
// generation, else size and modification time), so that a file rewritten under the same key
// is another file with another copy. COPY INTO tracks loaded files by path: one file, one
// staged path, wherever and however often it is staged by any run of any journal.

// FileVersion is what tells two versions of one key apart, as the listing gives it: the
// ETag, else the GCS generation, else the size and modification time (local files).
func FileVersion(f journal.File) string {
	switch {
	case f.ETag != "":
		return "etag:" + strings.Trim(strings.TrimPrefix(f.ETag, "W/"), `"`)
	case f.Generation != 0:
		return "generation:" + strconv.FormatInt(f.Generation, 10)
	}
	return "size:" + strconv.FormatInt(f.Size, 10) + ":mtime:" + strconv.FormatInt(f.ModTime.UnixNano(), 10)
}

// fileIdentity is the digest naming one version of one fallback file of one table; gen > 0
// is its redo generation (the file's rows were undone gen times: each load again reads a
// path of its own), 0 the file's first load.
func fileIdentity(tableID string, f journal.File, gen int) string {
	id := tableID + "\x00" + f.Key + "\x00" + FileVersion(f)
	if gen > 0 {
		id += "\x00redo:" + strconv.Itoa(gen)
	}
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:8])
}

// StagedPath is where a fallback file of a table (its key relative to the table's root) is
// staged, relative to the staging location.
func StagedPath(tableID string, f journal.File) string { return stagedPathGen(tableID, f, 0) }

func stagedPathGen(tableID string, f journal.File, gen int) string {
	rel := strings.TrimPrefix(f.Key, fallback.Prefix)
	dir, name := path.Split(rel)
	stem := strings.TrimSuffix(name, ".parquet")
	return stagedElement(tableID) + "/" + stagedFolder(dir) + stagedElement(stem) + "~" + fileIdentity(tableID, f, gen) + ".parquet"
}

// batchDigest is the digest of a batch's files (their keys and versions, in key order): what
// a commit tag carries so that a commit can be matched to the files it loaded.
func batchDigest(files []journal.File) string {
	lines := make([]string, len(files))
	for i, f := range files {
		lines[i] = f.Key + "\x00" + FileVersion(f)
	}
	sort.Strings(lines)
	sum := sha256.Sum256([]byte(strings.Join(lines, "\n")))
	return hex.EncodeToString(sum[:6])
}

// batchNames are the folder and bare names a statement reading a batch's files from source
// names. From the fallback folder (staged empty) the folder is relative to the fallback
// prefix; from a staging location, staged gives each file's staged path, which for the files
// of one batch lie in one folder.
func batchNames(prefix string, files []journal.File, staged map[string]string) (string, []string) {
	names := make([]string, len(files))
	folder := ""
	for i, f := range files {
		p := strings.TrimPrefix(f.Key, prefix)
		if staged != nil {
			p = staged[f.Key]
		}
		dir, name := path.Split(p)
		if i == 0 {
			folder = dir
		}
		names[i] = name
	}
	return folder, names
}

func stagedFolder(dir string) string {
	if dir == "" {
		return ""
	}
	els := strings.Split(strings.TrimSuffix(dir, "/"), "/")
	for i, el := range els {
		els[i] = stagedElement(el)
	}
	return strings.Join(els, "/") + "/"
}

// stagedElement is a path element safe in a statement: glob characters become "-" and a
// short hash of the original element is appended, so that no statement names it as a pattern
// and no two elements meet; an element a listing would hide (a leading "." or "_") gets a
// visible first character the same way.
func stagedElement(el string) string {
	hidden := fallback.Hidden(el)
	if !fallback.HasGlob(el) && !hidden {
		return el
	}
	sum := sha256.Sum256([]byte(el))
	var b strings.Builder
	for i, c := range el {
		if strings.ContainsRune(fallback.GlobChars, c) || i == 0 && hidden {
			c = '-' // not "_": a leading "_" would hide the name from the folder's listing
		}
		b.WriteRune(c)
	}
	return b.String() + "~" + hex.EncodeToString(sum[:4])
}
