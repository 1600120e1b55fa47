package reload

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/zbrecover/zbrecover/databricks"
	"github.com/zbrecover/zbrecover/journal"
	"github.com/zbrecover/zbrecover/keyfile"
	"github.com/zbrecover/zbrecover/storage"
)

// A key check judges each batch it reads (journal.KeyBatch):
//
//   - failed: a key of its files (without a NULL column) is missing from the table, or its keys
//     were not read whole and as recorded (a keys file changed, gone or not a keys file; rows read
//     other than its files' footers hold). Whatever else proves the batch (its statement's answer,
//     a tagged commit), its files are kept until a later verify --key passes for it.
//   - unproved: every key read is in the table, but some rows have a NULL key column (a NULL key
//     identifies nothing, so such rows prove nothing; a file whose rows all have one cannot be
//     proved by key at all), or the same check failed another batch (a failing check proves
//     nothing). The batch keeps whatever other evidence it has.
//   - proved: every row of its files read, none with a NULL key column, every key in the table,
//     and no batch of the check failed.
//
// A file of 0 rows (a footer only) is covered by 0 rows.

// KeyBatch is a key check of one batch's files, with its verdict (KeyProved, KeyUnproved,
// KeyFailed).
type KeyBatch = journal.KeyBatch

// The verdicts of a key check on one batch.
const (
	KeyProved   = journal.KeyProved
	KeyUnproved = journal.KeyUnproved
	KeyFailed   = journal.KeyFailed
)

// keysFilesOf returns the run's keys files of key (the columns compared case-insensitively).
func keysFilesOf(st *journal.State, keys Keys) []journal.KeysFile {
	var out []journal.KeysFile
	for _, kf := range st.KeysFiles {
		if sameKey(kf.Columns, keys) {
			out = append(out, kf)
		}
	}
	return out
}

// fileKeys is what the keys files hold of one fallback file.
type fileKeys struct{ rows, nulls int64 }

// checkKeysFiles checks the run's batches that files cover by key. Each keys file is read
// whole and used only when its size and SHA-256 are the recorded ones (keyfile.OpenChecked); its
// rows are counted per file, with those that have a NULL key column. One statement then checks
// every key of the intact keys files against the table, per batch. A keys file that changed,
// is gone or is not a keys file fails the batches it covers; an error is returned only when a
// keys file cannot be opened or read at all (nothing is known of it then).
func checkKeysFiles(ctx context.Context, wh Warehouse, table databricks.TableName, st *journal.State, keys Keys, files []journal.KeysFile,
	open func(ctx context.Context, location string) (storage.Backend, error)) (*KeyCheck, error) {
	held := map[string]fileKeys{}
	bad := map[int]string{} // batch → why its keys file proves nothing
	var srcs []KeySource
	for _, kf := range files {
		b, err := open(ctx, kf.Location)
		if err != nil {
			return nil, fmt.Errorf("open the keys file %s: %w", KeysFileURL(kf), err)
		}
		c, err := keyfile.OpenChecked(ctx, b, kf.Key, keyfile.Recorded{Size: kf.Size, SHA256: kf.SHA256}, "")
		if errors.Is(err, keyfile.ErrChanged) {
			why := fmt.Sprintf("its keys file %s is not the one reload recorded (%s): it proves nothing", KeysFileURL(kf), changedWhy(err))
			for _, n := range kf.Batches {
				bad[n] = why
			}
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read the keys file %s: %w", KeysFileURL(kf), err)
		}
		counts, err := c.Counts(ctx)
		c.Close()
		if err != nil {
			return nil, fmt.Errorf("read the keys file %s: %w", KeysFileURL(kf), err)
		}
		for _, fc := range counts {
			h := held[fc.File]
			h.rows += fc.Rows
			h.nulls += fc.NullRows
			held[fc.File] = h
		}
		srcs = append(srcs, keysFileSource(KeysFileURL(kf), len(keys)))
	}
	kc, per, err := Reconcile(ctx, wh, table, keys, srcs)
	if err != nil {
		return nil, err
	}
	kc.Note = ReconcileKeysNote
	covered := map[int]bool{}
	for _, kf := range files {
		for _, n := range kf.Batches {
			covered[n] = true
		}
	}
	for _, b := range st.Batches {
		if len(b.Files) == 0 || !covered[b.Batch] {
			continue
		}
		kb := journal.KeyBatch{Batch: b.Batch}
		var short, nullFiles []string
		for _, f := range b.Files {
			kb.Expected += f.Rows
			h := held[f.Key]
			kb.Rows += h.rows
			kb.NullRows += h.nulls
			if h.rows != f.Rows {
				short = append(short, fmt.Sprintf("the keys files hold %d rows of %s, whose footer holds %d", h.rows, f.Key, f.Rows))
			}
			if h.nulls > 0 {
				nullFiles = append(nullFiles, nullFile(f.Key, h.nulls, h.rows))
			}
		}
		lc := per[fmt.Sprint(b.Batch)]
		kb.Keys, kb.Missing = lc.Keys, lc.Missing
		switch {
		case bad[b.Batch] != "":
			kb.Verdict, kb.Note = journal.KeyFailed, bad[b.Batch]
		case len(short) > 0:
			kb.Verdict, kb.Note = journal.KeyFailed, strings.Join(short, "; ")+": the key check does not cover every row, so it proves nothing"
		case lc.Rows != kb.Rows || lc.NullRows != kb.NullRows:
			kb.Verdict, kb.Note = journal.KeyFailed, fmt.Sprintf("the warehouse read %d rows (%d with a NULL key) of the batch from the keys files, "+
				"which hold %d (%d): it did not read the bytes that were checked, so the check proves nothing", lc.Rows, lc.NullRows, kb.Rows, kb.NullRows)
		default:
			verdict(&kb, nullFiles)
		}
		kc.Batches = append(kc.Batches, kb)
	}
	finish(kc)
	return kc, nil
}

