package reload

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/zbrecover/zbrecover/inspect"
	"github.com/zbrecover/zbrecover/journal"
	"github.com/zbrecover/zbrecover/keyfile"
	"github.com/zbrecover/zbrecover/schemadiff"
	"github.com/zbrecover/zbrecover/sqlstmt"
	"github.com/zbrecover/zbrecover/storage"
)

// KeysDir is the folder, under a staging location, keys files go to: hidden, so no listing
// of staged copies or fallback files ever takes one for a file to load.
const KeysDir = "_zbrecover/keys/"

// KeysPlace is where keys files go: a location the warehouse may read (a volume, an
// external location).
type KeysPlace struct {
	// Dst is rooted at Location; keys files are written under KeysDir, create-only.
	Dst      storage.Backend
	Location string // a /Volumes/… path or a URL without query: what SQL names
}

// KeysSource is one fallback file whose key columns go into a keys file.
type KeysSource struct {
	Key         string // relative to the root it is read from
	Size        int64
	Rows        int64  // the footer's row count, as the journal or inspect knows it
	Label       string // the keys file's group column: a schema group id, or a batch number
	Group       string // the file's schema group id
	FooterBytes int64
}

// KeysSpec is the key and how each schema group's files hold it.
type KeysSpec struct {
	Key     Keys
	Table   schemadiff.Schema
	Groups  map[string]schemadiff.Schema // the files' schema, per schema group id
	Renames map[string]string            // confirmed renames, file column → table column
}

// keyfileSpec resolves where each schema group's files hold each key column: under the
// table's name, under the old name of a confirmed rename, or under the column-mapping
// physical name.
func (s KeysSpec) keyfileSpec() (keyfile.Spec, error) {
	spec := keyfile.Spec{Groups: map[string][]keyfile.Path{}}
	fields := make([]schemadiff.Field, len(s.Key))
	for i, k := range s.Key {
		f, ok := findField(s.Table.Fields, k)
		if !ok {
			return spec, fmt.Errorf("%w: the table has no column %s", ErrKeyColumn, schemadiff.QuoteIdent(k))
		}
		fields[i] = f
		spec.Columns = append(spec.Columns, keyfile.Column{Name: f.Name, Type: f.Type})
	}
	for id, g := range s.Groups {
		paths := make([]keyfile.Path, len(s.Key))
		for i, tf := range fields {
			name := ""
			if f, ok := findField(g.Fields, tf.Name); ok {
				name = f.Name
			}
			for old, nw := range s.Renames {
				if name == "" && strings.EqualFold(nw, tf.Name) {
					if f, ok := findField(g.Fields, old); ok {
						name = f.Name
					}
				}
			}
			if name == "" && tf.PhysicalName != "" {
				if f, ok := findField(g.Fields, tf.PhysicalName); ok {
					name = f.Name
				}
			}
			if name == "" {
				return spec, fmt.Errorf("%w: the files of schema group %s have no column %s (nor a renamed or physical name of it)",
					ErrKeyColumn, id, schemadiff.QuoteIdent(tf.Name))
			}
			paths[i] = keyfile.Path{name}
		}
		spec.Groups[id] = paths
	}
	return spec, nil
}

// BuildKeys reads the key columns of the files (only those column chunks, from src) and
// stores them as one keys file in place, create-only, under KeysDir with a name made of
// prefix and a random suffix. Every row of every file is read, or it fails naming the file;
// the rows read per file are checked against the footer counts the caller knows. It returns
// the file's record for the journal (Batches left for the caller).
func BuildKeys(ctx context.Context, src storage.Backend, files []KeysSource, spec KeysSpec, place KeysPlace, prefix string, progress func(done, total int)) (*journal.KeysFile, error) {
	ks, err := spec.keyfileSpec()
	if err != nil {
		return nil, err
	}
	p, ok := storage.AsPutter(place.Dst)
	if !ok {
		return nil, fmt.Errorf("keys file: %s cannot be written to", place.Location)
	}
	sources := make([]keyfile.Source, len(files))
	want := map[string]int64{}
	for i, f := range files {
		// Each label is its own group in the keys file; the paths are the schema group's.
		sources[i] = keyfile.Source{Key: f.Key, Size: f.Size, Group: f.Label, FooterLength: f.FooterBytes}
		want[f.Key] = f.Rows
	}
	// keyfile groups sources by Source.Group: give each label its schema group's paths.
	labelled := keyfile.Spec{Columns: ks.Columns, Groups: map[string][]keyfile.Path{}}
	for _, f := range files {
		if paths, ok := ks.Groups[f.Group]; ok {
			labelled.Groups[f.Label] = paths
		}
	}
	opts := keyfile.Options{}
	if progress != nil {
		progress(0, len(files))
		opts.Progress = func(pr keyfile.Progress) { progress(pr.Done, pr.Files) }
	}
	name := KeysDir + prefix + "-" + time.Now().UTC().Format("20060102T150405Z") + "-" + randomHex(4) + ".parquet"
	var res *keyfile.Result
	up, err := keyfile.Upload(ctx, p, name, os.TempDir(), func(w io.Writer) error {
		var werr error
		res, werr = keyfile.Write(ctx, w, src, sources, labelled, opts)
		return werr
	})
	if err != nil {
		var fe *keyfile.FileErrors
		if errors.As(err, &fe) {
			return nil, fmt.Errorf("keys file: %w (nothing was stored)", err)
		}
		return nil, fmt.Errorf("keys file at %s: %w", place.Location, err)
	}
	if res != nil {
		for _, fr := range res.Files {
			if w, ok := want[fr.Key]; ok && w != fr.Rows {
				_ = place.Dst.Delete(ctx, name, storage.Precondition{})
				return nil, fmt.Errorf("keys file: %s holds %d rows, its footer said %d when it was inspected: not recorded", fr.Key, fr.Rows, w)
			}
		}
	}
	kf := &journal.KeysFile{Location: strings.TrimSuffix(place.Location, "/"), Key: name, Size: up.Size, SHA256: up.SHA256}
	for _, c := range ks.Columns {
		kf.Columns = append(kf.Columns, c.Name)
	}
	if res != nil {
		kf.Rows = res.Rows
	}
	return kf, nil
}

