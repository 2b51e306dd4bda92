// Command tcpsig verifies TCP-AO (RFC 5925) and TCP-MD5 (RFC 2385)
// signatures in packet captures, byte for byte as Linux computes them,
// signs and verifies a host's own TCP for a kernel without them (shim),
// and measures the signing engine.
//
//	tcpsig verify [-keys FILE] [-json] [-v] [-isn ENDPOINT=ISN ...] [-sne ENDPOINT=SNE ...] [CAPTURE ...]
//	tcpsig verify -keys FILE -i IFACE [-port N] [-w FILE] [-every D] [-json] [-v]
//	tcpsig bench [-json] [-time D] [-alg NAME]
//	tcpsig shim -keys FILE [-queue N] [-status SOCK] [-state FILE] [-metrics ADDR] [-log-format F] [-v]
//	tcpsig keys check [-at TIME] FILE [OTHER]
//	tcpsig keys gen -a ADDR -b ADDR [-alg NAME | -md5] -o FILE
//	tcpsig keys rotate FILE -peer P [-at TIME] [-overlap D] [-mirror OTHER]
//	tcpsig keys import DOC -chain NAME=PEER -o FILE; tcpsig keys export FILE -o DOC
//	tcpsig version
//
// Run "tcpsig help" for the details, "tcpsig help CMD" (or "tcpsig CMD -h")
// for one command's, "tcpsig help keys" for the keys file.
package main

import (
	"fmt"
	"io"
	"os"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is the command: it returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		return failf(stderr, "needs a command: verify, bench, shim, keys, version or help (tcpsig help for usage)")
	}
	switch args[0] {
	case "verify":
		return runVerify(args[1:], stdout, stderr)
	case "bench":
		return runBench(args[1:], stdout, stderr)
	case "version", "-version", "--version":
		return runVersion(args[1:], stdout, stderr)
	case "shim":
		return runShim(args[1:], stdout, stderr)
	case "keys":
		return runKeys(args[1:], stdout, stderr)
	case "help", "-h", "-help", "--help":
		return runHelp(args[1:], stdout, stderr)
	}
	fmt.Fprintf(stderr, "tcpsig: unknown command %q: want verify, bench, shim, keys, version or help\n", args[0])
	return 2
}

// failf prints one line to stderr and returns exit status 2.
func failf(stderr io.Writer, format string, a ...any) int {
	fmt.Fprintf(stderr, "tcpsig "+format+"\n", a...)
	return 2
}
