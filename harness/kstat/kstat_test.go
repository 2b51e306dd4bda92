//go:build linux

package kstat

import "testing"

func TestParseNetstat(t *testing.T) {
	in := "TcpExt: A TCPMD5Failure TCPMD5NotFound\nTcpExt: 1 2 3\nIpExt: X\nIpExt: 9\n"
	m, err := parseNetstat([]byte(in), "TcpExt")
	if err != nil || m["A"] != 1 || m["TCPMD5Failure"] != 2 || m["TCPMD5NotFound"] != 3 {
		t.Errorf("%v %v", m, err)
	}
	for _, bad := range []string{"", "TcpExt: A B\nTcpExt: 1\n", "TcpExt: A\nTcpExt: x\n"} {
		if _, err := parseNetstat([]byte(bad), "TcpExt"); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// The running kernel's own netstat parses, and has the TcpExt counters
// every kernel since 2.6 keeps.
func TestTCPExt(t *testing.T) {
	m, err := TCPExt()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := m["TCPTimeouts"]; !ok {
		t.Errorf("no TCPTimeouts in %d TcpExt counters", len(m))
	}
}
