// Package local is the storage backend for the local file system (file:// URLs and plain paths).
package local

import (
	"context"
	"crypto/md5"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/zbrecover/zbrecover/storage"
)

// NewFactory returns the factory for the "file" scheme. The directory need not exist: listing
// a missing directory yields nothing, as listing an empty prefix on an object store does.
func NewFactory() storage.Factory {
	return storage.NewFactory("file", func(_ context.Context, loc storage.Location, _ storage.Config) (*Backend, error) {
		return New(loc.Path), nil
	})
}

// Backend is a directory tree seen as an object store.
type Backend struct {
	root string
}

var (
	_ storage.Backend = (*Backend)(nil)
	_ storage.Putter  = (*Backend)(nil)
	_ storage.Copier  = (*Backend)(nil)
)

// tempPrefix starts the names of the files a Put writes before they take the key's name. No
// key's last segment may start with it, and List never shows such files.
const tempPrefix = ".zbrecover-put-"

// New returns a backend rooted at dir.
func New(dir string) *Backend { return &Backend{root: filepath.Clean(dir)} }

// Location implements storage.Backend.
func (b *Backend) Location() string { return "file://" + filepath.ToSlash(b.root) }

// path maps a key to a file path, refusing keys that would escape the root.
func (b *Backend) path(key string) (string, error) {
	if key == "" || strings.HasPrefix(key, "/") || strings.Contains(key, "\x00") {
		return "", fmt.Errorf("invalid key %q", key)
	}
	for _, part := range strings.Split(key, "/") {
		if part == ".." || part == "." || part == "" {
			return "", fmt.Errorf("invalid key %q", key)
		}
	}
	if strings.HasPrefix(key[strings.LastIndex(key, "/")+1:], tempPrefix) {
		return "", fmt.Errorf("invalid key %q: names starting with %q are the backend's temporary files", key, tempPrefix)
	}
	return filepath.Join(b.root, filepath.FromSlash(key)), nil
}

func info(key string, fi fs.FileInfo) storage.ObjectInfo {
	return storage.ObjectInfo{Key: key, Size: fi.Size(), ModTime: fi.ModTime().UTC()}
}

// List implements storage.Backend. Keys come in lexical order of the whole key, as object
// stores list them ("a.txt" before "a/b"). Regular files are objects; symbolic links (to files
// or folders) and special files (FIFOs, devices, sockets) are listed with ObjectInfo.Special
// set, never followed or opened. The root may be a symbolic link to a directory.
func (b *Backend) List(ctx context.Context, prefix string, fn func(storage.ObjectInfo) error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("list %s: %w", b.Location(), err)
	}
	// Start in the deepest directory the prefix names. A key never has an empty, "." or ".."
	// segment (path refuses them), so a prefix whose folders have one matches nothing; this
	// also keeps the walk inside the root.
	dir, rel := b.root, ""
	if i := strings.LastIndex(prefix, "/"); i >= 0 {
		rel = prefix[:i+1]
		for _, part := range strings.Split(prefix[:i], "/") {
			if part == "" || part == "." || part == ".." || strings.Contains(part, "\x00") {
				return nil
			}
		}
		dir = filepath.Join(b.root, filepath.FromSlash(prefix[:i]))
		// Never list through a link out of the root.
		if _, err := b.lstat(prefix[:i], dir); err != nil {
			if errors.Is(err, storage.ErrNotExist) {
				return nil
			}
			return fmt.Errorf("list %s: %w", b.Location(), err)
		}
	}
	if err := b.walk(ctx, dir, rel, prefix, fn); err != nil {
		return fmt.Errorf("list %s: %w", b.Location(), err)
	}
	return nil
}

