package cmd

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/zbrecover/zbrecover/history"
	"github.com/zbrecover/zbrecover/internal/redact"
	"github.com/zbrecover/zbrecover/internal/textfmt"
)

// listedAtMost is how many files a list of the recovery summary names before "and N more".
const listedAtMost = 20

// recoveryMarkdown writes the summary of a whole recovery (one run, every command that worked
// on it) for an incident ticket.
func recoveryMarkdown(w io.Writer, r *history.Recovery) {
	fmt.Fprintf(w, "### Recovery of %s (run %s)\n\n", mdText(orDefault(r.Table, r.Root)), mdText(r.Run))
	fmt.Fprintln(w, "| | |")
	fmt.Fprintln(w, "|---|---|")
	for _, row := range recoveryRows(r) {
		if row[1] != "" {
			fmt.Fprintf(w, "| %s | %s |\n", row[0], mdCell(row[1]))
		}
	}
	if len(r.Groups) > 0 {
		fmt.Fprintln(w, "\n**Schema groups and how they were loaded:**")
		for _, g := range r.Groups {
			how := "as they are"
			if g.Projection != "" {
				how = "through `` SELECT " + strings.ReplaceAll(g.Projection, "``", "` `") + " ``"
			}
			fmt.Fprintf(w, "- `%s`: %s, %s, loaded %s\n", mdText(g.Group), textfmt.Plural(g.Files, "file"), textfmt.Plural(g.Rows, "row"), how)
		}
	}
	recoveryBatches(w, r)
	var left []string
	for _, f := range r.Left {
		left = append(left, "`"+mdText(f.Key)+"`: "+mdText(f.Reason))
	}
	mdListAtMost(w, "Left in the fallback folder", left)
	var kept []string
	for _, k := range r.Deletion.Kept {
		kept = append(kept, "`"+mdText(k.Key)+"`: "+mdText(k.Status)+orDefault(prefixed(": ", k.Reason), ""))
	}
	mdListAtMost(w, "Kept by cleanup", kept)
	var ignored []string
	for _, f := range r.IgnoredForeign {
		ignored = append(ignored, fmt.Sprintf("runs %s loaded anyway (--ignore-foreign-runs): %s", strings.Join(f.Runs, ", "), mdText(f.Reason)))
	}
	mdList(w, "Decisions", ignored, func(s string) string { return s })
	mdList(w, "Warnings", r.Warnings, mdText)
	if len(r.Commands) > 0 {
		fmt.Fprintln(w, "\n**Commands run:**")
		fmt.Fprintln(w, "\n| time | operator | command |")
		fmt.Fprintln(w, "|---|---|---|")
		for _, c := range r.Commands {
			who := c.User
			if c.Identity != "" {
				who = strings.TrimSpace(who + " (" + c.Identity + ")")
			}
			if c.Host != "" {
				who += " on " + c.Host
			}
			fmt.Fprintf(w, "| %s | %s | %s |\n", c.Time.UTC().Format(time.RFC3339), mdCell(who), mdCell("`"+strings.ReplaceAll(redact.String(c.Command), "`", "'")+"`"))
		}
	}
}

// recoveryRows are the summary's table: name and value, empty values left out.
func recoveryRows(r *history.Recovery) [][2]string {
	rows := r.Rows
	loaded := fmt.Sprintf("%s expected; %s loaded", textfmt.Count(rows.Expected), textfmt.Count(rows.Loaded))
	if rows.FromHistory > 0 {
		loaded += fmt.Sprintf(" (%s by the statements' answers, %s settled from the table's history)", textfmt.Count(rows.Answered), textfmt.Count(rows.FromHistory))
	}
	var proof []string
	for _, p := range r.Proof {
		by := "by " + proofWords(p.Evidence)
		if isState(p.Evidence) {
			by = proofWords(p.Evidence)
		}
		proof = append(proof, fmt.Sprintf("%s %s (%s)", textfmt.Plural(p.Batches, "batch"), by, textfmt.Plural(p.Rows, "row")))
	}
	ended := ""
	if !r.Ended.IsZero() {
		ended = r.Ended.UTC().Format(time.RFC3339)
	}
	d := r.Deletion
	deleted := ""
	if d.Deleted+d.Gone+len(d.Kept) > 0 {
		deleted = fmt.Sprintf("%s (%s); %s already gone; %s archived first; %s kept; %s not cleaned yet",
			textfmt.Plural(d.Deleted, "file"), textfmt.Bytes(d.Bytes), textfmt.Count(d.Gone), textfmt.Count(d.Archived), textfmt.Count(len(d.Kept)), textfmt.Count(d.NotCleaned))
	}
	var staged []string
	for _, s := range d.Staged {
		staged = append(staged, fmt.Sprintf("%s at %s (%s removed)", textfmt.Count(s.Copies), s.Location, textfmt.Count(s.Removed)))
	}
	left := ""
	if n := len(r.Left); n > 0 {
		left = textfmt.Plural(n, "file") + " (listed below)"
	}
	return [][2]string{
		{"table", code(r.Table) + prefixed(" (table id ", r.TableID) + closing(r.TableID)}, {"root", code(r.Root)},
		{"state", string(r.Status)}, {"started", r.Started.UTC().Format(time.RFC3339)}, {"ended", ended},
		{"files", fmt.Sprintf("%s in %s and %s", textfmt.Plural(r.Files, "file"), textfmt.Plural(len(r.Batches), "batch"), textfmt.Plural(len(r.Groups), "schema group"))},
		{"rows", loaded}, {"proof", strings.Join(proof, "; ")}, {"key check", keyCheckLine(r)},
		{"left behind", left}, {"deleted", deleted}, {"staged copies", strings.Join(staged, "; ")},
	}
}

