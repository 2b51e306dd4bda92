package main

import (
	"bytes"
	"net/netip"
	"syscall"
	"testing"

	"github.com/tcpsig/tcpsig/harness/netns"
	"github.com/tcpsig/tcpsig/pcapverify"
)

// TestLiveExplainNoKeys: tcpsig verify -i lo -json -explain, without
// -keys, in a namespace of its own while a client that signs with TCP-MD5
// and a server that signs with TCP-AO (mixedFlow's packets, sent through
// a raw socket) talk past each other: every signed segment is no-key, and
// the summary names auth-kind for both directions and nothing else.
// Without -explain, -keys is still required live.
func TestLiveExplainNoKeys(t *testing.T) {
	needNetns(t)
	client, server := netip.MustParseAddrPort("192.0.2.71:40000"), netip.MustParseAddrPort("192.0.2.72:179")
	pkts := pcapPackets(t, mixedFlow(t, client, server, true))
	sink, errOut := newLiveSink(), &bytes.Buffer{}
	var code int
	err := netns.Run(func() error {
		for _, a := range []netip.Addr{client.Addr(), server.Addr()} {
			if err := netns.AddAddr("lo", netip.PrefixFrom(a, 32)); err != nil {
				return err
			}
		}
		// Made on this thread: the socket sends in the namespace.
		fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_RAW, syscall.IPPROTO_RAW)
		if err != nil {
			return err
		}
		defer syscall.Close(fd)
		stop := make(chan struct{})
		traffic := func() {
			defer close(stop)
			for _, p := range pkts {
				if err := syscall.Sendto(fd, p, 0, &syscall.SockaddrInet4{Addr: [4]byte(p[16:20])}); err != nil {
					t.Errorf("sendto: %v", err)
					return
				}
			}
			sink.await(t, "every signed segment", func(segs []segmentJSON) bool { return len(segs) >= len(pkts) })
		}
		code = runLiveCLI([]string{"verify", "-json", "-explain", "-every", "100ms", "-i", "lo", "-port", "179"}, sink, errOut, traffic, stop)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	segs, sum := jsonLines(t, sink.String())
	if code != exitFailed || errOut.Len() != 0 || sum.Summary.Diagnoses == nil {
		t.Fatalf("exit %d, stderr %q, summary %+v", code, errOut, sum.Summary)
	}
	got := map[dir]pcapverify.Diagnosis{}
	for _, d := range *sum.Summary.Diagnoses {
		got[dir{d.From, d.To}] = d
	}
	checkDiagnoses(t, got, "auth-kind", []dir{{client.String(), server.String()}, {server.String(), client.String()}})
	if v := verdictsOf(segs); v["no-key"] != len(pkts) || len(v) != 1 {
		t.Errorf("verdicts %v, want %d no-key", v, len(pkts))
	}
	if code, _, errOut := cli(t, "verify", "-i", "lo"); code != exitError || !bytes.Contains([]byte(errOut), []byte("-keys FILE is required to verify live packets")) {
		t.Errorf("live without -keys or -explain: exit %d: %s", code, errOut)
	}
}

// pcapPackets returns the IP packets of a pcap file.
func pcapPackets(t *testing.T, pcap []byte) [][]byte {
	t.Helper()
	c, err := pcapverify.Open(bytes.NewReader(pcap))
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for {
		ip, _, err := c.Next()
		if err != nil {
			return out
		}
		out = append(out, bytes.Clone(ip))
	}
}
