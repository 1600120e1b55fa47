package keyfile

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/zbrecover/zbrecover/storage"
)

// ErrChanged is wrapped by the error of OpenChecked for a keys file whose bytes are not the
// ones recorded when it was stored (another size or SHA-256), or that is gone: it proves
// nothing.
var ErrChanged = errors.New("the keys file is not the one recorded")

// Recorded is what a journal records of a stored keys file (Upload's Uploaded): the checks
// OpenChecked makes.
type Recorded struct {
	Size   int64
	SHA256 string // hex
}

// Checked is a keys file read whole and checked against its record: every read goes to the
// checked bytes (a temporary file), never back to the store. Close removes the temporary
// file.
type Checked struct {
	*Reader
	f *os.File
}

// Close removes the temporary file; a second Close does nothing.
func (c *Checked) Close() error {
	if c == nil || c.f == nil {
		return nil
	}
	f := c.f
	c.f = nil
	err := f.Close()
	if rerr := os.Remove(f.Name()); err == nil {
		err = rerr
	}
	return err
}

// OpenChecked reads the keys file stored as key on b whole, once (one ranged read of its
// size), into a temporary file in tempDir ("" means os.TempDir()) while hashing it, and opens
// it when its size and SHA-256 are the recorded ones. The errors: one wrapping ErrChanged when
// the object is gone (storage.ErrNotExist), has another size, or other bytes, or is not a keys
// file (ErrNotKeysFile); the store's error, wrapped, when it cannot be read (nothing is known of
// its bytes then).
func OpenChecked(ctx context.Context, b storage.Backend, key string, rec Recorded, tempDir string) (*Checked, error) {
	if rec.SHA256 == "" {
		return nil, fmt.Errorf("keys file %s: %w: no checksum was recorded for it", key, ErrChanged)
	}
	info, err := b.Stat(ctx, key)
	if errors.Is(err, storage.ErrNotExist) {
		return nil, fmt.Errorf("keys file %s: %w: it is gone", key, ErrChanged)
	}
	if err != nil {
		return nil, fmt.Errorf("keys file %s: %w", key, err)
	}
	if info.Size != rec.Size {
		return nil, fmt.Errorf("keys file %s: %w: it holds %d bytes, %d were recorded", key, ErrChanged, info.Size, rec.Size)
	}
	tmp, err := os.CreateTemp(tempDir, "zbrecover-keys-check-*.parquet")
	if err != nil {
		return nil, fmt.Errorf("keys file %s: %w", key, err)
	}
	c := &Checked{f: tmp}
	fail := func(err error) (*Checked, error) {
		_ = c.Close()
		return nil, err
	}
	rc, err := b.ReadRange(ctx, key, 0, rec.Size)
	if errors.Is(err, storage.ErrNotExist) {
		return fail(fmt.Errorf("keys file %s: %w: it is gone", key, ErrChanged))
	}
	if err != nil {
		return fail(fmt.Errorf("keys file %s: %w", key, err))
	}
	sum := sha256.New()
	n, err := io.Copy(io.MultiWriter(tmp, sum), rc)
	rc.Close()
	if err != nil {
		return fail(fmt.Errorf("keys file %s: %w", key, err))
	}
	if got := hex.EncodeToString(sum.Sum(nil)); n != rec.Size || !strings.EqualFold(got, rec.SHA256) {
		return fail(fmt.Errorf("keys file %s: %w: its %d bytes have SHA-256 %s, %s was recorded", key, ErrChanged, n, got, rec.SHA256))
	}
	kr, err := Open(tmp, n)
	if err != nil {
		return fail(fmt.Errorf("keys file %s: %w: %w", key, ErrChanged, err))
	}
	c.Reader = kr
	return c, nil
}
