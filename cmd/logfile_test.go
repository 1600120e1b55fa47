package cmd

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/zbrecover/zbrecover/internal/iostreams"
)

// TestLogFileKeepsEveryLine: --log-file appends the -vv lines, timestamped and redacted as
// stderr's, whatever -v says; stderr stays quiet without -v, and under -o json stderr keeps
// its JSON lines while the file keeps text. A second run appends.
func TestLogFileKeepsEveryLine(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.parquet"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(t.TempDir(), "run.log")
	const secret = "hunter2-not-for-logs"
	run := func(args ...string) (int, string) {
		io, _, _, errOut := iostreams.Test()
		code := Run(context.Background(), NewFactory(io), args)
		return code, errOut.String()
	}
	code, errOut := run("--log-file", logPath, "--s3-endpoint", "http://ops:"+secret+"@127.0.0.1:9", "ls", dir)
	if code != 0 || strings.Contains(errOut, "level=info") || strings.Contains(errOut, "level=debug") {
		t.Fatalf("ls: exit %d, stderr %q", code, errOut)
	}
	code, errOut = run("--log-file", logPath, "-o", "json", "-v", "ls", filepath.Join(dir, "missing"))
	if code == 0 {
		t.Fatalf("ls of a missing folder exited 0")
	}
	for _, l := range strings.Split(strings.TrimSpace(errOut), "\n") {
		if json.Unmarshal([]byte(l), new(map[string]any)) != nil {
			t.Errorf("-o json: stderr line is not JSON: %q", l)
		}
	}
	data, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	if strings.Contains(text, secret) {
		t.Fatalf("the log file holds the secret:\n%s", text)
	}
	stamp := regexp.MustCompile(`^time=\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z level=(debug|info|warn|error|notice) msg=`)
	for _, l := range strings.Split(strings.TrimSpace(text), "\n") {
		if !stamp.MatchString(l) || !logfmtLine.MatchString(l) {
			t.Errorf("log line not logfmt with its time and level: %q", l)
		}
	}
	for _, want := range []string{"level=debug msg=start command=", "ops:REDACTED@", `level=info msg="storage opened"`, `level=info msg="exit status 0"`,
		"level=error msg=", `level=info msg="exit status 1"`} {
		if !strings.Contains(text, want) {
			t.Errorf("log file lacks %q:\n%s", want, text)
		}
	}
	if fi, err := os.Stat(logPath); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("log file mode %v, %v", fi.Mode(), err)
	}
	if code, errOut := run("--log-file", filepath.Join(dir, "no", "such", "dir", "x.log"), "version"); code != ExitUsage && code != ExitFailure || !strings.Contains(errOut, "--log-file") {
		t.Errorf("unwritable log file: exit %d, %q", code, errOut)
	}
}
