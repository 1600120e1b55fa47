package databricks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/databricks/databricks-sdk-go/apierr"

	"github.com/zbrecover/zbrecover/internal/redact"
	"github.com/zbrecover/zbrecover/storage"
)

// IsVolumePath reports whether s names a Unity Catalog volume path: /Volumes/<catalog>/
// <schema>/<volume>[/…] (or dbfs:/Volumes/…), as storage.Parse reads it.
func IsVolumePath(s string) bool {
	loc, err := storage.Parse(s)
	return err == nil && loc.Scheme == storage.SchemeVolume
}

// VolumeFactory returns the storage factory of the volume scheme (storage.SchemeVolume): it
// opens a Volume with the workspace client client returns, so that a registry holding it
// opens /Volumes/… paths like any other place. client is called at each Open; a nil client
// makes every Open fail with ErrConfig (a run without a workspace).
func VolumeFactory(client func(context.Context) (*Client, error)) storage.Factory {
	return storage.NewFactory(storage.SchemeVolume, func(ctx context.Context, loc storage.Location, _ storage.Config) (*Volume, error) {
		if client == nil {
			return nil, fmt.Errorf("%w: the volume %s is reached through a Databricks workspace, and this run has none", ErrConfig, loc)
		}
		c, err := client(ctx)
		if err != nil {
			return nil, err
		}
		return c.Volume(loc.URL())
	})
}

// Volume is a storage.Backend over the Databricks Files API, rooted at a path inside a Unity
// Catalog volume: what the workspace identity may write, and what COPY INTO reads as
// '/Volumes/…'. It writes (create-only or overwrite) and deletes; it has no server-side copy.
//
// Every request goes through the client's Files API path (filesClient): under one adaptive
// limit of requests in flight shared by all the client's volumes, tried again on throttling
// (429, 503, honouring Retry-After), 5xx answers and transient network errors, each retry
// logged at -v. A Volume needs no storage decorator for that; wrapping it in WithRetry adds a
// second layer of retries, and holding slots of the client's limit around its calls is not
// possible (the limit is the client's own).
type Volume struct {
	fc   *filesClient
	root string // /Volumes/c/s/v/dir, no trailing slash
	host string
}

var (
	_ storage.Backend = (*Volume)(nil)
	_ storage.Putter  = (*Volume)(nil)
)

// Volume returns the backend rooted at the volume path p (as storage.Parse reads it: the
// names of the catalog, schema and volume in lower case, the path cleaned).
func (c *Client) Volume(p string) (*Volume, error) {
	loc, err := storage.Parse(p)
	if err != nil || loc.Scheme != storage.SchemeVolume {
		return nil, fmt.Errorf("%q is not a volume path: want /Volumes/<catalog>/<schema>/<volume>/<dir>", p)
	}
	return &Volume{fc: c.files, root: loc.URL(), host: c.cfg.Host}, nil
}

// FilesStats returns the state of the client's Files API limit: its current and highest
// limit, the requests in flight, and the throttled answers seen.
func (c *Client) FilesStats() storage.AdaptiveStats { return c.files.lim.Stats() }

// Location implements storage.Backend: the volume path, as SQL names it.
func (v *Volume) Location() string { return v.root }

func (v *Volume) full(key string) (string, error) {
	if err := storage.CheckKey(key, v.root); err != nil {
		return "", err
	}
	return v.root + "/" + key, nil
}

// fail maps a Files API error: 404 → ErrNotExist, 409 → ErrExist, throttling and 5xx
// retryable; texts redacted. The error already names the request and the path.
func (v *Volume) fail(op, p string, err error) error {
	var ae *apierr.APIError
	if errors.As(err, &ae) {
		switch {
		case ae.StatusCode == http.StatusNotFound:
			return fmt.Errorf("%s %s: %w", op, p, storage.ErrNotExist)
		case ae.StatusCode == http.StatusConflict:
			return fmt.Errorf("%s %s: %w", op, p, storage.ErrExist)
		case ae.StatusCode == http.StatusForbidden:
			return fmt.Errorf("%s %s on %s: the workspace identity may not do this (it needs READ VOLUME and WRITE VOLUME on the volume): %w",
				op, p, v.host, redact.Error(unwrapStatus(err)))
		}
	}
	return redact.Error(err)
}

// unwrapStatus returns the SDK error inside err, for a message that names the request once.
func unwrapStatus(err error) error {
	var ae *apierr.APIError
	if errors.As(err, &ae) {
		return ae
	}
	return err
}

