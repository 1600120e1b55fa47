package storage

import (
	"path/filepath"
	"strings"
)

// A place's identity. Two Locations are the same place when the store they reach would show
// the same objects under them, whatever the spelling; what each service folds is what it
// documents:
//
//   - s3 (s3a:// too) and gs: the bucket name is case-folded (S3 and GCS bucket names are
//     lower case by rule, and a bucket is a DNS name); object keys are case-sensitive.
//   - az (abfss://, abfs://, wasbs://, wasb://): the dfs and blob endpoints of one account are
//     one store; the host, the account and the container are case-folded (account and
//     container names are lower case by rule); blob names are case-sensitive.
//   - volume (/Volumes/…, dbfs:/Volumes/…): the catalog, schema and volume names are
//     case-folded (Unity Catalog identifiers are case-insensitive); the path inside the
//     volume is case-sensitive, as the files' names are.
//   - file: the path as the operating system names it, cleaned, case-sensitive; symbolic
//     links are not resolved here (a Location is a value: resolving reads the file system).
//
// The query (an Azure SAS) is never part of a place, and neither are empty or "." path
// elements or a trailing "/".

// Key returns the location's canonical form: equal for two spellings of one place, different
// for two places. It is for comparing and indexing, never for display or for opening (it
// drops the query and folds letter case); String is the display form, URL the SQL form.
func (l Location) Key() string {
	auth, els := l.identity()
	return auth + "/" + strings.Join(els, "/")
}

// Equal reports whether l and o are the same place (their Keys are equal).
func (l Location) Equal(o Location) bool { return l.Key() == o.Key() }

// Contains reports whether o is l or lies inside it: same store, and l's path elements are the
// first elements of o's. It compares whole elements, never string prefixes: s3://b/t does not
// contain s3://b/t2.
func (l Location) Contains(o Location) bool {
	la, le := l.identity()
	oa, oe := o.identity()
	if la != oa || len(oe) < len(le) {
		return false
	}
	for i := range le {
		if le[i] != oe[i] {
			return false
		}
	}
	return true
}

// Parent returns the folder that holds l, and false when l is the root of its bucket,
// container, volume or file system.
func (l Location) Parent() (Location, bool) {
	out := l
	if l.Scheme == "file" {
		p := filepath.Clean(l.Path)
		parent := filepath.Dir(p)
		if parent == p {
			return l, false
		}
		out.Path = parent
		return out, true
	}
	p := cleanElements(l.Path)
	if p == "" {
		return l, false
	}
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		out.Path = p[:i]
	} else {
		out.Path = ""
	}
	return out, true
}

// Elements returns l's path elements below its store's root (bucket, container, volume, or
// the file system's root), cleaned: no empty or "." element.
func (l Location) Elements() []string {
	_, els := l.identity()
	return els
}

// identity returns the store l is in, canonically spelt (scheme and the case-folded names that
// identify the store), and l's path elements, cleaned.
func (l Location) identity() (string, []string) {
	var auth, p string
	switch l.Scheme {
	case "file":
		auth, p = "file://", filepath.ToSlash(filepath.Clean(l.Path))
	case SchemeVolume:
		auth = SchemeVolume + "://" + strings.ToLower(l.Catalog) + "/" + strings.ToLower(l.Schema) + "/" + strings.ToLower(l.Volume)
		p = l.Path
	case "az":
		host := l.BlobHost
		if host == "" {
			host = l.Account + ".blob.core.windows.net"
		}
		auth, p = "az://"+strings.ToLower(l.Bucket)+"@"+strings.ToLower(host), l.Path
	default:
		auth, p = strings.ToLower(l.Scheme)+"://"+strings.ToLower(l.Bucket), l.Path
	}
	var els []string
	for _, el := range strings.Split(p, "/") {
		if el != "" && el != "." {
			els = append(els, el)
		}
	}
	return auth, els
}
