//go:build ignore

// house checks the shape the project keeps: no Go file over 600 lines,
// no function of the root package's write path over 60 lines, none of the
// durable layer over 80, and no durability flag in the root package's
// in-memory files.
//
//	go run .ci/house.go
package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// writePath are the root package's files that write: the commit path and
// what feeds it.
var writePath = []string{"write.go", "txn.go", "expiry.go", "commit.go", "durability.go", "group.go", "records.go", "compact.go"}

// durable are the durable layer's files (test files aside): the root
// package's that log, checkpoint, seal, merge, recover and import, and
// the packages under them.
var durable = []string{"durable.go", "durability.go", "group.go", "records.go", "checkpoint.go", "chain.go",
	"recover.go", "recovery.go", "restore.go", "restore_chain.go", "seal.go", "seal_chain.go", "seal_meta.go",
	"sealed.go", "sealed_changes.go", "merge.go", "import.go", "import_seal.go", "wal/*.go", "segment/*.go", "vfs/*.go", "chain/*.go"}

// inMemory are the files a store made by New runs, which must not ask
// whether the store is durable.
var inMemory = []string{"write.go", "txn.go", "expiry.go", "commit.go", "compact.go", "store.go", "read.go", "view.go", "watch.go", "recent.go", "entry.go"}

var flag = regexp.MustCompile(`\bs\.disk\b|\.draining\b|\.replaying\b|\bs\.d\b`)

func main() {
	bad := 0
	report := func(format string, args ...any) {
		fmt.Printf(format+"\n", args...)
		bad++
	}
	filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() && strings.HasPrefix(d.Name(), ".") && path != "." {
			return filepath.SkipDir
		}
		if strings.HasSuffix(path, ".go") {
			b, _ := os.ReadFile(path)
			if n := strings.Count(string(b), "\n"); n > 600 {
				report("%s: %d lines (at most 600)", path, n)
			}
		}
		return nil
	})
	fset := token.NewFileSet()
	// longFuncs reports the functions of the file name over most lines.
	longFuncs := func(name string, most int, where string) {
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			report("%v", err)
			return
		}
		for _, decl := range f.Decls {
			if fn, ok := decl.(*ast.FuncDecl); ok && fn.Body != nil {
				lines := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1
				if lines > most {
					report("%s: %s is %d lines (at most %d %s)", name, fn.Name.Name, lines, most, where)
				}
			}
		}
	}
	for _, name := range writePath {
		longFuncs(name, 60, "on the write path")
	}
	for _, pattern := range durable {
		names, _ := filepath.Glob(pattern)
		if len(names) == 0 {
			report("%s: no such durable file", pattern)
		}
		for _, name := range names {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			longFuncs(name, 80, "in the durable layer")
		}
	}
	for _, name := range inMemory {
		b, err := os.ReadFile(name)
		if err != nil {
			report("%v", err)
			continue
		}
		for i, line := range strings.Split(string(b), "\n") {
			if flag.MatchString(line) {
				report("%s:%d: a durability flag in an in-memory file: %s", name, i+1, strings.TrimSpace(line))
			}
		}
	}
	if bad > 0 {
		os.Exit(1)
	}
}