// listEntry is one entry of a directory listing.
type listEntry struct {
	Path         string `json:"path"`
	Name         string `json:"name"`
	IsDirectory  bool   `json:"is_directory"`
	FileSize     int64  `json:"file_size"`
	LastModified int64  `json:"last_modified"`
}

// listDir returns the entries of the directory dir, page after page.
func (v *Volume) listDir(ctx context.Context, dir string) ([]listEntry, error) {
	var all []listEntry
	token := ""
	for {
		q := url.Values{}
		if token != "" {
			q.Set("page_token", token)
		}
		resp, err := v.fc.do(ctx, filesRequest{op: "list", method: http.MethodGet, path: dir, dir: true, query: q,
			header: http.Header{"Accept": {"application/json"}}})
		if err != nil {
			return nil, v.fail("list", dir, err)
		}
		var page struct {
			Contents      []listEntry `json:"contents"`
			NextPageToken string      `json:"next_page_token"`
		}
		err = json.NewDecoder(io.LimitReader(resp.Body, 256<<20)).Decode(&page)
		discard(resp)
		if err != nil {
			return nil, fmt.Errorf("list %s: the answer is not a directory listing: %w", dir, err)
		}
		all = append(all, page.Contents...)
		if page.NextPageToken == "" {
			return all, nil
		}
		if page.NextPageToken == token {
			return nil, fmt.Errorf("list %s: the workspace returned the same page token twice", dir)
		}
		token = page.NextPageToken
	}
}

// List implements storage.Backend: the files under prefix, recursively, in key order.
func (v *Volume) List(ctx context.Context, prefix string, fn func(storage.ObjectInfo) error) error {
	var all []storage.ObjectInfo
	// walk lists the folder rel ("" or "a/b/"), recursing into folders that may hold keys
	// with the prefix.
	var walk func(rel string) error
	walk = func(rel string) error {
		dir := v.root + "/" + strings.TrimSuffix(rel, "/")
		if rel == "" {
			dir = v.root
		}
		entries, err := v.listDir(ctx, dir)
		if err != nil {
			return err
		}
		for _, e := range entries {
			name := e.Name
			if name == "" {
				name = path.Base(strings.TrimSuffix(e.Path, "/"))
			}
			key := rel + name
			if e.IsDirectory {
				if strings.HasPrefix(key+"/", prefix) || strings.HasPrefix(prefix, key+"/") {
					if err := walk(key + "/"); err != nil {
						return err
					}
				}
				continue
			}
			if strings.HasPrefix(key, prefix) {
				all = append(all, storage.ObjectInfo{Key: key, Size: e.FileSize, ModTime: time.UnixMilli(e.LastModified).UTC()})
			}
		}
		return nil
	}
	if err := walk(""); err != nil {
		if errors.Is(err, storage.ErrNotExist) {
			return nil // an empty or missing folder lists nothing
		}
		return err
	}
	sort.Slice(all, func(i, j int) bool { return all[i].Key < all[j].Key })
	for _, o := range all {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(o); err != nil {
			return err
		}
	}
	return nil
}

// Stat implements storage.Backend with one HEAD request.
func (v *Volume) Stat(ctx context.Context, key string) (storage.ObjectInfo, error) {
	p, err := v.full(key)
	if err != nil {
		return storage.ObjectInfo{}, err
	}
	resp, err := v.fc.do(ctx, filesRequest{op: "stat", method: http.MethodHead, path: p})
	if err != nil {
		return storage.ObjectInfo{}, v.fail("stat", p, err)
	}
	discard(resp)
	size, err := strconv.ParseInt(resp.Header.Get("Content-Length"), 10, 64)
	if err != nil {
		return storage.ObjectInfo{}, fmt.Errorf("stat %s: the answer has no Content-Length", p)
	}
	t, _ := http.ParseTime(resp.Header.Get("Last-Modified"))
	return storage.ObjectInfo{Key: key, Size: size, ModTime: t.UTC()}, nil
}

