package tcpsig_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The tree has three floors. The engine (every package not named below)
// signs and verifies; the application (cmd/, shim/, pcapverify/) is built
// on it; the harness (harness/, with the qemu kernel lab, and
// testvectors/, the published vectors and kernel captures it proves them
// with) proves both against kernels, daemons and published vectors. A
// package's non-test code imports its own floor and those below, never one
// above: the engine knows no application and no harness. Tests may import
// anything.
const module = "github.com/tcpsig/tcpsig"

const (
	engineFloor = iota
	applicationFloor
	harnessFloor
)

var floorNames = [...]string{"engine", "application", "harness"}

// floorOf is the floor of the package in directory dir (slash-separated,
// relative to the repository's top).
func floorOf(dir string) int {
	first, _, _ := strings.Cut(dir, "/")
	switch first {
	case "cmd", "shim", "pcapverify":
		return applicationFloor
	case "harness", "testvectors":
		return harnessFloor
	}
	return engineFloor
}

// walkImports calls fn with the imports of every non-test Go file under
// root (hidden directories and testdata skipped) and returns how many
// files it read.
func walkImports(t *testing.T, root string, fn func(path string, f *ast.File)) int {
	t.Helper()
	fset := token.NewFileSet()
	files := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		files++
		fn(path, f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func TestNoImportRunsBackUp(t *testing.T) {
	files := walkImports(t, ".", func(path string, f *ast.File) {
		dir := filepath.ToSlash(filepath.Dir(path))
		from := floorOf(dir)
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			rest, ok := strings.CutPrefix(p, module+"/")
			if !ok {
				continue
			}
			if to := floorOf(rest); to > from {
				t.Errorf("%s (%s) imports %s (%s)", path, floorNames[from], rest, floorNames[to])
			}
		}
	})
	if files < 100 {
		t.Fatalf("read %d files: not the whole tree", files)
	}
}

// vectorImports are the packages above the engine that testvectors/'s
// loaders may import: the pcap reader they read captures with.
var vectorImports = []string{"harness/capture"}

// Issue 30 item 7: testvectors/ keeps data and the code that loads it. No
// program lives there (the qemu guest that records the Linux captures is
// harness/kernellab/guest), and its non-test code imports the engine and,
// of the floors above, only vectorImports: a loader is usable by any test
// without pulling in an application or the lab.
func TestVectorsAreDataAndLoaders(t *testing.T) {
	files := walkImports(t, "testvectors", func(path string, f *ast.File) {
		if f.Name.Name == "main" {
			t.Errorf("%s is a program (package main): programs that make the data belong in harness/", path)
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			rest, ok := strings.CutPrefix(p, module+"/")
			if !ok || floorOf(rest) == engineFloor || rest == "testvectors" || strings.HasPrefix(rest, "testvectors/") || slices.Contains(vectorImports, rest) {
				continue
			}
			t.Errorf("%s imports %s (%s): testvectors/ may import the engine and %v", path, rest, floorNames[floorOf(rest)], vectorImports)
		}
	})
	if files < 5 {
		t.Fatalf("read %d files of testvectors/: not the whole folder", files)
	}
}

// metricsImporters are the directories whose non-test code may import the
// Prometheus client: the shim (an application that serves metrics) and the
// command. The engine and the other applications stay without it, so a
// program that imports the engine pulls in no metrics library (issue 28).
var metricsImporters = []string{"shim", "cmd/tcpsig"}

func TestOnlyTheShimImportsPrometheus(t *testing.T) {
	seen := 0
	walkImports(t, ".", func(path string, f *ast.File) {
		dir := filepath.ToSlash(filepath.Dir(path))
		allowed := false
		for _, a := range metricsImporters {
			if dir == a || strings.HasPrefix(dir, a+"/") && a != "shim" {
				allowed = true
			}
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if !strings.HasPrefix(p, "github.com/prometheus/") {
				continue
			}
			seen++
			if !allowed {
				t.Errorf("%s imports %s: only %v may import the Prometheus client", path, p, metricsImporters)
			}
		}
	})
	if seen == 0 {
		t.Error("no file imports the Prometheus client: the shim's metrics are gone, or this test no longer finds them")
	}
}