// walk lists the directory dir, whose key prefix is rel ("" or ending in "/"), calling fn for
// each regular file whose key starts with prefix, in key order, descending only into the
// folders that can hold such keys.
func (b *Backend) walk(ctx context.Context, dir, rel, prefix string, fn func(storage.ObjectInfo) error) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		if notExist(err) {
			return nil // the folder is not there (or went away): no keys under it
		}
		return err
	}
	// A folder's keys sort as its name followed by "/".
	sortKey := func(e fs.DirEntry) string {
		if e.IsDir() {
			return e.Name() + "/"
		}
		return e.Name()
	}
	slices.SortFunc(entries, func(x, y fs.DirEntry) int { return strings.Compare(sortKey(x), sortKey(y)) })
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return err
		}
		key := rel + e.Name()
		if e.IsDir() {
			sub := key + "/"
			if strings.HasPrefix(sub, prefix) || strings.HasPrefix(prefix, sub) {
				if err := b.walk(ctx, filepath.Join(dir, e.Name()), sub, prefix, fn); err != nil {
					return err
				}
			}
			continue
		}
		if !strings.HasPrefix(key, prefix) || strings.HasPrefix(e.Name(), tempPrefix) {
			continue
		}
		fi, err := e.Info() // Lstat: a link is reported as a link
		if err != nil {
			if notExist(err) {
				continue
			}
			return err
		}
		oi := info(key, fi)
		if !fi.Mode().IsRegular() {
			oi.Special = special(fi.Mode())
		}
		if err := fn(oi); err != nil {
			return err
		}
	}
	return nil
}

// Stat implements storage.Backend.
func (b *Backend) Stat(ctx context.Context, key string) (storage.ObjectInfo, error) {
	if err := ctx.Err(); err != nil {
		return storage.ObjectInfo{}, err
	}
	p, err := b.path(key)
	if err != nil {
		return storage.ObjectInfo{}, err
	}
	fi, err := b.lstat(key, p)
	if err != nil {
		return storage.ObjectInfo{}, err
	}
	if fi.IsDir() {
		return storage.ObjectInfo{}, fmt.Errorf("stat %s: is a directory: %w", key, storage.ErrNotExist)
	}
	return info(key, fi), nil
}

type sectionCloser struct {
	io.Reader
	f *os.File
}

func (s sectionCloser) Close() error { return s.f.Close() }

// ReadRange implements storage.Backend.
func (b *Backend) ReadRange(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if off < 0 {
		return nil, fmt.Errorf("read %s: negative offset %d", key, off)
	}
	f, fi, err := b.open("read", key)
	if err != nil {
		return nil, err
	}
	if n < 0 {
		n = max(fi.Size()-off, 0)
	}
	return sectionCloser{Reader: io.NewSectionReader(f, off, n), f: f}, nil
}

// open opens key's regular file for reading after lstat's checks, and refuses a file that was
// replaced (by a link, say) between the check and the open. op names the request in errors.
func (b *Backend) open(op, key string) (*os.File, fs.FileInfo, error) {
	p, err := b.path(key)
	if err != nil {
		return nil, nil, err
	}
	lfi, err := b.lstat(key, p)
	if err != nil {
		return nil, nil, err
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, nil, translate(op, key, err)
	}
	fi, err := f.Stat()
	switch {
	case err != nil:
	case fi.IsDir():
		err = fmt.Errorf("is a directory: %w", storage.ErrNotExist)
	case !os.SameFile(lfi, fi):
		err = errors.New("the file changed while it was opened; not read")
	}
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("%s %s: %w", op, key, err)
	}
	return f, fi, nil
}

// Delete implements storage.Backend. Without ETags, the precondition compares size and
// modification time. A folder is not an object: Delete leaves it (nil, or ErrNotExist with a
// precondition). Every element of the key's path below the root is checked without following
// links (as Stat and ReadRange do): a key that is, or runs through, a symbolic link, and a
// special file, are refused with an error, and the removal itself cannot leave the root
// (os.Root), so a link swapped in after the check is refused too.
func (b *Backend) Delete(ctx context.Context, key string, cond storage.Precondition) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if _, err := b.path(key); err != nil {
		return err
	}
	fi, err := b.lstatFor("deleted", key)
	if err == nil && fi.IsDir() {
		err = fmt.Errorf("delete %s: is a directory: %w", key, storage.ErrNotExist) // a folder is not an object: leave it
	}
	if err != nil {
		if errors.Is(err, storage.ErrNotExist) {
			if cond.IsZero() {
				return nil
			}
			return fmt.Errorf("delete %s: %w", key, storage.ErrNotExist)
		}
		return fmt.Errorf("delete %s: %w", key, err)
	}
	if !cond.IsZero() {
		if fi.Size() != cond.Size || (!cond.ModTime.IsZero() && !fi.ModTime().Equal(cond.ModTime)) {
			return fmt.Errorf("delete %s: size %d, modified %s: %w", key, fi.Size(),
				fi.ModTime().UTC().Format("2006-01-02T15:04:05.000Z07:00"), storage.ErrPreconditionFailed)
		}
	}
	r, err := os.OpenRoot(b.root)
	if err != nil {
		return translate("delete", key, err)
	}
	defer r.Close()
	if err := r.Remove(filepath.FromSlash(key)); err != nil {
		if notExist(err) && cond.IsZero() {
			return nil
		}
		return translate("delete", key, err)
	}
	return nil
}

