package cmd

import (
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/zbrecover/zbrecover/internal/iostreams"
	"github.com/zbrecover/zbrecover/internal/redact"
)

// logfmtLine is one logfmt line as slog.TextHandler writes it: key=value pairs, a value bare
// or Go-quoted.
var logfmtLine = regexp.MustCompile(`^(?:[A-Za-z0-9_.-]+=(?:"(?:[^"\\]|\\.)*"|[^ "=]*)(?: |$))+$`)

// TestVerboseLinesCarryTimestamps: at -v every log line is logfmt starting with its UTC time;
// without -v the warnings that are shown carry none.
func TestVerboseLinesCarryTimestamps(t *testing.T) {
	for _, v := range []int{0, 1} {
		io, _, _, errOut := iostreams.Test()
		f := NewFactory(io)
		f.Global.Verbose = v
		f.Logger.Warn("storage retry", "op", "read")
		stamped := regexp.MustCompile(`^time=\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z level=warn msg="storage retry" op=read\n$`).MatchString(errOut.String())
		bare := errOut.String() == "level=warn msg=\"storage retry\" op=read\n"
		if stamped != (v == 1) || bare != (v == 0) {
			t.Errorf("-v=%d: %q", v, errOut.String())
		}
	}
}

// TestLogLinesAreLogfmtAndJSON: text log lines are logfmt (values with spaces, quotes or "="
// quoted, so that a line splits back into its attributes), JSON log lines are objects with the
// time, the level, the message and every attribute as a string; in both, no secret is printed,
// whether in the message, an attribute, an error or a group.
func TestLogLinesAreLogfmtAndJSON(t *testing.T) {
	const registered = "registered-secret-6789"
	redact.Register(registered)
	log := func(f *Factory) {
		f.Logger.Info("opened s3://b/k?X-Amz-Signature=abcdef0123456789 as "+registered, "url", "https://h/x?sig=s3cr3tsig&se=1",
			"error", errors.New(`bad "token=tok123456789" for `+registered), "wait", 1500*time.Millisecond, "files", 7)
		f.Logger.WithGroup("req").Debug("request", "header", "Authorization: Bearer abc.def.ghi", "n", 2)
	}
	secrets := []string{registered, "abcdef0123456789", "s3cr3tsig", "tok123456789", "abc.def.ghi"}

	io, _, _, errOut := iostreams.Test()
	f := NewFactory(io)
	f.Global.Verbose = 2
	log(f)
	text := errOut.String()
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2:\n%s", len(lines), text)
	}
	for _, l := range lines {
		if !logfmtLine.MatchString(l) || !strings.HasPrefix(l, "time=") {
			t.Errorf("not a timestamped logfmt line: %q", l)
		}
	}
	for _, want := range []string{`level=info msg="opened s3://b/k?X-Amz-Signature=REDACTED as REDACTED"`, `wait=1.5s files=7`,
		`error="bad \"token=REDACTED\" for REDACTED"`, `level=debug msg=request req.header="Authorization: REDACTED" req.n=2`} {
		if !strings.Contains(text, want) {
			t.Errorf("text log lacks %s:\n%s", want, text)
		}
	}

	io, _, _, errOut = iostreams.Test()
	f = NewFactory(io)
	f.Global.Verbose = 2
	f.setJSONStderr(true)
	log(f)
	js := errOut.String()
	for _, l := range strings.Split(strings.TrimSuffix(js, "\n"), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("not JSON: %q", l)
		}
		if ts, _ := m["time"].(string); ts == "" || !strings.HasSuffix(ts, "Z") {
			t.Errorf("JSON line without a UTC time: %q", l)
		} else if _, err := time.Parse(time.RFC3339Nano, ts); err != nil {
			t.Errorf("time %q: %v", ts, err)
		}
		if m["level"] != "info" && m["level"] != "debug" {
			t.Errorf("level %v", m["level"])
		}
		for k, v := range m {
			if _, ok := v.(string); !ok && k != "req" {
				t.Errorf("member %s is %T, want a string: %q", k, v, l)
			}
		}
	}
	if !strings.Contains(js, `"wait":"1.5s","files":"7"`) || !strings.Contains(js, `"req":{"header":"Authorization: REDACTED","n":"2"}`) {
		t.Errorf("JSON log lines:\n%s", js)
	}
	for _, s := range secrets {
		if strings.Contains(text, s) || strings.Contains(js, s) {
			t.Errorf("secret %q printed:\n%s\n%s", s, text, js)
		}
	}
}
