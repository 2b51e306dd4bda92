package main

import (
	"flag"
	"fmt"
	"net/netip"
	"sort"
	"strconv"
	"strings"
)

// endpointValues is a repeatable flag of ENDPOINT=N pairs (-isn, -sne):
// ENDPOINT is ip:port ([addr]:port for IPv6), N decimal or 0x hex, once
// per endpoint.
type endpointValues struct {
	m map[netip.AddrPort]uint32
}

func (v *endpointValues) String() string {
	if v == nil || len(v.m) == 0 {
		return ""
	}
	var s []string
	for ap, n := range v.m {
		s = append(s, fmt.Sprintf("%v=%d", ap, n))
	}
	sort.Strings(s)
	return strings.Join(s, " ")
}

func (v *endpointValues) Set(s string) error {
	ep, num, ok := strings.Cut(s, "=")
	if !ok {
		return fmt.Errorf("%q: want ENDPOINT=N, e.g. 192.0.2.1:179=123456 or [2001:db8::1]:179=0x1e240", s)
	}
	ap, err := netip.ParseAddrPort(ep)
	if err != nil {
		return fmt.Errorf("%q: endpoint is not ip:port (IPv6 as [addr]:port)", ep)
	}
	n, err := parseUint32(num)
	if err != nil {
		return fmt.Errorf("%q: %v", s, err)
	}
	ap = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	if _, dup := v.m[ap]; dup {
		return fmt.Errorf("%v given twice", ap)
	}
	if v.m == nil {
		v.m = map[netip.AddrPort]uint32{}
	}
	v.m[ap] = n
	return nil
}

// parseUint32 reads a decimal or 0x-prefixed hexadecimal 32-bit number.
func parseUint32(s string) (uint32, error) {
	base, digits := 10, s
	if strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X") {
		base, digits = 16, s[2:]
	}
	n, err := strconv.ParseUint(digits, base, 32)
	if err != nil {
		return 0, fmt.Errorf("%q is not a 32-bit number (decimal or 0x hex)", s)
	}
	return uint32(n), nil
}

// parseArgs parses flags wherever they are among the arguments
// ("verify cap.pcap -keys k.json" works) and returns the others; after
// "--" everything is an argument.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var rest []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		left := fs.Args()
		if consumed := len(args) - len(left); consumed > 0 && args[consumed-1] == "--" {
			return append(rest, left...), nil
		}
		if len(left) == 0 {
			return rest, nil
		}
		rest = append(rest, left[0])
		args = left[1:]
	}
}