// checkSources checks the run's batches by key from their files read through the warehouse
// (srcs, one label per batch): for each batch, the rows the statement read must be the rows
// its footers hold (a name the statement does not find reads as no rows, not as an error).
func checkSources(ctx context.Context, wh Warehouse, table databricks.TableName, st *journal.State, keys Keys, srcs []KeySource) (*KeyCheck, error) {
	kc, per, err := Reconcile(ctx, wh, table, keys, srcs)
	if err != nil {
		return nil, err
	}
	kc.Note = ReconcileNote
	labels := map[string]bool{}
	for _, s := range srcs {
		labels[s.Label] = true
	}
	for _, b := range st.Batches {
		label := fmt.Sprint(b.Batch)
		if len(b.Files) == 0 || !labels[label] {
			continue
		}
		lc := per[label]
		kb := journal.KeyBatch{Batch: b.Batch, Rows: lc.Rows, NullRows: lc.NullRows, Keys: lc.Keys, Missing: lc.Missing}
		for _, f := range b.Files {
			kb.Expected += f.Rows
		}
		if kb.Rows != kb.Expected {
			kb.Verdict, kb.Note = journal.KeyFailed, fmt.Sprintf("the key check read %d rows of the batch's files, whose footers hold %d: not every row was read "+
				"(a file missing or under another name where the warehouse reads it), so it proves nothing", kb.Rows, kb.Expected)
		} else {
			verdict(&kb, nil)
		}
		kc.Batches = append(kc.Batches, kb)
	}
	finish(kc)
	return kc, nil
}

// result returns the check of batch n, if the check read it.
func (kc *KeyCheck) result(n int) (journal.KeyBatch, bool) {
	for _, kb := range kc.Batches {
		if kb.Batch == n {
			return kb, true
		}
	}
	return journal.KeyBatch{}, false
}

// verdict judges a batch whose rows were all read: failed with a key missing, unproved with a
// row whose key has a NULL column (nullFiles name the files, when known), proved otherwise.
func verdict(kb *journal.KeyBatch, nullFiles []string) {
	switch {
	case kb.Missing > 0:
		kb.Verdict, kb.Note = journal.KeyFailed, fmt.Sprintf("%d of its %d keys are missing from the table", kb.Missing, kb.Keys)
	case kb.NullRows > 0:
		kb.Verdict = journal.KeyUnproved
		kb.Note = fmt.Sprintf("%d of its %d rows have a NULL key column, which proves nothing", kb.NullRows, kb.Rows)
		if kb.NullRows == kb.Rows {
			kb.Note = fmt.Sprintf("all %d of its rows have a NULL key column: it cannot be proved by key", kb.Rows)
		}
		if len(nullFiles) > 0 {
			kb.Note += " (" + strings.Join(nullFiles, ", ") + ")"
		}
	default:
		kb.Verdict = journal.KeyProved
	}
}

// nullFile describes the NULL-keyed rows of one file.
func nullFile(key string, nulls, rows int64) string {
	if nulls == rows {
		return fmt.Sprintf("%s: all %d rows, so that file cannot be proved by key", key, rows)
	}
	return fmt.Sprintf("%s: %d of %d rows", key, nulls, rows)
}

// finish sets the check's verdict (no batch failed) and says which batches failed or are
// unproved, batches with the same note named together. A check that failed a batch proves no
// batch: the others whose keys are all there are unproved.
func finish(kc *KeyCheck) {
	kc.OK = true
	var failed []string
	for _, kb := range kc.Batches {
		if kb.Verdict == journal.KeyFailed {
			failed = append(failed, fmt.Sprint(kb.Batch))
		}
	}
	if len(failed) > 0 {
		for i := range kc.Batches {
			if kb := &kc.Batches[i]; kb.Verdict == journal.KeyProved {
				kb.Verdict = journal.KeyUnproved
				kb.Note = fmt.Sprintf("every key of its files is in the table, but the same check failed batch %s, so it proves nothing", strings.Join(failed, ", "))
			}
		}
	}
	type finding struct{ verdict, note string }
	var order []finding
	batches := map[finding][]string{}
	for _, kb := range kc.Batches {
		if kb.Verdict != journal.KeyFailed && kb.Verdict != journal.KeyUnproved {
			continue
		}
		if kb.Verdict == journal.KeyFailed {
			kc.OK = false
		}
		f := finding{kb.Verdict, kb.Note}
		if _, ok := batches[f]; !ok {
			order = append(order, f)
		}
		batches[f] = append(batches[f], fmt.Sprint(kb.Batch))
	}
	for _, f := range order {
		bs := batches[f]
		name := "batch " + bs[0]
		if len(bs) > 1 {
			name = "batches " + strings.Join(bs, ", ")
		}
		if f.verdict == journal.KeyFailed {
			kc.Problems = append(kc.Problems, name+": "+f.note)
		} else {
			kc.Problems = append(kc.Problems, name+" not proved by key: "+f.note)
		}
	}
}

// changedWhy is the reason of a keyfile.ErrChanged error, without the file's name.
func changedWhy(err error) string {
	s := err.Error()
	if _, after, ok := strings.Cut(s, keyfile.ErrChanged.Error()+": "); ok {
		return after
	}
	return s
}
