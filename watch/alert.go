package watch

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/zbrecover/zbrecover/internal/jsonout"
	"github.com/zbrecover/zbrecover/internal/redact"
)

// AlertTimeout bounds one run of the alert command.
const AlertTimeout = 30 * time.Second

// CommandAlert returns an alert that runs command with /bin/sh -c, the event as one JSON
// line on its standard input and its kind in ZBRECOVER_EVENT, its table in
// ZBRECOVER_TABLE: a webhook sender, PagerDuty's or Slack's command line. The command has
// AlertTimeout to finish; an exit status other than 0 is an error that says what it printed.
func CommandAlert(command string) func(ctx context.Context, e Event) error {
	return func(ctx context.Context, e Event) error {
		e.SchemaVersion = jsonout.SchemaVersion
		e.Error, e.Reason, e.Holder = redact.String(e.Error), redact.String(e.Reason), redact.String(e.Holder)
		line, err := json.Marshal(e)
		if err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(ctx, AlertTimeout)
		defer cancel()
		c := exec.CommandContext(ctx, "/bin/sh", "-c", command)
		c.Stdin = bytes.NewReader(append(line, '\n'))
		c.Env = append(os.Environ(), "ZBRECOVER_EVENT="+string(e.Event), "ZBRECOVER_TABLE="+e.Table)
		var out bytes.Buffer
		c.Stdout, c.Stderr = &out, &out
		c.WaitDelay = time.Second
		if err := c.Run(); err != nil {
			msg := strings.TrimSpace(out.String())
			if len(msg) > 500 {
				msg = msg[:500] + "…"
			}
			if ctx.Err() != nil {
				return fmt.Errorf("the alert command did not finish within %s: %s", AlertTimeout, redact.String(msg))
			}
			return fmt.Errorf("the alert command failed (%v): %s", err, redact.String(msg))
		}
		return nil
	}
}
