//go:build linux

package main

import (
	"fmt"

	"github.com/tcpsig/tcpsig/harness/capture"
)

// runDump is "guest dump FILE.pcap ...": one line per segment.
func runDump(args []string) int {
	rc := 0
	for _, f := range args {
		lt, pkts, err := capture.ReadFile(f)
		if err == nil && lt != capture.LinkTypeEthernet {
			err = fmt.Errorf("link type %v, want %v", lt, capture.LinkTypeEthernet)
		}
		if err != nil {
			fmt.Printf("%s: %v\n", f, err)
			rc = 1
			continue
		}
		fmt.Printf("== %s (%d packets)\n", f, len(pkts))
		for i, p := range pkts {
			s, err := parseFrame(p.Data)
			if err != nil {
				fmt.Printf("%4d %v\n", i+1, err)
				continue
			}
			ts := ""
			if s.hasTS {
				ts = fmt.Sprintf(" TS %d/%d", s.tsVal, s.tsEcr)
			}
			fmt.Printf("%4d %8.3f %v%s opts %v\n", i+1, p.Time.Sub(pkts[0].Time).Seconds(), s, ts, s.opts)
		}
	}
	return rc
}
