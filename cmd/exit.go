package cmd

import (
	"context"
	"errors"
	"fmt"
	"github.com/zbrecover/zbrecover/tableref"
	"strings"

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

// exitCodesHelp is the root help's exit status block: every code. Commands list theirs with exitHelp.
const exitCodesHelp = `
Exit status:
  0    ok (including "nothing to do")
  1    error
  2    usage error (bad flags or arguments)
  3    the files' schema blocks the load
  4    verification failed
  5    partial: some files unreadable or failed, the rest done
  6    scan --exit-code: some table holds parked fallback files
  130  interrupted (SIGINT, Ctrl-C)
  143  terminated (SIGTERM)`

// exitLine is one line of a command's exit status help: a code and what it means for that
// command.
type exitLine struct {
	code    int
	meaning string
}

// exitHelp is the exit status block of a command's help: 0, 1 and 2, then the codes the
// command can return besides (lines, in order), then 130 and 143. Only codes the command can
// return are listed; exitCodesHelp, the root's, lists them all.
func exitHelp(lines ...exitLine) string {
	var b strings.Builder
	b.WriteString("\nExit status:\n")
	write := func(code int, meaning string) { fmt.Fprintf(&b, "  %-4d %s\n", code, meaning) }
	write(ExitOK, "ok (including \"nothing to do\")")
	failure := "error"
	for _, l := range lines {
		if l.code == ExitFailure {
			failure = l.meaning
		}
	}
	write(ExitFailure, failure)
	write(ExitUsage, "usage error (bad flags or arguments)")
	for _, l := range lines {
		if l.code != ExitFailure {
			write(l.code, l.meaning)
		}
	}
	write(ExitInterrupted, "interrupted (SIGINT, Ctrl-C)")
	write(ExitTerminated, "terminated (SIGTERM)")
	return strings.TrimRight(b.String(), "\n")
}

// FlagError is a usage error: the command's usage is printed and the exit code is 2.
type FlagError struct{ Err error }

func (e *FlagError) Error() string { return e.Err.Error() }
func (e *FlagError) Unwrap() error { return e.Err }

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
	case errors.As(err, &fe), tableref.IsUsage(err):
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
