package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/zbrecover/zbrecover/databricks"
	"github.com/zbrecover/zbrecover/inspect"
	"github.com/zbrecover/zbrecover/internal/textfmt"
	"github.com/zbrecover/zbrecover/internal/textsafe"
	"github.com/zbrecover/zbrecover/reload"
	"github.com/zbrecover/zbrecover/tableref"
)

// parseKeyFlag reads a --key style flag; "" gives nil.
func parseKeyFlag(flag, s string) (reload.Keys, error) {
	if s == "" {
		return nil, nil
	}
	k, err := reload.ParseKeys(s)
	if err != nil {
		return nil, FlagErrorf("--%s: %v", flag, err)
	}
	return k, nil
}

// inspectKeys measures inspect --key on the warehouse: nil when no key was asked for.
func inspectKeys(ctx context.Context, o *InspectOptions, tgt *tableref.Ref, rep *inspect.Report, table *inspect.Table) (*reload.OverlapReport, error) {
	keys, err := parseKeyFlag("key", o.Key)
	if err != nil || keys == nil {
		return nil, err
	}
	if table == nil || !table.Known() {
		return nil, fmt.Errorf("--key: the table's schema is needed to read the keys")
	}
	ws := o.F.workspace()
	if ws == nil {
		return nil, fmt.Errorf("--key: %w", ErrNeedsDatabricks)
	}
	wh, err := ws.Warehouse(ctx)
	if err != nil {
		return nil, err
	}
	if stage := o.stage; stage != nil {
		renames, _ := parseRenames(o.Renames)
		bars := newBars(o.F)
		ov, _, err := reload.OverlapByKeys(ctx, wh, tgt.Name, tgt.Root, rep, reload.KeysSpec{Key: keys, Table: table.Schema, Renames: renames},
			reload.KeysPlace{Dst: stage.Dst, Location: stage.Location}, bars.counter("keys read", "files"))
		bars.done(err == nil)
		if err != nil {
			if errors.Is(err, reload.ErrKeyColumn) {
				return nil, WithCode(ExitUsage, "--key: "+err.Error())
			}
			return nil, fmt.Errorf("--key: %w", err)
		}
		return ov, nil
	}
	srcs, err := reload.OverlapSources(rep, table.Schema, keys, tgt.Loc.Join(rep.Prefix))
	if err != nil {
		return nil, WithCode(ExitUsage, "--key: "+err.Error())
	}
	ov, err := reload.Overlap(ctx, wh, tgt.Name, keys, srcs)
	if err != nil {
		if errors.Is(err, reload.ErrLocationOverlap) {
			return nil, fmt.Errorf("--key: %w; give --stage-to %s: zbrecover then reads the key columns itself and puts one keys file there", err, databricks.StageToSuggestion(tgt.Name))
		}
		return nil, fmt.Errorf("--key: %w", err)
	}
	return ov, nil
}

// writeInspectJSON writes the inspect report with the overlap by key, when measured, as its
// "keys" member.
func writeInspectJSON(w io.Writer, rep *inspect.Report, ov *reload.OverlapReport) error {
	if ov == nil {
		return rep.WriteJSON(w)
	}
	return rep.WriteJSON(w, inspect.JSONMember{Key: "keys", Value: ov})
}

func writeOverlapText(w io.Writer, ov *reload.OverlapReport) error {
	if ov == nil {
		return nil
	}
	fmt.Fprintf(w, "\nBy key %s against %s (%s):\n", ov.Key, ov.Table, textfmt.Plural(ov.Statements, "statement"))
	line := func(name string, c reload.KeyCounts) {
		fmt.Fprintf(w, "  %-14s %s, %s: %s with a key already in the table, %s duplicated in the files (%s), %s new",
			name, textfmt.Plural(c.Records, "record"), textfmt.Plural(c.Keys, "key"), textfmt.Plural(c.InTable, "record"),
			textfmt.Plural(c.DuplicateKeys, "key"), textfmt.Plural(c.DuplicateRecords, "extra record"), textfmt.Count(c.New))
		if c.NullKeyRecords > 0 {
			fmt.Fprintf(w, ", %s with a NULL key", textfmt.Plural(c.NullKeyRecords, "record"))
		}
		fmt.Fprintln(w)
	}
	for _, g := range ov.Groups {
		id := g.Group
		if len(id) > 12 {
			id = id[:12]
		}
		line("group "+id, g)
	}
	line("total", ov.Total)
	fmt.Fprintf(w, "  A plain reload would add %s whose key is then in the table more than once; reload --dedupe-key %s inserts %s.\n",
		textfmt.Plural(ov.Total.WouldDuplicate, "row"), ov.Key, textfmt.Count(ov.Total.New))
	fmt.Fprintf(w, "  %s\n", ov.Note)
	return nil
}

// parseOrderFlag reads --dedupe-order as one key column (backquotes allowed); "" gives "".
func parseOrderFlag(s string) (string, error) {
	if s == "" {
		return "", nil
	}
	name, err := reload.ParseName(s)
	if err != nil {
		return "", FlagErrorf("--dedupe-order: %v", err)
	}
	return name, nil
}

