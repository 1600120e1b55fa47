package e2etest

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/zbrecover/zbrecover/internal/fallback"
)

// ServedStatement is one line of the statement log of `zbrecover demo serve --log`.
type ServedStatement struct {
	Statement  string `json:"statement"`
	Outcome    string `json:"outcome"`
	ErrorClass string `json:"error_class"`
	Rows       int64  `json:"rows"`
}

// ReadStatementLog reads the statement log from line from on.
func ReadStatementLog(t *testing.T, file string, from int) []ServedStatement {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out []ServedStatement
	for i, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if i < from || line == "" {
			continue
		}
		var s ServedStatement
		if err := json.Unmarshal([]byte(line), &s); err != nil {
			t.Fatalf("statement log line %d: %v\n%s", i+1, err, line)
		}
		out = append(out, s)
	}
	return out
}

func StatementLogLen(t *testing.T, file string) int {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(data), "\n")
}

// Loads returns the load statements (COPY INTO, not VALIDATE) in sts, and the rows the
// finished ones inserted.
func Loads(sts []ServedStatement) (copies []ServedStatement, inserted int64) {
	for _, s := range sts {
		q := strings.ToUpper(strings.TrimSpace(s.Statement))
		if strings.HasPrefix(q, "COPY INTO") && !strings.Contains(q, "VALIDATE") {
			copies = append(copies, s)
			if s.Outcome == "FINISHED" {
				inserted += s.Rows
			}
		}
	}
	return copies, inserted
}

// ListVolume lists the files under a volume path through the workspace's Files API, by their
// key under it, with their sizes. A missing directory lists nothing.
func ListVolume(t *testing.T, host, token, vpath string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	var walk func(dir string)
	walk = func(dir string) {
		req, _ := http.NewRequest(http.MethodGet, host+"/api/2.0/fs/directories"+dir, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode == http.StatusNotFound {
			return
		}
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET directory %s: %s", dir, resp.Status)
		}
		var body struct {
			Contents []struct {
				Path  string `json:"path"`
				IsDir bool   `json:"is_directory"`
				Size  int64  `json:"file_size"`
			} `json:"contents"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			t.Fatal(err)
		}
		for _, e := range body.Contents {
			p := strings.TrimSuffix(e.Path, "/")
			if e.IsDir {
				walk(p)
			} else {
				out[strings.TrimPrefix(p, vpath+"/")] = e.Size
			}
		}
	}
	walk(vpath)
	return out
}

// PutVolumeFile writes a file to a volume through the Files API, replacing any file there.
func PutVolumeFile(t *testing.T, host, token, vpath string, data []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPut, host+"/api/2.0/fs/files"+vpath+"?overwrite=true", bytes.NewReader(data))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("PUT %s: %s", vpath, resp.Status)
	}
}

// FallbackLeft counts the files left in the root's fallback folder.
func FallbackLeft(t *testing.T, root string) int {
	t.Helper()
	n := 0
	_ = filepath.WalkDir(filepath.Join(root, filepath.FromSlash(fallback.Prefix)), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".parquet") {
			n++
		}
		return nil
	})
	return n
}

// StagedOriginal returns the key, relative to the fallback folder, of the file a staged copy
// is a copy of, from the copy's path relative to its staging location
// (<table id>/<folders>/<name>~<identity>.parquet); false for any other path.
func StagedOriginal(p string) (string, bool) {
	_, rest, ok := strings.Cut(p, "/")
	if !ok {
		return "", false
	}
	dir, name := path.Split(rest)
	stem, ok := strings.CutSuffix(name, ".parquet")
	i := strings.LastIndex(stem, "~")
	if !ok || i < 0 {
		return "", false
	}
	return dir + stem[:i] + ".parquet", true
}

// StagedPaths reads a reload's plan (-o json --dry-run) staged to stageTo and returns, for
// each file of its batches (its key relative to the fallback folder), the path of its copy
// as the statements read it.
func StagedPaths(t *testing.T, planJSON, stageTo string) map[string]string {
	t.Helper()
	var plan struct {
		Batches []struct {
			SQL string `json:"sql"`
		} `json:"batches"`
	}
	DecodeInto(t, planJSON, &plan)
	from := regexp.MustCompile(`FROM '([^']*)'`)
	names := regexp.MustCompile(`FILES = \((.*)\) COPY_OPTIONS`)
	lit := regexp.MustCompile(`'([^']*)'`)
	out := map[string]string{}
	for _, b := range plan.Batches {
		f, n := from.FindStringSubmatch(b.SQL), names.FindStringSubmatch(b.SQL)
		if f == nil || n == nil || !strings.HasPrefix(f[1], stageTo+"/") {
			t.Fatalf("no source under %s or no FILES in %s", stageTo, b.SQL)
		}
		for _, m := range lit.FindAllStringSubmatch(n[1], -1) {
			rel := strings.TrimPrefix(f[1], stageTo+"/") + m[1]
			orig, ok := StagedOriginal(rel)
			if !ok {
				t.Fatalf("%s is not a staged copy's path", rel)
			}
			out[orig] = stageTo + "/" + rel
		}
	}
	return out
}
