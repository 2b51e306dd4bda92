package main

import (
	"strings"

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

// differs says which fields differ: "maclen differs", "alg, key differ".
func differs(fields []string) string {
	if len(fields) == 1 {
		return fields[0] + " differs"
	}
	return strings.Join(fields, ", ") + " differ"
}
