package databricks

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/databricks/databricks-sdk-go/apierr"
	"github.com/databricks/databricks-sdk-go/service/files"

	"github.com/zbrecover/zbrecover/internal/redact"
	"github.com/zbrecover/zbrecover/storage"
)

// IsVolumePath reports whether s names a Unity Catalog volume path: /Volumes/<catalog>/
// <schema>/<volume>[/…] (or dbfs:/Volumes/…).
func IsVolumePath(s string) bool {
	s = strings.TrimPrefix(s, "dbfs:")
	parts := strings.Split(strings.Trim(s, "/"), "/")
	return strings.HasPrefix(s, "/Volumes/") && len(parts) >= 4 && parts[1] != "" && parts[2] != "" && parts[3] != ""
}

// Volume is a storage.Backend over the Databricks Files API, rooted at a path inside a Unity
// Catalog volume: what the workspace identity may write, and what COPY INTO reads as
// '/Volumes/…'. It writes (create-only or overwrite) and deletes; it has no server-side copy.
type Volume struct {
	api  *files.FilesAPI
	root string // /Volumes/c/s/v/dir, no trailing slash
	host string
}

var (
	_ storage.Backend = (*Volume)(nil)
	_ storage.Putter  = (*Volume)(nil)
)

// Volume returns the backend rooted at the volume path p.
func (c *Client) Volume(p string) (*Volume, error) {
	p = strings.TrimPrefix(p, "dbfs:")
	if !IsVolumePath(p) {
		return nil, fmt.Errorf("%q is not a volume path: want /Volumes/<catalog>/<schema>/<volume>/<dir>", p)
	}
	return &Volume{api: files.NewFiles(c.api), root: strings.TrimSuffix(path.Clean(p), "/"), host: c.cfg.Host}, nil
}

// Location implements storage.Backend: the volume path, as SQL names it.
func (v *Volume) Location() string { return v.root }

func (v *Volume) full(key string) (string, error) {
	if err := storage.CheckKey(key, v.root); err != nil {
		return "", err
	}
	return v.root + "/" + key, nil
}

// fail maps a Files API error: 404 → ErrNotExist, 409 → ErrExist, throttling and 5xx
// retryable; texts redacted.
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
				op, p, v.host, redact.Error(err))
		case ae.StatusCode == http.StatusTooManyRequests || ae.StatusCode >= 500:
			return storage.Retryable(fmt.Errorf("%s %s: %w", op, p, redact.Error(err)))
		}
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s %s: %w", op, p, err)
	}
	return fmt.Errorf("%s %s: %w", op, p, redact.Error(err))
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
		it := v.api.ListDirectoryContents(ctx, files.ListDirectoryContentsRequest{DirectoryPath: dir})
		for it.HasNext(ctx) {
			e, err := it.Next(ctx)
			if err != nil {
				return v.fail("list", dir, err)
			}
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

// Stat implements storage.Backend.
func (v *Volume) Stat(ctx context.Context, key string) (storage.ObjectInfo, error) {
	p, err := v.full(key)
	if err != nil {
		return storage.ObjectInfo{}, err
	}
	m, err := v.api.GetMetadata(ctx, files.GetMetadataRequest{FilePath: p})
	if err != nil {
		return storage.ObjectInfo{}, v.fail("stat", p, err)
	}
	t, _ := http.ParseTime(m.LastModified)
	return storage.ObjectInfo{Key: key, Size: m.ContentLength, ModTime: t.UTC()}, nil
}

// ReadRange implements storage.Backend. The Files API downloads whole files: the bytes
// before off are read and dropped.
func (v *Volume) ReadRange(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	p, err := v.full(key)
	if err != nil {
		return nil, err
	}
	if off < 0 {
		return nil, fmt.Errorf("read %s: negative offset %d", p, off)
	}
	d, err := v.api.Download(ctx, files.DownloadRequest{FilePath: p})
	if err != nil {
		return nil, v.fail("read", p, err)
	}
	if _, err := io.CopyN(io.Discard, d.Contents, off); err != nil && !errors.Is(err, io.EOF) {
		d.Contents.Close()
		return nil, v.fail("read", p, err)
	}
	var r io.Reader = d.Contents
	if n >= 0 {
		r = io.LimitReader(d.Contents, n)
	}
	return struct {
		io.Reader
		io.Closer
	}{r, d.Contents}, nil
}

// Delete implements storage.Backend. The Files API has no conditional delete: a non-zero
// cond is checked against the file's size first (the only version the API reports).
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
	if err := v.api.Delete(ctx, files.DeleteFileRequest{FilePath: p}); err != nil {
		err = v.fail("delete", p, err)
		if errors.Is(err, storage.ErrNotExist) && cond.IsZero() {
			return nil
		}
		return err
	}
	return nil
}

// Put implements storage.Putter through the Files API upload. CreateOnly sends
// overwrite=false, which the API answers with 409 when the file exists.
func (v *Volume) Put(ctx context.Context, key string, r io.Reader, size int64, opts storage.PutOptions) (storage.ObjectInfo, error) {
	p, err := v.full(key)
	if err != nil {
		return storage.ObjectInfo{}, err
	}
	req := files.UploadRequest{FilePath: p, Contents: io.NopCloser(storage.ExactReader(r, size)), Overwrite: !opts.CreateOnly,
		ForceSendFields: []string{"Overwrite"}}
	if err := v.api.Upload(ctx, req); err != nil {
		return storage.ObjectInfo{}, v.fail("write", p, err)
	}
	return v.Stat(ctx, key)
}