// recoveryBatches writes the table of batches.
func recoveryBatches(w io.Writer, r *history.Recovery) {
	if len(r.Batches) == 0 {
		return
	}
	fmt.Fprintln(w, "\n**Batches:**")
	fmt.Fprintln(w, "\n| batch | group | folder | files | rows | loaded | state | proved by | commit |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|")
	for _, b := range r.Batches {
		commit := ""
		if b.Version != nil {
			commit = fmt.Sprint(*b.Version)
		}
		fmt.Fprintf(w, "| %d | %s | %s | %s | %s | %s | %s | %s | %s |\n", b.Batch, mdCell(b.Group), mdCell(b.Folder), textfmt.Count(b.Files), textfmt.Count(b.Rows), textfmt.Count(b.Loaded),
			b.Status, mdCell(proofWords(b.Evidence)), commit)
	}
}

// keyCheckLine says what the latest key check found, "" when there was none.
func keyCheckLine(r *history.Recovery) string {
	k := r.Keys
	if k == nil {
		return "none (zbrecover verify --key COL checks every key of the files in the table)"
	}
	line := fmt.Sprintf("%s: %s, %s missing from the table", strings.Join(k.Key, ","), textfmt.Plural(k.Keys, "key"), textfmt.Count(k.Missing))
	if k.Duplicated > 0 {
		line += fmt.Sprintf(", %s in the table twice or more (at most %s)", textfmt.Count(k.Duplicated), textfmt.Plural(k.MaxRows, "row"))
	}
	if k.NullRows > 0 {
		line += fmt.Sprintf(", %s with a NULL key column (proving nothing)", textfmt.Plural(k.NullRows, "row"))
	}
	if k.OK {
		return line + ": passed"
	}
	return line + ": failed" + prefixed(" (", k.Note) + closing(k.Note)
}

// proofWords says how a batch was proved, from its evidence (or its state when unproved).
func proofWords(ev string) string {
	switch ev {
	case "answer":
		return "the statement's answer"
	case "tag":
		return "a commit carrying its tag"
	case "history":
		return "the only matching commit (no tag)"
	case "key":
		return "the key check"
	case "merge":
		return "the load by key's MERGE"
	}
	return ev
}

// isState reports whether a proof count is of unproved batches (named by their state).
func isState(ev string) bool {
	switch ev {
	case "answer", "tag", "history", "key", "merge":
		return false
	}
	return true
}

// mdListAtMost is mdList of at most listedAtMost items and how many more there are.
func mdListAtMost(w io.Writer, heading string, items []string) {
	if n := len(items); n > listedAtMost {
		items = append(items[:listedAtMost:listedAtMost], fmt.Sprintf("… and %s more (zbrecover history --run lists them all)", textfmt.Count(n-listedAtMost)))
	}
	mdList(w, heading, items, func(s string) string { return s })
}

func code(s string) string {
	if s == "" {
		return ""
	}
	return "`" + strings.ReplaceAll(s, "`", "'") + "`"
}

func prefixed(prefix, s string) string {
	if s == "" {
		return ""
	}
	return prefix + s
}

func closing(s string) string {
	if s == "" {
		return ""
	}
	return ")"
}
