package main

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"maps"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tcpsig/tcpsig/harness/capture"
	"github.com/tcpsig/tcpsig/segment"
)

// The ways testFixtures damages one signed frame of a kernel capture. The
// TCP checksum is left as it was: the verifier does not check it, and the
// captures' checksums are not filled in anyway (CHECKSUM_PARTIAL on lo).
const (
	damageMAC     = "mac"     // a bit of the MAC (TCP-AO) or digest (TCP-MD5)
	damagePayload = "payload" // a bit of the last payload byte
	damageHeader  = "header"  // a bit of the window field
	damageOption  = "option"  // a value byte of an option other than TCP-AO/TCP-MD5
	damagePort    = "port"    // the source port, to one no frame of the capture uses
)

var damages = []string{damageMAC, damagePayload, damageHeader, damageOption, damagePort}

// damaged is a copy of a capture with one frame damaged.
type damaged struct {
	path  string // the copy, in the test's temporary directory
	frame int    // the damaged frame, numbered from 1 as the verifier does; 0: no frame could be damaged this way
	what  string // what was changed, for messages
	opt   string // for "option": the option's name
	// For "port": the frame's sender as captured and as damaged, and its
	// receiver.
	src, newSrc, dst netip.AddrPort
}

// damage writes a copy of the pcap file with one signed segment damaged
// the way kind says: the middle one of those that can be (a payload for
// "payload", an option besides the signature's for "option", not a SYN for
// "port"). The file is read and written with harness/capture (pcapgo).
func damage(t testing.TB, file, kind string) damaged {
	t.Helper()
	lt, pkts, err := capture.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	ports := map[uint16]bool{}
	var cands []int
	for i, p := range pkts {
		seg, ok := packetSegment(lt, p)
		if !ok {
			continue
		}
		ports[seg.Header().SrcPort()], ports[seg.Header().DstPort()] = true, true
		if seg.Auth().AO == 0 && seg.Auth().MD5 == 0 {
			continue
		}
		switch kind {
		case damagePayload:
			if len(seg.Payload()) == 0 {
				continue
			}
		case damageOption:
			if _, _, ok := otherOption(seg.Header()); !ok {
				continue
			}
		case damagePort:
			if seg.Header().Flags()&segment.SYN != 0 {
				continue
			}
		}
		cands = append(cands, i)
	}
	if len(cands) == 0 {
		return damaged{}
	}
	i := cands[len(cands)/2]
	pkts[i].Data = slices.Clone(pkts[i].Data)
	seg, _ := packetSegment(lt, pkts[i])
	h := seg.Header()
	var what, opt string
	var src, newSrc, dst netip.AddrPort
	switch kind {
	case damageMAC:
		at := seg.Auth().AO + 4
		if seg.Auth().AO == 0 {
			at = seg.Auth().MD5 + 2
		}
		h[at] ^= 0x10
		what = fmt.Sprintf("MAC byte at TCP offset %d", at)
	case damagePayload:
		seg.Payload()[len(seg.Payload())-1] ^= 0x01
		what = fmt.Sprintf("payload byte %d of %d", len(seg.Payload()), len(seg.Payload()))
	case damageHeader:
		h[15] ^= 0x01 // the window's low byte
		what = fmt.Sprintf("window %d→%d", h.Window()^1, h.Window())
	case damageOption:
		at, okind, _ := otherOption(h)
		h[at] ^= 0x01
		opt = optionName(okind)
		what = fmt.Sprintf("%s option byte at TCP offset %d", opt, at)
	case damagePort:
		old := h.SrcPort()
		p := old + 1
		for ports[p] || p == 0 {
			p++
		}
		binary.BigEndian.PutUint16(h[0:], p)
		what = fmt.Sprintf("source port %d→%d", old, p)
		src = netip.AddrPortFrom(seg.Src().Unmap(), old)
		newSrc = netip.AddrPortFrom(seg.Src().Unmap(), p)
		dst = netip.AddrPortFrom(seg.Dst().Unmap(), h.DstPort())
	default:
		t.Fatalf("no damage %q", kind)
	}
	path := filepath.Join(t.TempDir(), kind+".pcap")
	if err := capture.WriteFile(path, lt, pkts); err != nil {
		t.Fatal(err)
	}
	return damaged{path: path, frame: i + 1, what: what, opt: opt, src: src, newSrc: newSrc, dst: dst}
}

