package delta

import (
	"context"
	"fmt"
	"sort"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/zbrecover/zbrecover/schemadiff"
	"github.com/zbrecover/zbrecover/storage"
)

// DefaultHistoryCommits is the most commits History reads when asked for no bound: a busy
// table commits every few seconds, and the schema changes that matter to fallback files are
// recent.
const DefaultHistoryCommits = 2000

// historyReads is how many commit files History reads at once.
const historyReads = 16

// commitInfo is the part of a commit's commitInfo action History reports.
type commitInfo struct {
	Timestamp         int64  `json:"timestamp"`
	InCommitTimestamp *int64 `json:"inCommitTimestamp"`
	Operation         string `json:"operation"`
	UserName          string `json:"userName"`
	UserID            string `json:"userId"`
}

var commitInfoKey = []byte(`"commitInfo"`)

// History replays the table's schema over its versions from the log: it reads the newest
// commits (at most maxCommits of them, DefaultHistoryCommits when maxCommits <= 0; back to the
// first version missing from the log) and returns one entry per commit whose metaData action
// changed the schema, oldest first, with the commit's time, operation and user. When the
// commits read do not reach version 0, the schema before their first metaData comes from the
// oldest checkpoint between them (FromCheckpoint), when there is one. A table whose schema
// never changed in the commits read has one entry.
func History(ctx context.Context, b storage.Backend, maxCommits int) ([]schemadiff.SchemaVersion, error) {
	if maxCommits <= 0 {
		maxCommits = DefaultHistoryCommits
	}
	ls, err := list(ctx, b)
	if err != nil {
		return nil, err
	}
	if !ls.any {
		return nil, fmt.Errorf("%s: %w", b.Location(), ErrNotDeltaTable)
	}
	latest := int64(-1)
	for v := range ls.commits {
		latest = max(latest, v)
	}
	var versions []int64
	for v := latest; v >= 0 && len(versions) < maxCommits; v-- {
		if _, ok := ls.commits[v]; !ok {
			break
		}
		versions = append(versions, v)
	}
	type entry struct {
		md *metaData
		ci *commitInfo
	}
	entries := make([]entry, len(versions))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(historyReads)
	for i, v := range versions {
		g.Go(func() error {
			md, ci, err := readCommitSchema(gctx, b, ls.commits[v])
			entries[i] = entry{md, ci}
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}

	var out []schemadiff.SchemaVersion
	prev := ""
	if n := len(versions); n > 0 && versions[n-1] > 0 {
		// The schema before the first metaData read comes from a checkpoint between the
		// version before the oldest commit read and that metaData: the oldest such one.
		lo, hi := versions[n-1]-1, latest
		for i := n - 1; i >= 0; i-- {
			if entries[i].md != nil {
				hi = versions[i] - 1
				break
			}
		}
		var cp *checkpoint
		for i := range ls.checkpoints {
			c := &ls.checkpoints[i]
			if c.version >= lo && c.version <= hi && (cp == nil || c.version < cp.version) {
				cp = c
			}
		}
		if cp != nil {
			var st state
			if err := st.fromCheckpoint(ctx, b, cp); err != nil {
				return nil, err
			}
			if st.md != nil {
				s, err := schemadiff.ParseDeltaSchema(st.md.SchemaString)
				if err != nil {
					return nil, fmt.Errorf("%s: schema in %s: %w", b.Location(), cp.files[0].name, err)
				}
				out = append(out, schemadiff.SchemaVersion{Version: cp.version, FromCheckpoint: true, Schema: s})
				prev = st.md.SchemaString
			}
		}
	}
	for i := len(versions) - 1; i >= 0; i-- {
		e := entries[i]
		if e.md == nil || e.md.SchemaString == prev {
			continue
		}
		s, err := schemadiff.ParseDeltaSchema(e.md.SchemaString)
		if err != nil {
			return nil, fmt.Errorf("%s: schema in %s: %w", b.Location(), ls.commits[versions[i]].name, err)
		}
		sv := schemadiff.SchemaVersion{Version: versions[i], Schema: s}
		if ci := e.ci; ci != nil {
			ms := ci.Timestamp
			if ci.InCommitTimestamp != nil {
				ms = *ci.InCommitTimestamp
			}
			if ms > 0 {
				sv.Time = time.UnixMilli(ms).UTC()
			}
			sv.Operation = ci.Operation
			sv.User = ci.UserName
			if sv.User == "" {
				sv.User = ci.UserID
			}
		}
		out = append(out, sv)
		prev = e.md.SchemaString
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	return out, nil
}

// readCommitSchema scans a JSON commit for its metaData and commitInfo actions.
func readCommitSchema(ctx context.Context, b storage.Backend, f logFile) (*metaData, *commitInfo, error) {
	return readMetaDataAnd[commitInfo](ctx, b, f, "commitInfo")
}
