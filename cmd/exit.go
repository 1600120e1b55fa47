package cmd

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/zbrecover/zbrecover/recovery"
	"github.com/zbrecover/zbrecover/tableref"

	"github.com/spf13/cobra"
)

// Exit codes, the same for every command. When several apply, the most urgent wins:
// ExitVerify, then ExitSchema, then ExitParked, then ExitPartial.
const (
	ExitOK          = 0   // success, including "nothing to do"
	ExitFailure     = 1   // any error not listed below
	ExitUsage       = 2   // bad flags or arguments
	ExitSchema      = 3   // the files' schema blocks the load
	ExitVerify      = 4   // verification failed (row counts or keys do not match)
	ExitPartial     = 5   // some files unreadable or failed, the rest done
	ExitParked      = 6   // scan --exit-code: some table holds parked fallback files
	ExitInterrupted = 130 // interrupted (Ctrl-C, SIGINT)
	ExitTerminated  = 143 // terminated (SIGTERM)
)

// exitCodesHelp is the root help's exit status paragraph: every code. Commands list theirs with
// exitHelp; docs/exit-codes.md says what each means for each command.
var exitCodesHelp = exitParagraph([]exitLine{{ExitOK, "ok"}, {ExitFailure, "error"}, {ExitUsage, "usage"},
	{ExitSchema, "the schema blocks the load"}, {ExitVerify, "verification failed"}, {ExitPartial, "partial"},
	{ExitParked, "parked files found (scan --exit-code)"}})

// exitLine is one code of a command's exit status help and what it means for that command, in
// a few words.
type exitLine struct {
	code    int
	meaning string
}

// exitHelp is the exit status paragraph of a command's help: 0, 1 and 2, then the codes the
// command can return besides (lines, in order), then 130/143 and where the details are. Only
// codes the command can return are listed; exitCodesHelp, the root's, lists them all.
func exitHelp(lines ...exitLine) string {
	all := []exitLine{{ExitOK, "ok"}, {ExitFailure, "error"}, {ExitUsage, "usage"}}
	for _, l := range lines {
		if l.code == ExitOK || l.code == ExitFailure {
			for i := range all {
				if all[i].code == l.code {
					all[i].meaning = l.meaning
				}
			}
			continue
		}
		all = append(all, l)
	}
	return exitParagraph(all)
}

// exitHelpWidth is the width the exit status paragraph is wrapped at.
const exitHelpWidth = 92

// exitParagraph renders "Exit status: 0 ok, 1 error, …, 130/143 interrupted
// (docs/exit-codes.md)." wrapped at exitHelpWidth.
func exitParagraph(lines []exitLine) string {
	var words []string
	for _, l := range lines {
		words = append(words, strings.Fields(fmt.Sprintf("%d %s,", l.code, l.meaning))...)
	}
	words = append(words, strings.Fields("130/143 interrupted (docs/exit-codes.md).")...)
	var b strings.Builder
	line := "Exit status:"
	for _, w := range words {
		if len(line)+1+len(w) > exitHelpWidth {
			b.WriteString(line + "\n")
			line = w
			continue
		}
		line += " " + w
	}
	b.WriteString(line)
	return b.String()
}

// FlagError is a usage error: the command's usage is printed and the exit code is 2.
type FlagError struct{ Err error }

func (e *FlagError) Error() string { return e.Err.Error() }
func (e *FlagError) Unwrap() error { return e.Err }

// isRecoveryUsage reports whether err is a request recovery cannot carry out as given (a
// place refused, a key column the table does not have).
func isRecoveryUsage(err error) bool {
	var ue *recovery.UsageError
	return errors.As(err, &ue)
}

// isFlagUsage reports whether err is a usage error the operator fixes in a flag: the usage
// hint follows it.
func isFlagUsage(err error) bool {
	var fe *FlagError
	var ue *recovery.UsageError
	return errors.As(err, &fe) || errors.As(err, &ue) && ue.Flag
}

// FlagErrorf returns a usage error.
func FlagErrorf(format string, args ...any) error {
	return &FlagError{Err: fmt.Errorf(format, args...)}
}

// ExitError carries a non-zero exit code for an outcome that is not a failure of the command
// itself: the report was printed, and the code tells scripts what it found (3, 4, 5).
type ExitError struct {
	Code int
	Msg  string
}

func (e *ExitError) Error() string { return e.Msg }

// WithCode returns an error that exits with code after printing msg.
func WithCode(code int, msg string) error { return &ExitError{Code: code, Msg: msg} }

// ExitCode maps an error to the process exit status. It is the one place where that happens.
func ExitCode(err error) int {
	var fe *FlagError
	var ee *ExitError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ee):
		return ee.Code
	case errors.As(err, &fe), tableref.IsUsage(err), isRecoveryUsage(err):
		return ExitUsage
	case errors.Is(err, context.Canceled):
		return ExitInterrupted
	default:
		return ExitFailure
	}
}

// MostUrgent returns the exit code that wins when several outcomes apply: 4, then 3, then 6,
// then 5, then any other non-zero code.
func MostUrgent(codes ...int) int {
	rank := func(c int) int {
		switch c {
		case ExitVerify:
			return 5
		case ExitSchema:
			return 4
		case ExitParked:
			return 3
		case ExitPartial:
			return 2
		case ExitOK:
			return 0
		default:
			return 1
		}
	}
	best := ExitOK
	for _, c := range codes {
		if rank(c) > rank(best) {
			best = c
		}
	}
	return best
}

// exactArgs is cobra.ExactArgs whose error is a usage error (exit 2).
func exactArgs(n int) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if err := cobra.ExactArgs(n)(c, args); err != nil {
			return &FlagError{Err: err}
		}
		return nil
	}
}

// maxArgs is cobra.MaximumNArgs whose error is a usage error (exit 2).
func maxArgs(n int) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if err := cobra.MaximumNArgs(n)(c, args); err != nil {
			return &FlagError{Err: err}
		}
		return nil
	}
}
