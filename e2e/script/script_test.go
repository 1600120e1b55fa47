package script

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/zbrecover/zbrecover/cmd"
	"github.com/zbrecover/zbrecover/delta/deltatest"
	"github.com/zbrecover/zbrecover/internal/fallback"
	"github.com/zbrecover/zbrecover/internal/pqgen"
	"github.com/zbrecover/zbrecover/schemadiff"
)

// TestMain lets testscript run the real binary's main in a subprocess as "zbrecover".
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){"zbrecover": func() { os.Exit(cmd.Main()) }})
}

// TestScripts runs the end-to-end scenarios in testdata/script.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		Setup:               scriptSetup,
		Cmds:                scriptCmds,
	})
}

func scriptSetup(env *testscript.Env) error {
	env.Setenv("CI", os.Getenv("CI"))
	return nil
}

var scriptCmds = map[string]func(ts *testscript.TestScript, neg bool, args []string){
	"mkfallback": cmdMkfallback,
	"mkdelta":    cmdMkdelta,
	"exitcode":   cmdExitcode,
}

// cmdExitcode runs a program and checks its exit status, leaving its output for stdout and
// stderr checks:
//
//	exitcode CODE PROGRAM [ARGS...]
func cmdExitcode(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! exitcode")
	}
	if len(args) < 2 {
		ts.Fatalf("usage: exitcode CODE PROGRAM [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	ts.Check(err)
	got := 0
	if err := ts.Exec(args[1], args[2:]...); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("%s: %v", args[1], err)
		}
		got = ee.ExitCode()
	}
	if got != want {
		ts.Fatalf("%s exited with %d, want %d", args[1], got, want)
	}
}

// cmdMkfallback writes a real Parquet fallback file:
//
//	mkfallback ROOT KEY SCHEMA ROWS
//
// writes ROOT/_zerobus/table_rejected_parquets/KEY with the columns of the schema file SCHEMA
// (a Spark DDL column list or Delta schema JSON, as --schema-file takes it) and the rows of
// the JSON file ROWS (an array of objects; decimals as strings).
func cmdMkfallback(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! mkfallback")
	}
	if len(args) != 4 {
		ts.Fatalf("usage: mkfallback ROOT KEY SCHEMA ROWS")
	}
	s := readScriptSchema(ts, args[2])
	sc, err := arrowSchema(s)
	ts.Check(err)
	data, err := pqgen.Bytes(sc, ts.ReadFile(args[3]), pqgen.Options{})
	ts.Check(err)
	path := filepath.Join(ts.MkAbs(args[0]), filepath.FromSlash(fallback.Prefix+args[1]))
	ts.Check(pqgen.WriteFile(path, data))
}

// cmdMkdelta writes a table's Delta log:
//
//	mkdelta ROOT SCHEMA...
//
// commits the schema files (DDL or Delta schema JSON) as versions 0, 1, … of the table at
// ROOT. When the log already has versions, the list must repeat them in order: only the
// versions after the newest one are committed, as a later schema change would be.
func cmdMkdelta(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! mkdelta")
	}
	if len(args) < 2 {
		ts.Fatalf("usage: mkdelta ROOT SCHEMA...")
	}
	var schemas []schemadiff.Schema
	for _, a := range args[1:] {
		schemas = append(schemas, readScriptSchema(ts, a))
	}
	root := ts.MkAbs(args[0])
	logDir := filepath.Join(root, "_delta_log")
	existing, _ := filepath.Glob(filepath.Join(logDir, "*.json"))
	if len(existing) >= len(schemas) {
		ts.Fatalf("mkdelta: the log already has %d versions; list them and the new ones", len(existing))
	}
	tmp, err := os.MkdirTemp(ts.Getenv("WORK"), "mkdelta")
	ts.Check(err)
	defer os.RemoveAll(tmp)
	_, err = deltatest.Write(tmp, deltatest.Table{
		Schema: schemas[0],
		Later:  schemas[1:],
		ID:     "5d0c7c1e-7a1b-4f3e-9d2a-000000000042",
		Time:   time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC),
	})
	ts.Check(err)
	ts.Check(os.MkdirAll(logDir, 0o755))
	for v := len(existing); v < len(schemas); v++ {
		name := fmt.Sprintf("%020d.json", v)
		data, err := os.ReadFile(filepath.Join(tmp, "_delta_log", name))
		ts.Check(err)
		ts.Check(os.WriteFile(filepath.Join(logDir, name), data, 0o644))
	}
}

func readScriptSchema(ts *testscript.TestScript, name string) schemadiff.Schema {
	s, err := schemadiff.ParseSchemaFile([]byte(ts.ReadFile(name)))
	if err != nil {
		ts.Fatalf("%s: %v", name, err)
	}
	return s
}

// arrowSchema maps a Spark schema onto the Arrow schema whose Parquet file inspect reads back
// as that Spark schema.
func arrowSchema(s schemadiff.Schema) (*arrow.Schema, error) {
	fields, err := arrowFields(s.Fields)
	if err != nil {
		return nil, err
	}
	return arrow.NewSchema(fields, nil), nil
}

func arrowFields(in []schemadiff.Field) ([]arrow.Field, error) {
	out := make([]arrow.Field, len(in))
	for i, f := range in {
		t, err := arrowType(f.Type)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.Name, err)
		}
		out[i] = arrow.Field{Name: f.Name, Type: t, Nullable: f.Nullable}
	}
	return out, nil
}

func arrowType(t schemadiff.Type) (arrow.DataType, error) {
	switch t.Kind {
	case schemadiff.Boolean:
		return arrow.FixedWidthTypes.Boolean, nil
	case schemadiff.Byte:
		return arrow.PrimitiveTypes.Int8, nil
	case schemadiff.Short:
		return arrow.PrimitiveTypes.Int16, nil
	case schemadiff.Integer:
		return arrow.PrimitiveTypes.Int32, nil
	case schemadiff.Long:
		return arrow.PrimitiveTypes.Int64, nil
	case schemadiff.Float:
		return arrow.PrimitiveTypes.Float32, nil
	case schemadiff.Double:
		return arrow.PrimitiveTypes.Float64, nil
	case schemadiff.String:
		return arrow.BinaryTypes.String, nil
	case schemadiff.Binary:
		return arrow.BinaryTypes.Binary, nil
	case schemadiff.Date:
		return arrow.FixedWidthTypes.Date32, nil
	case schemadiff.Timestamp:
		return &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, nil
	case schemadiff.TimestampNTZ:
		return &arrow.TimestampType{Unit: arrow.Microsecond}, nil
	case schemadiff.Decimal:
		return &arrow.Decimal128Type{Precision: int32(t.Precision), Scale: int32(t.Scale)}, nil
	case schemadiff.Array:
		e, err := arrowType(*t.Elem)
		if err != nil {
			return nil, err
		}
		return arrow.ListOfField(arrow.Field{Name: "element", Type: e, Nullable: t.ContainsNull}), nil
	case schemadiff.Struct:
		fields, err := arrowFields(t.Fields)
		if err != nil {
			return nil, err
		}
		return arrow.StructOf(fields...), nil
	}
	return nil, fmt.Errorf("type %s: not supported by mkfallback", strings.ToLower(t.String()))
}
