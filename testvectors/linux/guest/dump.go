//go:build linux

package main

import (
	"fmt"
	"os"
)

// runDump is "guest dump FILE.pcap ...": one line per segment.
func runDump(args []string) int {
	rc := 0
	for _, f := range args {
		b, err := os.ReadFile(f)
		if err != nil {
			fmt.Println(err)
			rc = 1
			continue
		}
		pkts, err := readPcap(b)
		if err != nil {
			fmt.Printf("%s: %v\n", f, err)
			rc = 1
			continue
		}
		fmt.Printf("== %s (%d packets)\n", f, len(pkts))
		var t0 = pkts[0].ts
		for i, p := range pkts {
			s, err := parseFrame(p.data)
			if err != nil {
				fmt.Printf("%4d %v\n", i+1, err)
				continue
			}
			ts := ""
			if s.hasTS {
				ts = fmt.Sprintf(" TS %d/%d", s.tsVal, s.tsEcr)
			}
			fmt.Printf("%4d %8.3f %v%s opts %v\n", i+1, p.ts.Sub(t0).Seconds(), s, ts, s.opts)
		}
	}
	return rc
}
