package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// goreleaserConfig is the part of .goreleaser.yaml the README's install story rests on.
type goreleaserConfig struct {
	Version int `yaml:"version"`
	Before  struct {
		Hooks []string `yaml:"hooks"`
	} `yaml:"before"`
	Builds []struct {
		ID      string   `yaml:"id"`
		Main    string   `yaml:"main"`
		Binary  string   `yaml:"binary"`
		Env     []string `yaml:"env"`
		Goos    []string `yaml:"goos"`
		Goarch  []string `yaml:"goarch"`
		Ldflags []string `yaml:"ldflags"`
	} `yaml:"builds"`
	Archives []struct {
		IDs             []string `yaml:"ids"`
		Formats         []string `yaml:"formats"`
		FormatOverrides []struct {
			Goos    string   `yaml:"goos"`
			Formats []string `yaml:"formats"`
		} `yaml:"format_overrides"`
		Files []yaml.Node `yaml:"files"`
	} `yaml:"archives"`
	Checksum struct {
		NameTemplate string `yaml:"name_template"`
		Algorithm    string `yaml:"algorithm"`
	} `yaml:"checksum"`
}

// versionSymbol is the variable `zbrecover version` prints, which the release stamps.
const versionSymbol = mod + "cmd.Version"

// TestGoreleaserConfig holds .goreleaser.yaml to what the README promises: pure-Go archives
// for linux, darwin and windows on amd64 and arm64, sha256 checksums, the man pages and the
// completion scripts inside, and the version stamped into the variable `version` prints.
func TestGoreleaserConfig(t *testing.T) {
	data, err := os.ReadFile(".goreleaser.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var c goreleaserConfig
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	dec.KnownFields(false)
	if err := dec.Decode(&c); err != nil {
		t.Fatalf(".goreleaser.yaml: %v", err)
	}
	if c.Version != 2 {
		t.Errorf("version %d, want 2 (goreleaser v2)", c.Version)
	}
	if len(c.Builds) != 1 {
		t.Fatalf("%d builds, want 1", len(c.Builds))
	}
	b := c.Builds[0]
	if b.Main != "." || b.Binary != "zbrecover" || !slices.Contains(b.Env, "CGO_ENABLED=0") {
		t.Errorf("build %s: main %q, binary %q, env %q: want the root package as zbrecover, CGO_ENABLED=0", b.ID, b.Main, b.Binary, b.Env)
	}
	for _, os := range []string{"linux", "darwin", "windows"} {
		if !slices.Contains(b.Goos, os) {
			t.Errorf("goos %q lacks %s", b.Goos, os)
		}
	}
	for _, arch := range []string{"amd64", "arm64"} {
		if !slices.Contains(b.Goarch, arch) {
			t.Errorf("goarch %q lacks %s", b.Goarch, arch)
		}
	}
	if !strings.Contains(strings.Join(b.Ldflags, " "), "-X "+versionSymbol+"=v{{ .Version }}") {
		t.Errorf("ldflags %q do not stamp %s", b.Ldflags, versionSymbol)
	}
	if !hasStringVar(t, "cmd", "Version") {
		t.Errorf("package cmd has no string variable Version for -X %s to set", versionSymbol)
	}

	if len(c.Archives) != 1 {
		t.Fatalf("%d archives, want 1", len(c.Archives))
	}
	a := c.Archives[0]
	if !slices.Contains(a.IDs, b.ID) || !slices.Contains(a.Formats, "tar.gz") {
		t.Errorf("archive ids %q formats %q", a.IDs, a.Formats)
	}
	if len(a.FormatOverrides) != 1 || a.FormatOverrides[0].Goos != "windows" || !slices.Contains(a.FormatOverrides[0].Formats, "zip") {
		t.Errorf("format overrides %+v, want zip for windows", a.FormatOverrides)
	}
	var srcs []string
	for _, f := range a.Files {
		var src string
		if f.Kind == yaml.ScalarNode {
			src = f.Value
		} else {
			var m struct {
				Src string `yaml:"src"`
			}
			if err := f.Decode(&m); err != nil {
				t.Fatal(err)
			}
			src = m.Src
		}
		srcs = append(srcs, src)
	}
	for _, want := range []string{"docs/man/*.1", "completions/*", "README.md"} {
		if !slices.Contains(srcs, want) {
			t.Errorf("archive files %q lack %s", srcs, want)
		}
	}
	// What the archive takes from the tree is there (completions/ is written by the hook).
	for _, src := range srcs {
		if strings.HasPrefix(src, "completions/") {
			continue
		}
		if m, _ := filepath.Glob(src); len(m) == 0 {
			t.Errorf("archive file %s matches nothing in the tree", src)
		}
	}
	if man, _ := filepath.Glob("docs/man/*.1"); len(man) < 10 {
		t.Errorf("%d man pages in docs/man", len(man))
	}
	if len(c.Before.Hooks) != 1 || c.Before.Hooks[0] != "sh scripts/completions.sh" {
		t.Errorf("before hooks %q, want the completion scripts written", c.Before.Hooks)
	} else if data, err := os.ReadFile("scripts/completions.sh"); err != nil {
		t.Error(err)
	} else {
		for _, shell := range []string{"bash", "zsh", "fish", "powershell"} {
			if !strings.Contains(string(data), shell) {
				t.Errorf("scripts/completions.sh writes no %s completion", shell)
			}
		}
	}
	if c.Checksum.Algorithm != "sha256" || c.Checksum.NameTemplate == "" {
		t.Errorf("checksum %+v, want sha256", c.Checksum)
	}
}

// hasStringVar reports whether the package in dir declares the package-level variable name,
// of type string or initialised with a string literal.
func hasStringVar(t *testing.T, dir, name string) bool {
	t.Helper()
	pkgs, err := parser.ParseDir(token.NewFileSet(), dir, func(fi os.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pkgs {
		for _, f := range p.Files {
			for _, d := range f.Decls {
				g, ok := d.(*ast.GenDecl)
				if !ok || g.Tok != token.VAR {
					continue
				}
				for _, s := range g.Specs {
					vs := s.(*ast.ValueSpec)
					for i, n := range vs.Names {
						if n.Name != name {
							continue
						}
						if id, ok := vs.Type.(*ast.Ident); ok && id.Name == "string" {
							return true
						}
						if i < len(vs.Values) {
							if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
								return true
							}
						}
					}
				}
			}
		}
	}
	return false
}

// TestVersionStamp builds the release binary as goreleaser does (CGO_ENABLED=0, -X on the
// version variable) and checks that `zbrecover version` prints the stamped version.
func TestVersionStamp(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the release binary")
	}
	bin := filepath.Join(t.TempDir(), "zbrecover")
	build := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w -X "+versionSymbol+"=v9.8.7", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil || !strings.HasPrefix(string(out), "zbrecover v9.8.7 ") && !strings.HasPrefix(string(out), "v9.8.7 ") {
		t.Errorf("zbrecover version: %q, %v; want v9.8.7", out, err)
	}
}