// special names a non-regular file mode.
func special(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "symlink"
	case m&fs.ModeNamedPipe != 0:
		return "fifo"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeDevice != 0:
		return "device"
	}
	return "special"
}

// lstat returns the file at p (the path of key) without following links: every folder on the
// way from the root and the file itself must be a real folder or file, so that a read never
// leaves the root through a link and never opens a FIFO or a device.
func (b *Backend) lstat(key, p string) (fs.FileInfo, error) { return b.lstatFor("read", key) }

// lstatFor checks key's path as lstat does, for op ("read", "deleted", "written"), which the
// message of a refused special file names. A missing element gives ErrNotExist; a link
// anywhere below the root is refused with an error saying so.
func (b *Backend) lstatFor(op, key string) (fs.FileInfo, error) {
	parts := strings.Split(key, "/")
	cur := b.root
	for i, part := range parts {
		cur = filepath.Join(cur, part)
		fi, err := os.Lstat(cur)
		if err != nil {
			return nil, translate("stat", key, err)
		}
		last := i == len(parts)-1
		switch m := fi.Mode(); {
		case m&fs.ModeSymlink != 0:
			return nil, linkRefused(key, parts[:i+1])
		case !last && !m.IsDir():
			return nil, fmt.Errorf("stat %s: %w", key, storage.ErrNotExist)
		case last && !m.IsDir() && !m.IsRegular():
			return nil, fmt.Errorf("%s is not a regular file (%s), not %s", key, special(m), op)
		case last:
			return fi, nil
		}
	}
	return nil, fmt.Errorf("stat %s: %w", key, storage.ErrNotExist)
}

// linkRefused is the error for key, whose path below the root runs through the symbolic
// link named by the key segments parts.
func linkRefused(key string, parts []string) error {
	return fmt.Errorf("%s: %s is a symbolic link, not followed", key, strings.Join(parts, "/"))
}