// ReadRange implements storage.Backend with one GET carrying a Range header (the Files API
// answers 206 with the range); a workspace that ignores the header answers 200 with the whole
// file, whose bytes before off are then read and dropped. n == 0 reads nothing and sends no
// request. A download whose stream breaks resumes where it stopped (a new ranged GET with
// If-Unmodified-Since, so that it cannot continue with another version of the file), as
// often as the retry policy allows.
func (v *Volume) ReadRange(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	p, err := v.full(key)
	if err != nil {
		return nil, err
	}
	if off < 0 {
		return nil, fmt.Errorf("read %s: negative offset %d", p, off)
	}
	if n == 0 {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		return io.NopCloser(strings.NewReader("")), nil
	}
	n = storage.RangeLength(off, n)
	d := &download{v: v, ctx: ctx, path: p, off: off, n: n}
	if err := d.open(); err != nil {
		return nil, err
	}
	return d, nil
}

// download is the body of a ReadRange: what remains is n bytes (n < 0: to the end) at off.
type download struct {
	v       *Volume
	ctx     context.Context
	path    string
	off, n  int64
	since   string // Last-Modified of the first answer
	body    io.ReadCloser
	resumes int
	empty   bool
}

// open sends the GET for what remains.
func (d *download) open() error {
	h := http.Header{}
	if d.off > 0 || d.n > 0 {
		rng := fmt.Sprintf("bytes=%d-", d.off)
		if d.n > 0 {
			rng = fmt.Sprintf("bytes=%d-%d", d.off, d.off+d.n-1)
		}
		h.Set("Range", rng)
	}
	if d.since != "" {
		h.Set("If-Unmodified-Since", d.since)
	}
	resp, err := d.v.fc.do(d.ctx, filesRequest{op: "read", method: http.MethodGet, path: d.path, header: h})
	if err != nil {
		var se *statusError
		if errors.As(err, &se) && se.code == http.StatusRequestedRangeNotSatisfiable {
			d.empty = true // the file exists and the range starts at or past its end
			return nil
		}
		if errors.As(err, &se) && se.code == http.StatusPreconditionFailed && d.since != "" {
			return fmt.Errorf("read %s: the file changed while it was read: %w", d.path, storage.ErrPreconditionFailed)
		}
		return d.v.fail("read", d.path, err)
	}
	if d.since == "" {
		d.since = resp.Header.Get("Last-Modified")
	}
	var body io.Reader = resp.Body
	if resp.StatusCode != http.StatusPartialContent && d.off > 0 {
		// The whole file: drop the bytes before off.
		if _, err := io.CopyN(io.Discard, resp.Body, d.off); err != nil {
			resp.Body.Close()
			if errors.Is(err, io.EOF) {
				d.empty = true
				return nil
			}
			return fmt.Errorf("read %s: %w", d.path, err)
		}
	}
	if d.n >= 0 {
		body = io.LimitReader(body, d.n)
	}
	d.body = struct {
		io.Reader
		io.Closer
	}{body, resp.Body}
	return nil
}

func (d *download) Read(p []byte) (int, error) {
	for {
		if d.empty || d.n == 0 {
			return 0, io.EOF
		}
		k, err := d.body.Read(p)
		d.off += int64(k)
		if d.n > 0 {
			d.n -= int64(k)
		}
		switch {
		case err == nil || err == io.EOF:
			return k, err
		case k > 0:
			return k, nil // the error shows again on the next Read
		}
		if !(storage.IsRetryable(err) || storage.IsTransientNetwork(err)) || d.resumes+1 >= d.v.fc.policy.MaxAttempts || d.ctx.Err() != nil {
			return 0, fmt.Errorf("read %s: %w", d.path, err)
		}
		d.resumes++
		wait := d.v.fc.policy.Backoff(d.resumes)
		d.v.fc.policy.OnRetry("read", d.resumes, fmt.Errorf("read %s: %w", d.path, err), wait)
		if serr := d.v.fc.policy.Sleep(d.ctx, wait); serr != nil {
			return 0, serr
		}
		d.body.Close()
		if oerr := d.open(); oerr != nil {
			d.body = io.NopCloser(errorReader{oerr})
			return 0, oerr
		}
	}
}

func (d *download) Close() error {
	if d.body == nil {
		return nil
	}
	return d.body.Close()
}

type errorReader struct{ err error }

func (e errorReader) Read([]byte) (int, error) { return 0, e.err }

