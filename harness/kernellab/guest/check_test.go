//go:build linux

package main

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tcpsig/tcpsig/harness/capture"
	"github.com/tcpsig/tcpsig/segment"
)

// committed is where the captures this program made are kept: the data
// stays in testvectors/, the program that makes it lives in the harness.
const committed = "../../../testvectors/linux"

// TestCommittedCaptures checks the committed captures against the committed
// manifest (structure only: every segment TCP, signed, KeyIDs and option
// lengths as configured, counts as stated). MAC verification of the same
// files is the ao package's job.
func TestCommittedCaptures(t *testing.T) {
	man, checks, err := checkDir(committed)
	if err != nil {
		t.Fatal(err)
	}
	if len(checks) != len(man.Captures) || len(checks) == 0 {
		t.Fatalf("%d checks for %d captures", len(checks), len(man.Captures))
	}
	for _, c := range checks {
		for _, e := range c.errs {
			t.Errorf("%s: %s", c.name, e)
		}
	}
}

// parseFrame, the guest's summary of a captured segment, reads every
// committed capture: every segment signed, timestamps where the features say
// so, and AO after TS in the TIME-WAIT captures only.
func TestParseFrameCommitted(t *testing.T) {
	man, _, err := checkDir(committed)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range man.Captures {
		lt, pkts, err := capture.ReadFile(filepath.Join(committed, c.File))
		if err != nil || lt != capture.LinkTypeEthernet {
			t.Fatalf("%s: %v, link type %v", c.File, err, lt)
		}
		aoAfterTS, allTS := false, true
		for i, p := range pkts {
			s, err := parseFrame(p.Data)
			if err != nil {
				t.Errorf("%s frame %d: %v", c.Name, i+1, err)
				continue
			}
			if !s.hasAO || s.aoLen != 4+c.Keys.AO[0].MACLen || len(s.opts) == 0 {
				t.Errorf("%s frame %d: %v opts %v", c.Name, i+1, s, s.opts)
			}
			aoAfterTS = aoAfterTS || s.opts[0] != 29 && s.hasTS
			allTS = allTS && s.hasTS
		}
		if want := slices.Contains(c.Features, "ao-after-ts"); aoAfterTS != want {
			t.Errorf("%s: a segment with AO after TS: %v, want %v", c.Name, aoAfterTS, want)
		}
		if want := slices.Contains(c.Features, "timestamps-all"); want && !allTS {
			t.Errorf("%s: a segment without TS", c.Name)
		}
	}
}

// A frame that is not TCP, or whose options cannot be followed, is an error.
func TestParseFrameErrors(t *testing.T) {
	eth := make([]byte, 14)
	eth[12], eth[13] = 0x08, 0x00
	tcp := segment.AppendTCP(nil, segment.Fields{SrcPort: 1, DstPort: 2, Flags: segment.ACK,
		Options: [][]byte{{8, 10, 0, 0, 0, 1, 0, 0, 0, 2}, {29, 16, 1, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}}})
	ip := []byte{0x45, 0, 0, 0, 0, 0, 0, 0, 64, 6, 0, 0, 127, 0, 0, 2, 127, 0, 0, 1}
	frame := func(tcp []byte, proto byte) []byte {
		ip := slices.Clone(ip)
		ip[9] = proto
		n := len(ip) + len(tcp)
		ip[2], ip[3] = byte(n>>8), byte(n)
		return slices.Concat(eth, ip, tcp)
	}
	s, err := parseFrame(frame(tcp, 6))
	if err != nil || !s.hasAO || s.keyID != 1 || s.rnextID != 2 || !s.hasTS || s.tsVal != 1 || s.tsEcr != 2 || s.sport != 1 {
		t.Fatalf("good frame: %v %+v", err, s)
	}
	if _, err := parseFrame(frame(tcp, 17)); !errors.Is(err, segment.ErrNotTCP) {
		t.Errorf("UDP frame: %v, want %v", err, segment.ErrNotTCP)
	}
	// An option in the last bytes whose length runs past the header: Linux's
	// (and segment's) walk for the auth options stops before it, gopacket's
	// stops at it; parseFrame must not pass it over in silence.
	ao := []byte{29, 16, 1, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	bad := segment.AppendTCP(nil, segment.Fields{SrcPort: 1, DstPort: 2, Flags: segment.ACK,
		Options: [][]byte{ao, {8, 10, 0, 0, 0, 1, 0, 0, 0, 2}, {3, 9}}})
	if _, err := parseFrame(frame(bad, 6)); err == nil || !strings.Contains(err.Error(), "malformed TCP option") {
		t.Errorf("frame with a runaway option accepted: %x", bad[20:])
	}
}
