package delta

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"sort"

	"github.com/zbrecover/zbrecover/storage"
)

// ErrCommitGone is returned (wrapped) when the log no longer holds a version's JSON commit:
// log cleanup removes commits older than the newest checkpoint's retention (30 days by
// default), and with them the add actions of loads that old.
var ErrCommitGone = errors.New("the Delta log no longer holds this commit")

// AddFile is an add action, with what undo reads of it.
type AddFile struct {
	// Path is the data file as the action names it: a URI-encoded path relative to the
	// table root (or an absolute URI).
	Path       string
	Size       int64
	DataChange bool
	// NumRecords is the stats' numRecords, -1 when the action has no stats saying it.
	NumRecords int64
	// BaseRowID and DefaultRowCommitVersion are row tracking's fields (PROTOCOL: Row
	// Tracking), nil when the writer set none: the file's fresh row IDs are
	// [BaseRowID, BaseRowID + NumRecords − 1].
	BaseRowID               *int64
	DefaultRowCommitVersion *int64
}

// CommitInfo is a commit's provenance, as far as undo reads it.
type CommitInfo struct {
	Operation    string            `json:"operation"`
	UserName     string            `json:"userName"`
	UserMetadata string            `json:"userMetadata"`
	Metrics      map[string]string `json:"operationMetrics"`
}

// Commit is one version's JSON commit: its provenance, the data files it added and those it
// removed.
type Commit struct {
	Version int64
	Info    *CommitInfo
	Adds    []AddFile
	Removes []string // the paths of its remove actions
	// RowIDHighWaterMark is the high-water mark its domain metadata records (nil for none).
	RowIDHighWaterMark *int64
}

type addAction struct {
	Path                    string `json:"path"`
	Size                    int64  `json:"size"`
	DataChange              bool   `json:"dataChange"`
	Stats                   string `json:"stats"`
	BaseRowID               *int64 `json:"baseRowId"`
	DefaultRowCommitVersion *int64 `json:"defaultRowCommitVersion"`
}

var (
	addKey    = []byte(`"add"`)
	removeKey = []byte(`"remove"`)
	domainKey = []byte(`"domainMetadata"`)
)

