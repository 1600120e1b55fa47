package keyfile

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"

	"github.com/zbrecover/zbrecover/storage"
)

// Uploaded is a keys file as Upload stored it: what a journal records of it.
type Uploaded struct {
	Key    string // the object's key on the Putter
	Size   int64  // bytes
	SHA256 string // hex SHA-256 of the bytes
	// Object is the stored object's info as the store returned it (ETag, generation).
	Object storage.ObjectInfo
}

// Upload stores what write writes as the object key on p, create-only (an existing key fails
// with an error wrapping storage.ErrExist and is left as it is), and returns its size and
// SHA-256 checksum. A Putter takes the size before the bytes, so the bytes go first to a
// temporary file in tempDir ("" means os.TempDir()), removed before Upload returns: memory
// does not grow with the keys file. When write fails nothing is stored and its error is
// returned.
//
//	up, err := keyfile.Upload(ctx, volume, "keys/run-1.parquet", "", func(w io.Writer) error {
//		res, err = keyfile.Write(ctx, w, fallback, sources, spec, opts)
//		return err
//	})
func Upload(ctx context.Context, p storage.Putter, key, tempDir string, write func(io.Writer) error) (Uploaded, error) {
	up := Uploaded{Key: key}
	tmp, err := os.CreateTemp(tempDir, "zbrecover-keys-*.parquet")
	if err != nil {
		return up, fmt.Errorf("keyfile: %w", err)
	}
	defer func() {
		tmp.Close()
		os.Remove(tmp.Name())
	}()
	sum := sha256.New()
	bw := bufio.NewWriterSize(io.MultiWriter(tmp, sum), 256<<10)
	cw := &countingWriter{w: bw}
	if err := write(cw); err != nil {
		return up, err
	}
	if err := bw.Flush(); err != nil {
		return up, fmt.Errorf("keyfile: %w", err)
	}
	up.Size, up.SHA256 = cw.n, hex.EncodeToString(sum.Sum(nil))
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		return up, fmt.Errorf("keyfile: %w", err)
	}
	info, err := p.Put(ctx, key, tmp, up.Size, storage.PutOptions{CreateOnly: true})
	if err != nil {
		return up, fmt.Errorf("keyfile: upload %s: %w", key, err)
	}
	if info.Size != 0 && info.Size != up.Size {
		return up, fmt.Errorf("keyfile: upload %s: the store holds %d bytes, %d were written", key, info.Size, up.Size)
	}
	up.Object = info
	return up, nil
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