// Delete implements storage.Backend with one DELETE request. The Files API has no
// conditional delete: a non-zero cond is checked against the file's size first (one HEAD;
// size is the only version the API reports).
func (v *Volume) Delete(ctx context.Context, key string, cond storage.Precondition) error {
	p, err := v.full(key)
	if err != nil {
		return err
	}
	if !cond.IsZero() {
		o, err := v.Stat(ctx, key)
		if err != nil {
			return err
		}
		if cond.Size != 0 && o.Size != cond.Size {
			return fmt.Errorf("delete %s: %w", p, storage.ErrPreconditionFailed)
		}
	}
	resp, err := v.fc.do(ctx, filesRequest{op: "delete", method: http.MethodDelete, path: p})
	if err != nil {
		err = v.fail("delete", p, err)
		if errors.Is(err, storage.ErrNotExist) && cond.IsZero() {
			return nil
		}
		return err
	}
	discard(resp)
	return nil
}

// Put implements storage.Putter with one upload (PUT) of exactly size bytes; CreateOnly sends
// overwrite=false, which the API answers with 409 when the file exists (storage.ErrExist).
// The data is sent again from its start when the upload is tried again: r itself when it is
// an io.ReadSeeker (the bytes from its position to its end must be size), else a
// storage.Spool of it (memory up to storage.SpoolMemoryPerObject, else a temporary file).
// The returned info holds the key and the size sent: the Files API answers an upload with
// no metadata, and Put sends no second request to ask.
//
// A create-only upload tried again after a try whose answer was lost can find the file its
// own earlier try wrote; the ErrExist then says that an earlier try was made.
func (v *Volume) Put(ctx context.Context, key string, r io.Reader, size int64, opts storage.PutOptions) (storage.ObjectInfo, error) {
	p, err := v.full(key)
	if err != nil {
		return storage.ObjectInfo{}, err
	}
	if size < 0 {
		return storage.ObjectInfo{}, fmt.Errorf("write %s: negative size %d", p, size)
	}
	body, ok := r.(io.ReadSeeker)
	if ok {
		body, err = section(body, size)
		if err != nil {
			return storage.ObjectInfo{}, fmt.Errorf("write %s: %w", p, err)
		}
	} else {
		sp, err := storage.Spool(ctx, r, size)
		if err != nil {
			return storage.ObjectInfo{}, fmt.Errorf("write %s: %w", p, err)
		}
		defer sp.Close()
		body = sp
	}
	q := url.Values{"overwrite": {strconv.FormatBool(!opts.CreateOnly)}}
	tries := 0
	req := filesRequest{op: "write", method: http.MethodPut, path: p, query: q, body: &countingSeeker{ReadSeeker: body, rewinds: &tries}, size: size}
	resp, err := v.fc.do(ctx, req)
	if err != nil {
		err = v.fail("write", p, err)
		if tries > 1 && opts.CreateOnly && errors.Is(err, storage.ErrExist) {
			err = fmt.Errorf("%w (after %d tries: an earlier try whose answer was lost may have written it)", err, tries)
		}
		return storage.ObjectInfo{}, err
	}
	discard(resp)
	return storage.ObjectInfo{Key: key, Size: size}, nil
}

// section returns the size bytes of rs from its position, checking that rs holds exactly that
// many, as a reader whose start is that position.
func section(rs io.ReadSeeker, size int64) (io.ReadSeeker, error) {
	cur, err := rs.Seek(0, io.SeekCurrent)
	if err != nil {
		return nil, err
	}
	end, err := rs.Seek(0, io.SeekEnd)
	if err != nil {
		return nil, err
	}
	if end-cur != size {
		return nil, fmt.Errorf("the data holds %d bytes, not the %d announced", end-cur, size)
	}
	if ra, ok := rs.(io.ReaderAt); ok {
		return io.NewSectionReader(ra, cur, size), nil
	}
	if cur != 0 {
		return nil, fmt.Errorf("the data starts at offset %d of a reader that cannot read at an offset", cur)
	}
	_, err = rs.Seek(0, io.SeekStart)
	return rs, err
}

// countingSeeker counts the rewinds to the start, that is the tries of the upload.
type countingSeeker struct {
	io.ReadSeeker
	rewinds *int
}

func (c *countingSeeker) Seek(off int64, whence int) (int64, error) {
	if off == 0 && whence == io.SeekStart {
		*c.rewinds++
	}
	return c.ReadSeeker.Seek(off, whence)
}

// StageToSuggestion is the --stage-to path suggested when Unity Catalog refuses the fallback
// folder: a directory of a volume (to be named) in the table's schema.
func StageToSuggestion(n TableName) string {
	return fmt.Sprintf("/Volumes/%s/%s/<volume>/zbrecover-%s", n.Catalog, n.Schema, n.Table)
}
