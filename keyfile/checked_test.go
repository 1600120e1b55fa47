package keyfile_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zbrecover/zbrecover/keyfile"
	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/storage/mem"
)

// TestOpenChecked: a stored keys file opens only with the size and SHA-256 recorded when it
// was stored; other bytes (of the same size or not), a file that is gone or no checksum fail
// with ErrChanged, and no temporary file is left either way. What it opens are the checked
// bytes: the object replaced after the check changes nothing the reader gives.
func TestOpenChecked(t *testing.T) {
	f := newFixture(t, 3)
	ctx := context.Background()
	dest := mem.New()
	up, err := keyfile.Upload(ctx, dest, "keys/k.parquet", t.TempDir(), func(w io.Writer) error {
		_, err := keyfile.Write(ctx, w, f.b, f.srcs, f.spec, keyfile.Options{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	orig, _ := storage.ReadAll(ctx, dest, "keys/k.parquet", 0, -1)
	rec := keyfile.Recorded{Size: up.Size, SHA256: up.SHA256}
	tmp := t.TempDir()
	left := func() {
		t.Helper()
		if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
			t.Errorf("temporary files left: %v", ents)
		}
	}

	c, err := keyfile.OpenChecked(ctx, dest, "keys/k.parquet", rec, tmp)
	if err != nil {
		t.Fatal(err)
	}
	want, err := c.Counts(ctx)
	if err != nil || len(want) != 3 {
		t.Fatalf("counts %v, %v", want, err)
	}
	// Replaced after the check: the reader still reads the checked bytes.
	put(dest, "keys/k.parquet", "", []byte("other bytes"))
	if got, err := c.Counts(ctx); err != nil || len(got) != len(want) || got[0] != want[0] {
		t.Errorf("counts after the object changed: %v, %v", got, err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	left()

	flipped := bytes.Clone(orig)
	flipped[len(flipped)/2] ^= 0xff
	sum := sha256.Sum256(flipped)
	for _, tc := range []struct {
		name string
		data []byte // nil: gone
		rec  keyfile.Recorded
		why  string
	}{
		{"same size, other bytes", flipped, rec, "have SHA-256 " + hex.EncodeToString(sum[:])},
		{"another size", append(bytes.Clone(orig), 0), rec, "bytes, "},
		{"gone", nil, rec, "it is gone"},
		{"no checksum recorded", orig, keyfile.Recorded{Size: up.Size}, "no checksum"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.data == nil {
				if err := dest.Delete(ctx, "keys/k.parquet", storage.Precondition{}); err != nil {
					t.Fatal(err)
				}
			} else {
				put(dest, "keys/k.parquet", "", tc.data)
			}
			c, err := keyfile.OpenChecked(ctx, dest, "keys/k.parquet", tc.rec, tmp)
			if !errors.Is(err, keyfile.ErrChanged) || !strings.Contains(err.Error(), tc.why) || c != nil {
				t.Errorf("err %v, want ErrChanged saying %q", err, tc.why)
			}
			left()
		})
	}
	// The recorded bytes again: they open.
	put(dest, "keys/k.parquet", "", orig)
	c, err = keyfile.OpenChecked(ctx, dest, "keys/k.parquet", rec, filepath.Join(tmp))
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	left()
}
