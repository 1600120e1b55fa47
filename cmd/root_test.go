package cmd

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestPanicIsContainedAndRedacted: a panic inside a command (a library bug, a corrupt answer) is
// reported as an internal error with exit 1, and its message and stack go through the same
// redaction as every other error, in text and in JSON.
func TestPanicIsContainedAndRedacted(t *testing.T) {
	const token = "dapi0123456789abcdef0123456789abcdef"
	saved := extraCommands
	t.Cleanup(func() { extraCommands = saved })
	extraCommands = append(append([]func(*Factory) *cobra.Command{}, saved...), func(*Factory) *cobra.Command {
		return &cobra.Command{Use: "boom", RunE: func(*cobra.Command, []string) error {
			panic("request with Authorization: Bearer " + token + " failed")
		}}
	})

	code, out, errOut := run(t, "boom")
	if code != ExitFailure || out != "" {
		t.Errorf("exit %d, stdout %q; want exit 1 and no output", code, out)
	}
	if !strings.Contains(errOut, "internal error") || !strings.Contains(errOut, "failed") || !strings.Contains(errOut, "goroutine") {
		t.Errorf("stderr does not report the panic with its stack:\n%s", errOut)
	}
	if strings.Contains(errOut, token) {
		t.Errorf("the panic printed a token:\n%s", errOut)
	}

	code, _, errOut = run(t, "boom", "-o", "json")
	var e struct {
		Error string `json:"error"`
		Code  int    `json:"code"`
	}
	if err := json.Unmarshal([]byte(errOut), &e); err != nil || code != ExitFailure || e.Code != ExitFailure ||
		!strings.Contains(e.Error, "internal error") || strings.Contains(errOut, token) {
		t.Errorf("json: exit %d, stderr %q (%v)", code, errOut, err)
	}
}
