package cmd

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/user"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/zbrecover/zbrecover/internal/redact"
	"github.com/zbrecover/zbrecover/internal/textfmt"
)

// commandLine is `zbrecover args…` as a shell would read it back, secrets redacted.
func commandLine(args []string) string {
	out := []string{"zbrecover"}
	for _, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\n'\"\\$`*?[]{}();&|<>#~!") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		out = append(out, a)
	}
	return redact.String(strings.Join(out, " "))
}

// osUser is the login name of the process, "" when unknown.
func osUser() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return os.Getenv("USER")
}

// runHeader logs (at -v, and always to --log-file) the line that opens a reload, verify or
// cleanup in an incident timeline: who, against which workspace, with what command line and
// which build. The workspace host is looked up only when withWorkspace is set (the command
// needs the workspace anyway), so that a storage-only cleanup opens no connection for it.
// It returns what it logged, for the summary.
func runHeader(ctx context.Context, f *Factory, withWorkspace bool) *runSummary {
	b := readBuildInfo()
	s := &runSummary{CommandLine: commandLine(f.args), Version: b.short(), OSUser: osUser(), Started: time.Now().UTC(),
		Files: -1, Rows: -1, Inserted: -1}
	s.Machine, _ = os.Hostname()
	if ws := f.workspace(); withWorkspace && ws != nil {
		if c, err := ws.Client(ctx); err == nil {
			s.Workspace = c.Host()
		}
	}
	f.Logger.Info("run header", "user", orUnknown(s.OSUser), "machine", orUnknown(s.Machine), "workspace", orUnknown(s.Workspace),
		"command", s.CommandLine, "version", b.Version, "commit", orUnknown(b.Commit), "modified", b.Modified, "pid", os.Getpid())
	return s
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// runSummary is what a reload, verify or cleanup did, written by --summary as Markdown for an
// incident ticket. Commands fill in what they learn; empty fields are left out.
type runSummary struct {
	Command     string // reload, verify or cleanup
	CommandLine string
	Version     string
	OSUser      string
	Identity    string // the warehouse identity (current_user())
	Machine     string
	Workspace   string
	Started     time.Time

	Table, Root, Run string
	// Scope is what a scan covered, in words; Tables its counts.
	Scope, Tables string
	Journal       string
	// Finished is when the run ended; withSummary sets it.
	Finished time.Time
	// Files and Rows are the files and footer rows the run covers; Inserted the rows the
	// table reported inserted. Negative when not known.
	Files    int
	Bytes    int64
	Rows     int64
	Inserted int64
	// Batches counts the run's batches by state.
	Batches      map[string]int
	Staged       string
	Verification string
	Deleted      string
	RunStatus    string
	Notes        []string
	// Details is Markdown written after the table (a scan's tables).
	Details string
}

// addSummaryFlag adds --summary to c.
func addSummaryFlag(c *cobra.Command, path *string) {
	c.Flags().StringVar(path, "summary", "", "write a Markdown summary of the run for an incident ticket to this file (- for stdout)")
}

// checkSummaryFlag refuses --summary - under -o json: stdout holds the JSON report.
func checkSummaryFlag(f *Factory, path string) error {
	if path == "-" && (f.Global.JSON() || f.Global.Output == "jsonl") {
		return FlagErrorf("--summary - writes Markdown to stdout, which holds the JSON report: give a file")
	}
	return nil
}

// withSummary runs run and, when path is set, writes s as Markdown to path ("-": stdout) with
// the exit status run's outcome maps to and what to do next. A summary that cannot be
// written fails a run that did not fail otherwise.
func withSummary(ctx context.Context, f *Factory, path string, s *runSummary, next func(code int) []string, run func() error) error {
	err := run()
	if path == "" {
		return err
	}
	code := exitStatus(ctx, f, nil, err)
	var b strings.Builder
	s.Finished = time.Now().UTC()
	s.markdown(&b, code, err, next(code))
	werr := writeSummary(f, path, b.String())
	if werr == nil {
		if path != "-" {
			f.Logger.Info("summary written", "file", path)
		}
		return err
	}
	if err == nil {
		return werr
	}
	f.Logger.Warn("summary not written", "file", path, "error", werr.Error())
	return err
}

func writeSummary(f *Factory, path, text string) error {
	if path == "-" {
		_, err := io.WriteString(f.IO.Out, text)
		return err
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		return fmt.Errorf("--summary: %w", err)
	}
	return nil
}

// exitMeanings are the exit statuses in a summary's words.
var exitMeanings = map[int]string{
	ExitOK:          "ok",
	ExitFailure:     "error",
	ExitUsage:       "usage error",
	ExitSchema:      "the files' schema blocks the load",
	ExitVerify:      "verification failed",
	ExitPartial:     "partial: some files unreadable or failed, the rest done",
	ExitParked:      "parked fallback files found",
	ExitInterrupted: "interrupted",
	ExitTerminated:  "terminated",
}

// markdown writes the summary: a heading, one table, what went wrong and the next steps.
func (s *runSummary) markdown(w io.Writer, code int, err error, next []string) {
	fmt.Fprintf(w, "### %s\n\n", mdText(s.title()))
	fmt.Fprintln(w, "| | |")
	fmt.Fprintln(w, "|---|---|")
	for _, r := range s.rows(code) {
		if r[1] != "" {
			fmt.Fprintf(w, "| %s | %s |\n", r[0], mdCell(r[1]))
		}
	}
	if err != nil && err.Error() != "" {
		fmt.Fprintf(w, "\n**Error:** %s\n", mdText(redact.String(err.Error())))
	}
	if s.Details != "" {
		fmt.Fprintf(w, "\n%s", strings.TrimRight(s.Details, "\n")+"\n")
	}
	mdList(w, "Notes", s.Notes, mdText)
	mdList(w, "Next", next, func(n string) string { return n })
}

// title is the summary's heading: the command and what it worked on.
func (s *runSummary) title() string {
	title := "zbrecover " + s.Command
	switch {
	case s.Table != "":
		title += ": " + s.Table
	case s.Root != "":
		title += ": " + s.Root
	case s.Scope != "":
		title += ": " + s.Scope
	}
	return title
}

// rows are the summary's table: name and value, empty values left out when written.
func (s *runSummary) rows(code int) [][2]string {
	code1 := func(v string) string {
		if v == "" {
			return ""
		}
		return "`" + strings.ReplaceAll(v, "`", "'") + "`"
	}
	num := func(n int64) string {
		if n < 0 {
			return ""
		}
		return textfmt.Count(n)
	}
	finished := ""
	if !s.Finished.IsZero() {
		finished = s.Finished.Format(time.RFC3339)
	}
	who := s.OSUser
	if s.Identity != "" {
		who = strings.TrimSpace(who + " (warehouse identity " + s.Identity + ")")
	}
	files := ""
	if s.Files >= 0 {
		files = textfmt.Count(s.Files)
		if s.Bytes > 0 {
			files += " (" + textfmt.Bytes(s.Bytes) + ")"
		}
	}
	return [][2]string{
		{"run", code1(s.Run)}, {"table", code1(s.Table)}, {"root", code1(s.Root)}, {"scope", s.Scope},
		{"run state", s.RunStatus}, {"started", s.Started.Format(time.RFC3339)}, {"finished", finished},
		{"operator", who}, {"machine", s.Machine}, {"workspace", s.Workspace}, {"command", code1(s.CommandLine)},
		{"version", s.Version}, {"journal", code1(s.Journal)}, {"files", files}, {"tables", s.Tables},
		{"rows expected", num(s.Rows)}, {"rows inserted", num(s.Inserted)}, {"batches", s.batchStates()},
		{"staged", s.Staged}, {"verification", s.Verification}, {"deleted", s.Deleted},
		{"exit status", fmt.Sprintf("%d (%s)", code, orDefault(exitMeanings[code], "error"))},
	}
}

// batchStates is the run's batches by state: "3 verified, 1 unknown".
func (s *runSummary) batchStates() string {
	states := make([]string, 0, len(s.Batches))
	for st := range s.Batches {
		states = append(states, st)
	}
	sort.Strings(states)
	parts := make([]string, 0, len(states))
	for _, st := range states {
		parts = append(parts, textfmt.Count(s.Batches[st])+" "+st)
	}
	return strings.Join(parts, ", ")
}

// mdList writes a bold heading and a list of items, nothing when there are none.
func mdList(w io.Writer, heading string, items []string, text func(string) string) {
	if len(items) == 0 {
		return
	}
	fmt.Fprintf(w, "\n**%s:**\n", heading)
	for _, n := range items {
		fmt.Fprintf(w, "- %s\n", text(n))
	}
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// mdText is s (redacted) on one line; mdCell also escapes the table's column separator.
func mdText(s string) string {
	s = redact.String(s)
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " ")), " ")
}

func mdCell(s string) string { return strings.ReplaceAll(mdText(s), "|", `\|`) }

// mdCmd is a command to run, as Markdown inline code.
func mdCmd(s string) string { return "`" + redact.String(s) + "`" }

// addBreakLockFlag adds --break-lock to c.
func addBreakLockFlag(c *cobra.Command, v *bool) {
	c.Flags().BoolVar(v, "break-lock", false, "if another process's lock on the table is left (a killed run), show its holder and offer to break it; "+
		"never a running process's of this host; --yes breaks without asking only a lock whose holder on this host has ended, or one older than its 24h lease")
}
