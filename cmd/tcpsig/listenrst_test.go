package main

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/tcpsig/tcpsig/segment"
	"github.com/tcpsig/tcpsig/testvectors/linux"
)

// TestVerifyLinuxListenReset runs verify on real Linux 6.12 packets
// (testvectors/linux: listen-rst.json): a bare ACK for no connection and
// the RST a TCP-AO listener answered it with, signed the way only a
// listening socket signs (key of the ACK's direction, ISNs (its seq, 0)).
// No peer accepts that RST, so it is bad, but the reason must say what it
// is — with or without the ISNs — while a RST with one MAC bit flipped is
// an ordinary bad MAC (or unknown-isn without ISNs).
func TestVerifyLinuxListenReset(t *testing.T) {
	cases, err := linux.ListenResets()
	if err != nil {
		t.Fatal(err)
	}
	const listenerRST = "a Linux listener's RST for a connection it does not know"
	for _, c := range cases {
		ack, rst := c.ACK, c.RST
		in, err := segment.ParsePacket(ack)
		if err != nil {
			t.Fatal(err)
		}
		keys := writeFile(t, "keys.json", fmt.Appendf(nil, `{"ao": [{"alg": %q, "key": "hex:%x", "sndid": %d, "rcvid": %d, "peer": %q, "maclen": %d}]}`,
			c.Alg, c.Key, c.SendID, c.RecvID, c.Peer, c.MACLen))
		bent := append([]byte(nil), rst...)
		bent[len(bent)-1] ^= 1
		isns := []string{
			"-isn", fmt.Sprintf("%v=%d", netip.AddrPortFrom(in.Src(), in.Header().SrcPort()), in.Header().Seq()-1),
			"-isn", fmt.Sprintf("%v=%d", netip.AddrPortFrom(in.Dst(), in.Header().DstPort()), in.Header().Ack()-1),
		}
		for _, tc := range []struct {
			name             string
			rst              []byte
			isn              []string
			ackVerdict, want string // the ACK's verdict; the RST's reason starts so
		}{
			{"listener RST", rst, nil, "unknown-isn", listenerRST},
			{"listener RST, syncookie ISNs", rst, isns, "good", listenerRST},
			{"flipped MAC bit", bent, isns, "good", "MAC does not match"},
			{"flipped MAC bit, no ISNs", bent, nil, "unknown-isn", "ISN of"},
		} {
			capFile := writeFile(t, "c.pcap", pcapFile(ltRaw, false, [][]byte{ack, tc.rst}))
			args := append([]string{"verify", "-json", "-keys", keys}, tc.isn...)
			code, out, errOut := cli(t, append(args, capFile)...)
			segs, _ := jsonLines(t, out)
			if len(segs) != 2 {
				t.Fatalf("%s %s: %d segments (exit %d, %s)", c.Name, tc.name, len(segs), code, errOut)
			}
			if segs[0].Verdict != tc.ackVerdict {
				t.Errorf("%s %s: ACK %s (%s), want %s", c.Name, tc.name, segs[0].Verdict, segs[0].Reason, tc.ackVerdict)
			}
			wantVerdict := "bad"
			if strings.HasPrefix(tc.want, "ISN") {
				wantVerdict = "unknown-isn"
			}
			if r := segs[1]; r.Verdict != wantVerdict || !strings.HasPrefix(r.Reason, tc.want) {
				t.Errorf("%s %s: RST %s: %q, want %s: %q…", c.Name, tc.name, r.Verdict, r.Reason, wantVerdict, tc.want)
			}
			wantCode := 0 // a good ACK
			switch {
			case wantVerdict == "bad":
				wantCode = 1
			case tc.ackVerdict != "good":
				wantCode = 3 // nothing verified
			}
			if code != wantCode {
				t.Errorf("%s %s: exit %d, want %d", c.Name, tc.name, code, wantCode)
			}
		}
	}
}
