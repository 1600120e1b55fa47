package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/zbrecover/zbrecover/inspect"
	"github.com/zbrecover/zbrecover/internal/textfmt"
	"github.com/zbrecover/zbrecover/internal/textsafe"
	"github.com/zbrecover/zbrecover/storage"
)

// LsOptions are the inputs of `zbrecover ls`.
type LsOptions struct {
	F      *Factory
	URL    string
	Prefix string
	Limit  int
}

// LsObject is one listed object in JSON output.
type LsObject struct {
	Key string `json:"key"`
	// KeyQuoted is the key Go-quoted, set only when it is not valid UTF-8.
	KeyQuoted  string    `json:"key_quoted,omitempty"`
	Size       int64     `json:"size"`
	Modified   time.Time `json:"modified"`
	ETag       string    `json:"etag,omitempty"`
	Generation int64     `json:"generation,omitempty"`
}

// LsReport is the JSON output of `zbrecover ls`.
type LsReport struct {
	Location  string     `json:"location"`
	Objects   []LsObject `json:"objects"`
	Count     int        `json:"count"`
	Bytes     int64      `json:"bytes"`
	Truncated bool       `json:"truncated"`
}

// NewCmdLs returns `zbrecover ls`. runF replaces the run function in tests.
func NewCmdLs(f *Factory, runF func(context.Context, *LsOptions) error) *cobra.Command {
	o := &LsOptions{F: f}
	c := &cobra.Command{
		Use:   "ls URL",
		Short: "List the objects under a storage URL",
		Long: `Ls lists the objects under a storage URL (key, size, modification time, ETag or generation)
with the credentials at hand: the quick check that zbrecover reaches a store, before inspect.
On a terminal it prints an aligned table; piped, tab-separated lines. It changes nothing.

URL is s3://bucket/prefix, gs://bucket/prefix, abfss://container@account.dfs.core.windows.net/
path, wasbs://…, /Volumes/catalog/schema/volume/path, file:///path or a local path.

` + exitHelp(),
		Example: `  # The fallback folder of a table root on S3
  $ zbrecover ls s3://lake/tables/orders/_zerobus/table_rejected_parquets/
  # A Unity Catalog volume, through the workspace's Files API
  $ zbrecover ls /Volumes/main/sales/staging/
  # An S3-compatible store, as JSON
  $ zbrecover ls s3://lake/orders/ --s3-endpoint http://localhost:9000 -o json`,
		Args: exactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			o.URL = args[0]
			if o.Limit < 0 {
				return FlagErrorf("--limit must be 0 (no limit) or more, not %d", o.Limit)
			}
			if runF != nil {
				return runF(c.Context(), o)
			}
			return lsRun(c.Context(), o)
		},
	}
	c.Flags().StringVar(&o.Prefix, "prefix", "", "list only keys starting with this prefix (relative to URL)")
	c.Flags().IntVar(&o.Limit, "limit", 0, "stop after this many objects (0: no limit)")
	return c
}

var errLimit = errors.New("limit reached")

func lsRun(ctx context.Context, o *LsOptions) error {
	f := o.F
	b, err := f.OpenStorage(ctx, o.URL)
	if err != nil {
		return err
	}
	rep := LsReport{Location: b.Location(), Objects: []LsObject{}}
	// Text: an aligned table on a terminal; piped, tab-separated lines written as they come.
	var w io.Writer
	var tw *tabwriter.Writer
	if !f.Global.JSON() {
		w = f.IO.Out
		if f.IO.IsStdoutTTY() {
			tw = tabwriter.NewWriter(f.IO.Out, 0, 4, 2, ' ', 0)
			w = tw
			fmt.Fprintln(tw, "KEY\tSIZE\tMODIFIED\tVERSION")
		}
	}
	err = b.List(ctx, o.Prefix, func(oi storage.ObjectInfo) error {
		if o.Limit > 0 && rep.Count >= o.Limit {
			rep.Truncated = true
			return errLimit
		}
		rep.Count++
		rep.Bytes += oi.Size
		if w != nil {
			ver := oi.ETag
			if ver == "" {
				ver = "-"
			}
			if oi.Generation != 0 {
				ver = strconv.FormatInt(oi.Generation, 10)
			}
			_, err := fmt.Fprintf(w, "%s\t%d\t%s\t%s\n", textKey(oi.Key), oi.Size, oi.ModTime.UTC().Format(time.RFC3339), ver)
			return err
		}
		rep.Objects = append(rep.Objects, LsObject{Key: oi.Key, KeyQuoted: inspect.QuoteInvalidKey(oi.Key), Size: oi.Size, Modified: oi.ModTime.UTC(),
			ETag: oi.ETag, Generation: oi.Generation})
		return nil
	})
	if err != nil && !errors.Is(err, errLimit) {
		return err
	}
	if w != nil {
		if tw != nil {
			if err := tw.Flush(); err != nil {
				return err
			}
		}
		fmt.Fprintf(f.IO.ErrOut, "%s, %s under %s%s\n", textfmt.Plural(rep.Count, "object"), textfmt.Bytes(rep.Bytes), rep.Location,
			map[bool]string{true: " (stopped at --limit)"}[rep.Truncated])
		return nil
	}
	return printJSON(f, rep)
}

// textKey returns key as text output prints it: as it is, or Go-quoted when it holds a control
// or format character or invalid UTF-8 (see textsafe.Quote).
func textKey(key string) string { return textsafe.Quote(key) }