// notExist reports whether err means the file is absent, including a path that runs through
// a regular file (ENOTDIR), which on an object store is simply a missing key.
func notExist(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

func translate(op, key string, err error) error {
	if notExist(err) {
		return fmt.Errorf("%s %s: %w", op, key, storage.ErrNotExist)
	}
	return fmt.Errorf("%s %s: %w", op, key, err)
}

// Put implements storage.Putter. The data goes to a temporary file in the key's folder, which
// is synced and then takes the key's name: with a hard link for a create-only put (which fails
// when the name exists, so of two writers exactly one wins), with a rename otherwise. The
// folder is synced too, so the object is durable when Put returns, and no reader ever sees it
// half-written. Folders on the way are created. Put writes only below the root: a folder on
// the way that is a symbolic link, and a key that names one, are refused with an error
// (nothing is written), and every step goes through os.Root, which cannot leave the root.
func (b *Backend) Put(ctx context.Context, key string, r io.Reader, size int64, opts storage.PutOptions) (storage.ObjectInfo, error) {
	if err := ctx.Err(); err != nil {
		return storage.ObjectInfo{}, fmt.Errorf("put %s: %w", key, err)
	}
	if _, err := b.path(key); err != nil {
		return storage.ObjectInfo{}, err
	}
	if size < 0 {
		return storage.ObjectInfo{}, fmt.Errorf("put %s: negative size %d", key, size)
	}
	fi, sum, err := b.write(ctx, key, r, size, opts.CreateOnly)
	if err != nil {
		return storage.ObjectInfo{}, fmt.Errorf("put %s: %w", key, err)
	}
	o := info(key, fi)
	o.MD5 = sum
	return o, nil
}

// write writes key through os.Root and returns the new file's info and hex MD5.
func (b *Backend) write(ctx context.Context, key string, r io.Reader, size int64, createOnly bool) (fs.FileInfo, string, error) {
	if err := os.MkdirAll(b.root, 0o755); err != nil {
		return nil, "", err
	}
	root, err := os.OpenRoot(b.root)
	if err != nil {
		return nil, "", err
	}
	defer root.Close()
	if err := mkdirs(root, key); err != nil {
		return nil, "", err
	}
	name := filepath.FromSlash(key)
	dir := filepath.Dir(name)
	switch fi, err := root.Lstat(name); {
	case err == nil && fi.Mode()&fs.ModeSymlink != 0:
		return nil, "", linkRefused(key, strings.Split(key, "/"))
	case err == nil && fi.IsDir():
		return nil, "", fmt.Errorf("%s is a folder", key)
	case err == nil && createOnly:
		// Refuse early, before reading the data; the link below is what decides.
		return nil, "", storage.ErrExist
	}
	tmp, tmpName, err := createTemp(root, dir)
	if err != nil {
		return nil, "", err
	}
	defer root.Remove(tmpName) // gone after the rename; after the link, the extra name
	h := md5.New()
	_, err = io.Copy(io.MultiWriter(tmp, h), storage.ContextReader(ctx, storage.ExactReader(r, size)))
	if err == nil {
		err = tmp.Chmod(0o644)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, "", err
	}
	if createOnly {
		if err := root.Link(tmpName, name); err != nil {
			if errors.Is(err, fs.ErrExist) {
				return nil, "", storage.ErrExist
			}
			return nil, "", err
		}
	} else if err := root.Rename(tmpName, name); err != nil {
		return nil, "", err
	}
	if err := syncDir(root, dir); err != nil {
		return nil, "", err
	}
	fi, err := root.Lstat(name)
	if err != nil {
		return nil, "", err
	}
	return fi, hex.EncodeToString(h.Sum(nil)), nil
}

// mkdirs creates the folders of key under root that are missing, refusing a symbolic link or
// a file on the way.
func mkdirs(root *os.Root, key string) error {
	parts := strings.Split(key, "/")
	cur := ""
	for i, part := range parts[:len(parts)-1] {
		cur = filepath.Join(cur, part)
		fi, err := root.Lstat(cur)
		if errors.Is(err, fs.ErrNotExist) {
			if err = root.Mkdir(cur, 0o755); err == nil || errors.Is(err, fs.ErrExist) {
				fi, err = root.Lstat(cur)
			}
		}
		switch {
		case err != nil:
			return err
		case fi.Mode()&fs.ModeSymlink != 0:
			return linkRefused(key, parts[:i+1])
		case !fi.IsDir():
			return fmt.Errorf("%s is a file, not a folder", strings.Join(parts[:i+1], "/"))
		}
	}
	return nil
}

// createTemp creates a new temporary file (tempPrefix and a random name) in dir under root.
func createTemp(root *os.Root, dir string) (*os.File, string, error) {
	for range 100 {
		var rnd [8]byte
		if _, err := rand.Read(rnd[:]); err != nil {
			return nil, "", err
		}
		name := filepath.Join(dir, tempPrefix+hex.EncodeToString(rnd[:]))
		f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return f, name, err
	}
	return nil, "", errors.New("no unused temporary file name")
}

// syncDir makes a new name in the folder dir under root durable.
func syncDir(root *os.Root, dir string) error {
	d, err := root.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOTSUP) {
		return nil // the file system does not sync folders
	}
	return err
}

// Copy implements storage.Copier: the source file is opened as ReadRange opens it (a link
// or special file is refused), checked against cond (size and modification time, with
// storage.Precondition.Matches) and written to dstKey as Put does.
func (b *Backend) Copy(ctx context.Context, srcKey, dstKey string, cond storage.Precondition, opts storage.PutOptions) (storage.ObjectInfo, error) {
	if err := ctx.Err(); err != nil {
		return storage.ObjectInfo{}, fmt.Errorf("copy %s: %w", srcKey, err)
	}
	if _, err := b.path(dstKey); err != nil {
		return storage.ObjectInfo{}, err
	}
	f, fi, err := b.open("copy", srcKey)
	if err != nil {
		return storage.ObjectInfo{}, err
	}
	defer f.Close()
	if !cond.Matches(info(srcKey, fi)) {
		return storage.ObjectInfo{}, fmt.Errorf("copy %s: size %d, modified %s: %w", srcKey, fi.Size(),
			fi.ModTime().UTC().Format("2006-01-02T15:04:05.000Z07:00"), storage.ErrPreconditionFailed)
	}
	o, err := b.Put(ctx, dstKey, f, fi.Size(), opts)
	if err != nil {
		return storage.ObjectInfo{}, fmt.Errorf("copy %s: %w", srcKey, err)
	}
	return o, nil
}
