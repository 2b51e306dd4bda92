//go:build linux

// Command guest is the program of the qemu kernel lab (harness/kernellab,
// booted by run-qemu.sh beside it): it produces and checks the Linux TCP-AO
// captures kept in testvectors/linux, and runs the live cases against the
// guest kernel. Its sub-commands:
//
//	guest run -out /dev/vda [-cases a,b]   inside the qemu guest (run-qemu.sh):
//	    runs every registered case, writes a tar with the pcaps, manifest.json,
//	    results.json and guest.log to -out.
//	guest check -dir DIR                   on the host: re-reads every capture
//	    of DIR's manifest with gopacket, checks it against the manifest and
//	    prints the case table.
//	guest list                             prints the case names.
//	guest dump FILE.pcap...                prints one line per segment.
//
// Cases live in a table (see cases.go); each is a function, so that other
// kinds of case (a userspace endpoint built on the ao package talking to the
// kernel) can be added in another file of this package with register().
package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: guest run|check|list [flags]")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "run":
		os.Exit(runGuest(os.Args[2:]))
	case "check":
		os.Exit(runCheck(os.Args[2:]))
	case "dump":
		os.Exit(runDump(os.Args[2:]))
	case "list":
		for _, c := range registry {
			fmt.Printf("%-40s %s\n", c.Name, c.Kind)
		}
	default:
		fmt.Fprintf(os.Stderr, "unknown sub-command %q\n", os.Args[1])
		os.Exit(2)
	}
}
