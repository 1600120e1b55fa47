package inspect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/zbrecover/zbrecover/internal/textfmt"
	"github.com/zbrecover/zbrecover/schemadiff"
	"github.com/zbrecover/zbrecover/storage"
)

// ErrChanged is wrapped by the error of a file that a saved report lists but that is no
// longer the object the report describes (another size, ETag or generation, or gone).
var ErrChanged = errors.New("changed since the report was made")

// LoadReport reads a report that `inspect -o json` wrote (WriteJSON). Its files keep their
// size, ETag and generation, so that PreviewGroup and CheckUnchanged can tell whether the
// objects are still the ones the report describes; its groups' schemas are known by column
// name only (the report's columns), which is what previews select by.
func LoadReport(r io.Reader) (*Report, error) {
	// The diff (table, verdicts, changes, suggestions) is not read back: previews do not
	// need it, and it is for the table as it was then.
	var saved struct {
		Root   string `json:"root"`
		Prefix string `json:"prefix"`
		Files  []File `json:"files"`
		Totals Totals `json:"totals"`
		Groups []struct {
			SchemaID  string   `json:"schema_id"`
			Files     int      `json:"files"`
			Rows      int64    `json:"rows"`
			Bytes     int64    `json:"bytes"`
			FirstFile string   `json:"first_file"`
			Columns   []Column `json:"columns"`
		} `json:"groups"`
	}
	if err := json.NewDecoder(r).Decode(&saved); err != nil {
		return nil, fmt.Errorf("not an inspect -o json report: %w", err)
	}
	if saved.Root == "" || saved.Prefix == "" || saved.Files == nil || saved.Groups == nil {
		return nil, errors.New("not an inspect -o json report: root, prefix, files or groups missing")
	}
	rep := Report{Root: saved.Root, Prefix: saved.Prefix, Files: saved.Files, Totals: saved.Totals}
	for _, g := range saved.Groups {
		rep.Groups = append(rep.Groups, Group{SchemaID: g.SchemaID, Files: g.Files, Rows: g.Rows, Bytes: g.Bytes,
			FirstFile: g.FirstFile, Columns: g.Columns})
	}
	for i := range rep.Files {
		f := &rep.Files[i]
		if f.KeyQuoted != "" {
			if k, ok := UnquoteKey(f.KeyQuoted); ok {
				f.Key = k
			}
		}
	}
	for i := range rep.Groups {
		g := &rep.Groups[i]
		for _, c := range g.Columns {
			g.Schema.Fields = append(g.Schema.Fields, schemadiff.Field{Name: c.Name, Nullable: c.Nullable})
		}
	}
	rep.saved = true
	return &rep, nil
}

// CheckUnchanged stats the file and fails with an error wrapping ErrChanged when it is gone
// or its size, ETag or generation is not what the report recorded (1 request). It returns
// the object as listed now.
func CheckUnchanged(ctx context.Context, b storage.Backend, prefix string, f File) (storage.ObjectInfo, error) {
	want := f.Object(prefix)
	cur, err := b.Stat(ctx, want.Key)
	if errors.Is(err, storage.ErrNotExist) {
		return cur, fmt.Errorf("%s: gone: %w", f.Key, ErrChanged)
	}
	if err != nil {
		return cur, err
	}
	var diffs []string
	if cur.Size != want.Size {
		diffs = append(diffs, fmt.Sprintf("size %d, not %d", cur.Size, want.Size))
	}
	if want.ETag != "" && cur.ETag != "" && cur.ETag != want.ETag {
		diffs = append(diffs, fmt.Sprintf("ETag %s, not %s", cur.ETag, want.ETag))
	}
	if want.Generation != 0 && cur.Generation != 0 && cur.Generation != want.Generation {
		diffs = append(diffs, fmt.Sprintf("generation %d, not %d", cur.Generation, want.Generation))
	}
	if want.ETag == "" && want.Generation == 0 && !want.ModTime.IsZero() && !cur.ModTime.Equal(want.ModTime) {
		diffs = append(diffs, "modified "+textfmt.Time(cur.ModTime)+", not "+textfmt.Time(want.ModTime))
	}
	if len(diffs) > 0 {
		return cur, fmt.Errorf("%s: %s: %w", f.Key, strings.Join(diffs, ", "), ErrChanged)
	}
	return cur, nil
}

// FindFile returns the report's file with key (relative to the fallback prefix, or in its
// Go-quoted form).
func (r *Report) FindFile(key string) (*File, bool) {
	key = strings.TrimPrefix(strings.TrimPrefix(key, "/"), r.Prefix)
	if k, ok := UnquoteKey(key); ok {
		key = strings.TrimPrefix(k, r.Prefix)
	}
	for i := range r.Files {
		if r.Files[i].Key == key {
			return &r.Files[i], true
		}
	}
	return nil, false
}