// KeysFileURL is the URL SQL reads a keys file by.
func KeysFileURL(kf journal.KeysFile) string {
	return strings.TrimSuffix(kf.Location, "/") + "/" + kf.Key
}

// keysFileSource reads a keys file's key columns with its group column as g.
func keysFileSource(url string, n int) KeySource {
	exprs := make([]string, n)
	for i := range exprs {
		exprs[i] = fmt.Sprintf("k%d", i)
	}
	return sqlstmt.KeySource{File: url, Exprs: exprs}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// reportSources are inspect's readable files of rep, labelled by schema group, for a keys
// file (inspect --key).
func reportSources(rep *inspect.Report) []KeysSource {
	var out []KeysSource
	for _, g := range rep.Groups {
		for _, f := range rep.GroupFiles(g.SchemaID) {
			if strings.HasSuffix(f.Key, ".parquet") {
				out = append(out, KeysSource{Key: rep.Prefix + f.Key, Size: f.Size, Rows: f.Rows, Label: g.SchemaID, Group: g.SchemaID, FooterBytes: f.FooterBytes})
			}
		}
	}
	return out
}

// writeKeys reads the key columns of the run's files that no keys file of the run with the
// same key holds (the batches about to be sent, and those sent before) into one keys file,
// and records it. Nothing happens without Options.Keys.
func (r *runner) writeKeys(ctx context.Context, todo []work) error {
	keys := r.o.Keys
	if len(keys) == 0 {
		return nil
	}
	place := r.o.KeysPlace
	if place == nil && r.o.Stage != nil {
		place = &KeysPlace{Dst: r.o.Stage.Dst, Location: r.o.Stage.Location}
	}
	if place == nil {
		return fmt.Errorf("no place for the keys file")
	}
	covered := map[int]bool{}
	if r.st != nil {
		for _, kf := range r.st.KeysFiles {
			if sameKey(kf.Columns, keys) {
				for _, b := range kf.Batches {
					covered[b] = true
				}
			}
		}
	}
	groups := map[string]schemadiff.Schema{}
	footer := map[string]int64{}
	for _, g := range r.p.rep.Groups {
		groups[g.SchemaID] = g.Schema
	}
	for _, f := range r.p.rep.Files {
		footer[r.p.Plan.Prefix+f.Key] = f.FooterBytes
	}
	type batch struct {
		n     int
		group string
		files []journal.File
	}
	var all []batch
	if r.st != nil {
		for _, b := range r.st.Batches {
			all = append(all, batch{b.Batch, b.Group, b.Files})
		}
	}
	seen := map[int]bool{}
	for _, b := range all {
		seen[b.n] = true
	}
	for _, w := range todo {
		if !seen[w.n] {
			all = append(all, batch{w.n, w.group, w.files})
		}
	}
	var srcs []KeysSource
	var nums []int
	for _, b := range all {
		if covered[b.n] || len(b.files) == 0 {
			continue
		}
		if _, ok := groups[b.group]; !ok {
			return fmt.Errorf("batch %d: its schema group %s is not among the files listed now", b.n, b.group)
		}
		nums = append(nums, b.n)
		for _, f := range b.files {
			srcs = append(srcs, KeysSource{Key: f.Key, Size: f.Size, Rows: f.Rows, Label: fmt.Sprint(b.n), Group: b.group, FooterBytes: footer[f.Key]})
		}
	}
	if len(srcs) == 0 {
		return nil
	}
	kf, err := BuildKeys(ctx, r.p.tgt.Root, srcs, KeysSpec{Key: keys, Table: r.p.table.Schema, Groups: groups, Renames: r.o.Renames}, *place, r.w.Run(), r.run.Progress.Keys)
	if err != nil {
		return err
	}
	kf.Batches = nums
	return r.w.Append(ctx, journal.Record{Kind: journal.KindKeys, Keys: kf})
}

func sameKey(a []string, b Keys) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !strings.EqualFold(a[i], b[i]) {
			return false
		}
	}
	return true
}
