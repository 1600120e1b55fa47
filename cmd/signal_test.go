package cmd

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/zbrecover/zbrecover/internal/iostreams"
)

// A run cancelled by SIGTERM exits 143, by SIGINT 130; under -o json every stderr line, logs
// and the signal notice included, is a JSON object.
func TestSignalExitCodes(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIATESTSIGNALS")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test-secret-for-signals")
	for _, c := range []struct {
		sig    os.Signal
		output string
		want   int
	}{
		{syscall.SIGTERM, "text", ExitTerminated},
		{syscall.SIGTERM, "json", ExitTerminated},
		{os.Interrupt, "text", ExitInterrupted},
		{os.Interrupt, "json", ExitInterrupted},
	} {
		ctx, cancel := context.WithCancelCause(context.Background())
		io, _, _, errOut := iostreams.Test()
		f := NewFactory(io)
		var once sync.Once
		// The store hangs until the request is cancelled; its first request is the signal.
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			once.Do(func() {
				f.notice(signalName(c.sig) + " received, stopping cleanly (send it again to exit at once)")
				cancel(&signalError{sig: c.sig})
			})
			<-r.Context().Done()
		}))
		code := Run(ctx, f, []string{"ls", "-v", "-o", c.output, "--s3-endpoint", srv.URL, "--s3-region", "us-east-1", "s3://bucket/table"})
		srv.Close()
		cancel(nil)
		if code != c.want {
			t.Errorf("%v, %s: exit %d, want %d; stderr:\n%s", c.sig, c.output, code, c.want, errOut.String())
		}
		if c.output == "json" {
			lines := strings.Split(strings.TrimSpace(errOut.String()), "\n")
			for _, l := range lines {
				var v map[string]any
				if err := json.Unmarshal([]byte(l), &v); err != nil {
					t.Errorf("%v: stderr line is not JSON: %q", c.sig, l)
				}
			}
			if len(lines) < 3 {
				t.Errorf("%v: want a log line, the notice and the error, got:\n%s", c.sig, errOut.String())
			}
		} else if !strings.Contains(errOut.String(), "received, stopping cleanly") {
			t.Errorf("%v: no notice in %q", c.sig, errOut.String())
		}
		// The last line says what stopped and what to do, with no Go error chain.
		how := map[int]string{ExitInterrupted: "interrupted", ExitTerminated: "terminated"}[c.want]
		want := how + ": ls stopped before it finished; it changed nothing: run it again for the whole answer"
		if c.output == "json" {
			want = `"error":"` + want + `"`
		}
		if lines := strings.Split(strings.TrimSpace(errOut.String()), "\n"); !strings.Contains(lines[len(lines)-1], want) ||
			strings.Contains(lines[len(lines)-1], "context canceled") {
			t.Errorf("%v, %s: last line %q, want %q", c.sig, c.output, lines[len(lines)-1], want)
		}
	}
}

// TestStoppedMessage: each command says what running it again does after a signal.
func TestStoppedMessage(t *testing.T) {
	for cmd, want := range map[string]string{
		"reload":     "interrupted: reload stopped before it finished; every statement sent and every copy staged is journaled: run the same command again to continue the run (it loads no file twice)",
		"cleanup":    "interrupted: cleanup stopped before it finished; every delete done is journaled: run the same command again to finish (it re-checks every file)",
		"inspect":    "interrupted: inspect stopped before it finished; it changed nothing: run it again for the whole answer",
		"demo":       "interrupted: demo stopped before it finished; nothing is left running; run the demo again to see it whole",
		"demo serve": "interrupted: demo serve stopped before it finished; it changed nothing: run it again for the whole answer",
	} {
		if got := stoppedMessage(ExitInterrupted, cmd); got != want {
			t.Errorf("%s:\ngot  %s\nwant %s", cmd, got, want)
		}
	}
}
