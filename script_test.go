package main

import (
	"os"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
	"github.com/zbrecover/zbrecover/cmd"
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

var scriptCmds = map[string]func(ts *testscript.TestScript, neg bool, args []string){}