func validateDedupeFlags(o *ReloadOptions) error {
	if _, err := parseKeyFlag("dedupe-key", o.DedupeKey); err != nil {
		return err
	}
	if _, err := parseOrderFlag(o.DedupeOrder); err != nil {
		return err
	}
	if o.DedupeKey == "" && (o.DedupeOrder != "" || o.DedupeAscending) {
		return FlagErrorf("--dedupe-order and --dedupe-ascending need --dedupe-key")
	}
	if o.DedupeAscending && o.DedupeOrder == "" {
		return FlagErrorf("--dedupe-ascending needs --dedupe-order")
	}
	return nil
}

func printMergeReport(w io.Writer, m *reload.MergeReport) {
	if m == nil {
		return
	}
	fmt.Fprintf(w, "Load by key %s: batches loaded staging table %s; MERGE %s, %s inserted into the table (%s)",
		m.Key, m.Staging, m.Status, textfmt.Plural(m.Inserted, "row"), textfmt.Plural(m.Statements, "MERGE statement"))
	if m.Dropped {
		fmt.Fprint(w, "; staging table dropped")
	} else if m.DropError != "" {
		fmt.Fprintf(w, "; the staging table could not be dropped (%s): the next reload drops it", m.DropError)
	}
	fmt.Fprintln(w)
	if m.Settled != "" {
		fmt.Fprintf(w, "  %s\n", m.Settled)
	}
	fmt.Fprintf(w, "  Of the records of one key it keeps %s.\n", m.Rule)
}

func printKeyCheck(w io.Writer, rep *reload.VerifyReport) {
	if m := rep.Merge; m != nil {
		ins := "-"
		if m.Inserted != nil {
			ins = textfmt.Count(*m.Inserted)
		}
		mark := "ok"
		if !m.OK {
			mark = "FAIL"
		}
		fmt.Fprintf(w, "  merge    %-4s  load by key %s through %s: merged %v, %s rows inserted  %s\n", mark, m.Key, m.Staging, m.Merged, ins, m.Note)
	}
	kc := rep.Keys
	if kc == nil {
		return
	}
	mark := "ok"
	if !kc.OK {
		mark = "FAIL"
	}
	fmt.Fprintf(w, "Keys %s of the run's %s (%s): %s, %s missing from the table  %s\n", kc.Key, textfmt.Plural(kc.Files, "file"),
		textfmt.Plural(kc.Statements, "statement"), textfmt.Plural(kc.Keys, "key"), textfmt.Count(kc.Missing), mark)
	fmt.Fprintf(w, "  table rows per key: 1: %s, 2: %s, 3+: %s (most: %s); %s duplicated in the table\n", textfmt.Count(kc.RowsPerKey.Once),
		textfmt.Count(kc.RowsPerKey.Twice), textfmt.Count(kc.RowsPerKey.More), textfmt.Count(kc.MaxRows), textfmt.Plural(kc.Duplicated, "key"))
	if kc.NullRows > 0 {
		fmt.Fprintf(w, "  %s of %s read %s a NULL key column (%s): a NULL key identifies nothing, so they are not looked up and prove nothing\n",
			textfmt.Count(kc.NullRows), textfmt.Plural(kc.Rows, "row"), textfmt.Either(kc.NullRows, "has", "have"), textfmt.Plural(kc.NullKeys, "distinct key"))
	}
	for _, b := range kc.Batches {
		switch b.Verdict {
		case reload.KeyFailed:
			fmt.Fprintf(w, "  batch %d  FAIL by key: %s\n", b.Batch, textsafe.Escape(b.Note))
		case reload.KeyUnproved:
			fmt.Fprintf(w, "  batch %d  not proved by key: %s\n", b.Batch, textsafe.Escape(b.Note))
		}
	}
	fmt.Fprintf(w, "  %s\n", kc.Note)
}

// verifyFailure is verify's exit-4 message.
func verifyFailure(rep *reload.VerifyReport) string {
	var msgs []string
	if rep.Failed > 0 {
		msgs = append(msgs, fmt.Sprintf("%s of %s of run %s %s not verify", textfmt.Count(rep.Failed), textfmt.Plural(len(rep.Checks), "batch"), rep.Run,
			textfmt.Either(rep.Failed, "does", "do")))
	}
	if rep.Merge != nil && !rep.Merge.OK {
		msgs = append(msgs, "the load by key's MERGE has not run after its last batch")
	}
	if k := rep.Keys; k != nil && !k.OK {
		if k.Missing > 0 {
			msgs = append(msgs, fmt.Sprintf("%s of run %s's files %s missing from the table", textfmt.Plural(k.Missing, "key"), rep.Run, textfmt.Are(k.Missing)))
		} else {
			// Every key read is there, but the check did not read every row as recorded.
			msgs = append(msgs, fmt.Sprintf("the key check of run %s failed: %s", rep.Run, strings.Join(k.Problems, "; ")))
		}
	}
	if len(msgs) == 0 {
		msgs = append(msgs, "run "+rep.Run+" does not verify")
	}
	return strings.Join(msgs, "; ")
}
