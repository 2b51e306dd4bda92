//go:build !linux

package main

import (
	"io"
	"runtime"
)

// runShim is tcpsig shim: Linux only (netfilter queue).
func runShim(args []string, stdout, stderr io.Writer) int {
	if _, code, ok := parseShimFlags(args, stdout, stderr); !ok {
		return code
	}
	return failf(stderr, "shim: needs Linux's netfilter queue; this is %s", runtime.GOOS)
}