// packetSegment parses the TCP segment of a captured packet; its views
// share the packet's bytes.
func packetSegment(lt capture.LinkType, p capture.Packet) (segment.Segment, bool) {
	ip := lt.IP(p.Data)
	if ip == nil {
		return segment.Segment{}, false
	}
	seg, err := segment.ParsePacket(ip)
	return seg, err == nil
}

// otherOption finds, in a TCP header, the first option other than TCP-AO
// and TCP-MD5 that has a value (MSS, window scale, timestamps, SACK
// blocks…), and returns the offset within the header of a value byte to
// change (the last of TSval for timestamps, the option's last byte
// otherwise) and the option's kind. Kind and length bytes, NOPs and EOL
// are never chosen, so the option list stays well formed.
func otherOption(h segment.TCP) (at int, kind byte, ok bool) {
	end := h.DataOffset()
	for i := segment.TCPMinimumSize; i < end; {
		switch h[i] {
		case segment.OptionKindEOL:
			return 0, 0, false
		case segment.OptionKindNOP:
			i++
			continue
		}
		if i+1 >= end {
			return 0, 0, false
		}
		size := int(h[i+1])
		if size < 2 || i+size > end {
			return 0, 0, false
		}
		switch {
		case h[i] == segment.OptionKindAO || h[i] == segment.OptionKindMD5 || size == 2:
		case h[i] == optionKindTimestamps && size == 10:
			return i + 5, h[i], true
		default:
			return i + size - 1, h[i], true
		}
		i += size
	}
	return 0, 0, false
}

const optionKindTimestamps = 8

func optionName(kind byte) string {
	switch kind {
	case 2:
		return "MSS"
	case 3:
		return "window-scale"
	case 5:
		return "SACK"
	case optionKindTimestamps:
		return "timestamps"
	}
	return fmt.Sprintf("kind-%d", kind)
}

// excludesOptions reports whether the TCP-AO MKTs of a keys file have
// exclude_options set (TCP_AO_KEYF_EXCLUDE_OPT): all of them, or none; a
// mix would make the expectation depend on the frame, and is refused.
func excludesOptions(t testing.TB, keys json.RawMessage) bool {
	t.Helper()
	var k struct {
		AO []struct {
			Exclude bool `json:"exclude_options"`
		} `json:"ao"`
	}
	if err := json.Unmarshal(keys, &k); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, m := range k.AO {
		if m.Exclude {
			n++
		}
	}
	if n != 0 && n != len(k.AO) {
		t.Fatalf("%d of %d MKTs exclude options: the test expects all or none", n, len(k.AO))
	}
	return n != 0
}

// damageStats counts, across the fixtures of a directory, what one kind
// of damage was tried on and what came of it.
type damageStats struct {
	fixtures int            // fixtures with a frame damaged this way
	verdicts map[string]int // the damaged frames' verdicts
	options  map[string]int // for "option": the options changed, by name
	others   int            // the other segments of the damaged copies, all good
}

// fixtureStats is what testFixtures logs at the end.
type fixtureStats struct {
	fixtures, good, checked int
	byKind                  map[string]*damageStats // by damage, "option" split by coverage
	order                   []string
}

func (s *fixtureStats) kind(name string) *damageStats {
	if s.byKind == nil {
		s.byKind = map[string]*damageStats{}
	}
	d, ok := s.byKind[name]
	if !ok {
		d = &damageStats{verdicts: map[string]int{}, options: map[string]int{}}
		s.byKind[name] = d
		s.order = append(s.order, name)
	}
	return d
}

func (s *fixtureStats) log(t *testing.T) {
	t.Logf("%d fixtures, %d of %d segments good", s.fixtures, s.good, s.checked)
	for _, name := range s.order {
		d := s.byKind[name]
		var v []string
		for _, k := range slices.Sorted(maps.Keys(d.verdicts)) {
			v = append(v, fmt.Sprintf("%s %d", k, d.verdicts[k]))
		}
		for _, k := range slices.Sorted(maps.Keys(d.options)) {
			v = append(v, fmt.Sprintf("%s %d", k, d.options[k]))
		}
		t.Logf("%-18s %2d fixtures, %2d frames damaged (%s), %4d other segments good", name, d.fixtures, d.fixtures, strings.Join(v, ", "), d.others)
	}
}
