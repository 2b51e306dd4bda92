package main

import (
	"github.com/tcpsig/tcpsig/diagnose"
	"github.com/tcpsig/tcpsig/keyfile"
)

// lintWarnings are keys check's warnings of the mistakes diagnose.Lint
// finds without a capture.
func lintWarnings(f *keyfile.File) []string {
	var out []string
	for _, l := range diagnose.Lint(f) {
		out = append(out, l.String())
	}
	return out
}
