package delta_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zbrecover/zbrecover/delta/deltatest"
	sd "github.com/zbrecover/zbrecover/schemadiff"
)

// A log file whose version does not fit Delta's 64-bit versions is refused with its name, not
// read as version 2^63-1.
func TestOversizedVersionRefused(t *testing.T) {
	dir := t.TempDir()
	if _, err := deltatest.Write(dir, deltatest.Table{Schema: sd.NewSchema().Col("id", sd.LongType)}); err != nil {
		t.Fatal(err)
	}
	name := "99999999999999999999.json"
	if err := os.WriteFile(filepath.Join(dir, "_delta_log", name), []byte(`{"commitInfo":{}}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := read(t, dir)
	if err == nil || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), "out of range") {
		t.Errorf("err = %v, want the oversized version refused", err)
	}
}
