package main

import (
	"flag"
	"fmt"
	"io"
)

// shimFlags are the parsed arguments of tcpsig shim.
type shimFlags struct {
	keys, status, state string
	metrics, logFormat  string
	queue, queues       uint
	verbose, uninstall  bool
}

// parseShimFlags parses the arguments; it returns false after printing
// usage or an error.
func parseShimFlags(args []string, stdout, stderr io.Writer) (shimFlags, int, bool) {
	var f shimFlags
	fs := flag.NewFlagSet("shim", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&f.keys, "keys", "", "keys file")
	fs.UintVar(&f.queue, "queue", 7911, "netfilter queue number")
	fs.UintVar(&f.queues, "queues", 0, "number of queues")
	fs.StringVar(&f.status, "status", "", "status socket")
	fs.StringVar(&f.state, "state", "", "state file")
	fs.StringVar(&f.metrics, "metrics", "", "serve /metrics on this TCP address")
	fs.StringVar(&f.logFormat, "log-format", "text", "log format: text or json")
	fs.BoolVar(&f.verbose, "v", false, "debug logging")
	fs.BoolVar(&f.uninstall, "uninstall", false, "remove the rules and exit")
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			fmt.Fprint(stdout, shimHelp)
			return f, 0, false
		}
		return f, failf(stderr, "shim: %v (see tcpsig help shim)", err), false
	}
	if fs.NArg() > 0 {
		return f, failf(stderr, "shim: unexpected argument %q (see tcpsig help shim)", fs.Arg(0)), false
	}
	if f.uninstall {
		if f.keys != "" || f.status != "" || f.state != "" || f.queues != 0 || f.metrics != "" {
			return f, failf(stderr, "shim: -uninstall takes only -queue (see tcpsig help shim)"), false
		}
	} else if f.keys == "" {
		return f, failf(stderr, "shim: -keys FILE is required (see tcpsig help shim)"), false
	}
	if f.logFormat != "text" && f.logFormat != "json" {
		return f, failf(stderr, "shim: -log-format %q: want text or json", f.logFormat), false
	}
	if f.queue > 0xffff {
		return f, failf(stderr, "shim: -queue %d: want 0..65535", f.queue), false
	}
	if f.queues > 8 || f.queue+max(f.queues, 1) > 0x10000 {
		return f, failf(stderr, "shim: -queues %d: want 1..8 queues from -queue %d to at most 65535", f.queues, f.queue), false
	}
	return f, 0, true
}