// ReadCommit reads version v's JSON commit from the log under b (the table root): its
// commitInfo, add and remove actions, and the row ID high-water mark. A version the log no
// longer holds is an error wrapping ErrCommitGone.
func ReadCommit(ctx context.Context, b storage.Backend, v int64) (*Commit, error) {
	name := fmt.Sprintf("%020d.json", v)
	oi, err := b.Stat(ctx, LogDir+name)
	if errors.Is(err, storage.ErrNotExist) {
		return nil, fmt.Errorf("version %d (%s%s): %w", v, LogDir, name, ErrCommitGone)
	}
	if err != nil {
		return nil, fmt.Errorf("version %d: %w", v, err)
	}
	c := &Commit{Version: v}
	err = scanActions(ctx, b, logFile{name: name, size: oi.Size}, [][]byte{addKey, removeKey, commitInfoKey, domainKey}, func(line []byte) error {
		var a struct {
			Add        *addAction             `json:"add"`
			Remove     *struct{ Path string } `json:"remove"`
			CommitInfo *CommitInfo            `json:"commitInfo"`
			Domain     *struct {
				Domain        string `json:"domain"`
				Configuration string `json:"configuration"`
			} `json:"domainMetadata"`
		}
		if err := json.Unmarshal(line, &a); err != nil {
			return err
		}
		switch {
		case a.Add != nil:
			f := AddFile{Path: a.Add.Path, Size: a.Add.Size, DataChange: a.Add.DataChange, NumRecords: -1,
				BaseRowID: a.Add.BaseRowID, DefaultRowCommitVersion: a.Add.DefaultRowCommitVersion}
			var st struct {
				NumRecords *int64 `json:"numRecords"`
			}
			if a.Add.Stats != "" && json.Unmarshal([]byte(a.Add.Stats), &st) == nil && st.NumRecords != nil {
				f.NumRecords = *st.NumRecords
			}
			c.Adds = append(c.Adds, f)
		case a.Remove != nil:
			c.Removes = append(c.Removes, a.Remove.Path)
		case a.CommitInfo != nil:
			c.Info = a.CommitInfo
		case a.Domain != nil && a.Domain.Domain == "delta.rowTracking":
			var conf struct {
				HWM *int64 `json:"rowIdHighWaterMark"`
			}
			if json.Unmarshal([]byte(a.Domain.Configuration), &conf) == nil && conf.HWM != nil {
				c.RowIDHighWaterMark = conf.HWM
			}
		}
		return nil
	})
	if errors.Is(err, storage.ErrNotExist) {
		return nil, fmt.Errorf("version %d (%s%s): %w", v, LogDir, name, ErrCommitGone)
	}
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Removal is a later commit that removed one of the files asked about.
type Removal struct {
	Path      string
	Version   int64
	Operation string
}

// RemovedAfter reads every JSON commit after version v, up to the newest the log lists, and
// returns the first commit that removed each of paths (add paths of version v, compared
// decoded), in path order, and the newest version read. It reads only the remove actions and
// commitInfo of each commit. A commit missing from that span (log cleanup) is an error
// wrapping ErrCommitGone: what it removed is unknown.
func RemovedAfter(ctx context.Context, b storage.Backend, v int64, paths []string) ([]Removal, int64, error) {
	ls, err := list(ctx, b)
	if err != nil {
		return nil, 0, err
	}
	newest := v
	for ver := range ls.commits {
		newest = max(newest, ver)
	}
	var versions []int64
	for ver := v + 1; ver <= newest; ver++ {
		versions = append(versions, ver)
	}
	rm, err := removedIn(ctx, b, ls, versions, paths)
	return rm, newest, err
}

// RemovedIn reads the JSON commits of the given versions (those a table's history shows
// could remove files: not blind appends) and returns the first of them that removed each of
// paths, in path order. A version the log no longer holds is an error wrapping
// ErrCommitGone.
func RemovedIn(ctx context.Context, b storage.Backend, versions []int64, paths []string) ([]Removal, error) {
	ls, err := list(ctx, b)
	if err != nil {
		return nil, err
	}
	return removedIn(ctx, b, ls, versions, paths)
}

func removedIn(ctx context.Context, b storage.Backend, ls *listing, versions []int64, paths []string) ([]Removal, error) {
	versions = append([]int64(nil), versions...)
	sort.Slice(versions, func(i, j int) bool { return versions[i] < versions[j] })
	want := map[string]string{}
	for _, p := range paths {
		want[decodedPath(p)] = p
	}
	found := map[string]Removal{}
	for _, ver := range versions {
		if len(found) == len(want) {
			break
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		f, ok := ls.commits[ver]
		if !ok {
			return nil, fmt.Errorf("version %d: %w (the log holds no JSON commit for it)", ver, ErrCommitGone)
		}
		var op string
		var hits []string
		err := scanActions(ctx, b, f, [][]byte{removeKey, commitInfoKey}, func(line []byte) error {
			var a struct {
				Remove     *struct{ Path string } `json:"remove"`
				CommitInfo *CommitInfo            `json:"commitInfo"`
			}
			if err := json.Unmarshal(line, &a); err != nil {
				return err
			}
			if a.CommitInfo != nil {
				op = a.CommitInfo.Operation
			}
			if a.Remove != nil {
				if p, ok := want[decodedPath(a.Remove.Path)]; ok {
					hits = append(hits, p)
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		for _, p := range hits {
			if _, seen := found[p]; !seen {
				found[p] = Removal{Path: p, Version: ver, Operation: op}
			}
		}
	}
	out := make([]Removal, 0, len(found))
	for _, r := range found {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// decodedPath is an action's path with its URI encoding undone (as written when it does
// not decode).
func decodedPath(p string) string {
	if d, err := url.PathUnescape(p); err == nil {
		return d
	}
	return p
}
