package main

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"

	"github.com/gopacket/gopacket/pcapgo"

	"github.com/tcpsig/tcpsig/pcapverify"
)

// A pcapng of two sections, little- then big-endian, each with interfaces
// of different link types: every frame is read with its interface's.
func TestPcapngSectionsAndInterfaces(t *testing.T) {
	cv := newConvo(t, convoConfig{client: cli6, server: srv6, clientISN: 1, serverISN: 2, mkts: sha1MKTs()})
	cv.session(2, 1)
	v4 := newConvo(t, convoConfig{client: cli4, server: srv4, clientISN: 3, serverISN: 4, mkts: sha1MKTs()})
	v4.session(2, 0)
	frames := func(lts []uint32, pkts [][]byte) [][]byte {
		out := make([][]byte, len(pkts))
		for i, p := range pkts {
			out[i] = frameOf(lts[i%len(lts)], p)
		}
		return out
	}
	le, be := []uint32{ltEthernet, ltSLL2, ltNull}, []uint32{ltRaw, ltSLL, ltLoop}
	file := append(pcapngSection(binary.LittleEndian, le, frames(le, cv.pkts)),
		pcapngSection(binary.BigEndian, be, frames(be, v4.pkts))...)
	code, segs, sum, errOut := verifyPcap(t, file, mergeKeys(t, cv.keys(), v4.keys()))
	if code != 0 || len(sum.Summary.Files[0].Flows) != 2 {
		t.Fatalf("exit %d %s, flows %d", code, errOut, len(sum.Summary.Files[0].Flows))
	}
	wantVerdicts(t, segs, map[string]int{"good": len(cv.pkts) + len(v4.pkts)})
}

// hostile are captures whose lengths lie.
func hostile() map[string][]byte {
	good := pcapFile(ltEthernet, false, [][]byte{make([]byte, 60)})
	ng := pcapngFile(ltEthernet, [][]byte{make([]byte, 60)})
	epb := len(ng) - 92 // the EPB: 32 bytes of fields, 60 of frame
	le := binary.LittleEndian
	with := func(b []byte, at int, v uint32) []byte {
		b = bytes.Clone(b)
		le.PutUint32(b[at:], v)
		return b
	}
	ngBlock := func(typ uint32, body []byte) []byte {
		b := le.AppendUint32(nil, typ)
		b = le.AppendUint32(b, uint32(12+len(body)))
		return le.AppendUint32(append(b, body...), uint32(12+len(body)))
	}
	return map[string][]byte{
		"pcap-record-4GiB":      with(with(with(good, 16, 1<<32-1), 24+8, 1<<32-1), 24+12, 1<<32-1), // snap and original length too
		"pcap-record-1GiB":      with(good, 24+8, 1<<30),
		"pcapng-epb-4GiB":       with(ng, epb+20, 1<<32-1),
		"pcapng-epb-past-block": with(ng, epb+20, 1<<20),
		"pcapng-block-4GiB":     with(ng, epb+4, 1<<32-4),
		"pcapng-block-short":    with(ng, epb+4, 16),
		"pcapng-idb-option":     append(ng[:28:28], ngBlock(pcapngIDB, []byte{1, 0, 0, 0, 0, 0, 4, 0, 2, 0, 0xff, 0xff})...),
		"pcapng-spb-4GiB":       append(ng[:epb:epb], ngBlock(pcapngSPB, le.AppendUint32(nil, 1<<32-1))...),
		"pcapng-dsb-4GiB":       append(ng[:epb:epb], ngBlock(10, []byte{0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff})...),
		"pcapng-isb-no-iface":   append(ng[:epb:epb], ngBlock(5, make([]byte, 12))...),
	}
}

// Lengths in a capture that lie make neither a panic nor an allocation
// of what they claim: reading any of them, followed by 2 MiB that a
// reader trusting them would buffer, allocates under 1 MiB.
func TestHostileLengths(t *testing.T) {
	tail := make([]byte, 2<<20)
	m := hostile()
	for name, b := range m {
		m[name] = append(b, tail...)
	}
	var gz bytes.Buffer
	z := gzip.NewWriter(&gz)
	z.Write(m["pcap-record-4GiB"])
	z.Close()
	m["pcap.gz-record-4GiB"] = gz.Bytes()
	for name, b := range m {
		t.Run(name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			err := readAll(b)
			runtime.ReadMemStats(&after)
			if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
				t.Errorf("allocated %d bytes", n)
			}
			if err == nil || strings.ContainsAny(err.Error(), "\n\r") {
				t.Errorf("err = %v", err)
			}
		})
	}
}

// readAll reads a capture to its end; nil if all of it was read.
func readAll(b []byte) error {
	c, err := pcapverify.Open(bytes.NewReader(b))
	if err != nil {
		return err
	}
	for {
		if _, _, err := c.Next(); err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
	}
}

// maxInterfaces is pcapverify's bound on the interfaces of a section.
const maxInterfaces = 1 << 16

// More interfaces in a section than maxInterfaces is an error: pcapgo
// keeps far more per interface than its block takes in the file.
func TestPcapngTooManyInterfaces(t *testing.T) {
	ng := pcapngFile(ltEthernet, [][]byte{make([]byte, 60)})
	idb := ng[28:48]
	b := bytes.Clone(ng[:28])
	for range maxInterfaces + 1 {
		b = append(b, idb...)
	}
	if err := readAll(b); err == nil || !strings.Contains(err.Error(), "interfaces in a section") {
		t.Errorf("err = %v", err)
	}
}

// Why ngGuard stands before pcapgo's NgReader: pcapgo trusts a block's
// lengths, so a block shorter than its fields, or a packet longer than
// its block, wraps its count of the block's bytes left. It then skips the
// rest of the file as part of that block, losing the packets there, and
// blames the end of the file. Should this test fail, pcapgo has learnt to
// check, and ngGuard's framing checks can go.
func TestPcapgoTrustsBlockLengths(t *testing.T) {
	frames := [][]byte{make([]byte, 60), make([]byte, 60), make([]byte, 60)}
	ng := pcapngFile(ltEthernet, frames)
	idbLen := bytes.Clone(ng)
	binary.LittleEndian.PutUint32(idbLen[28+4:], 13)
	capLen := bytes.Clone(ng)
	binary.LittleEndian.PutUint32(capLen[len(ng)-3*92+20:], 100) // the first EPB's
	for _, tc := range []struct {
		name, guard string
		file        []byte
	}{
		{"interface block of 13 bytes", "pcapng: block of length 13", idbLen},
		{"packet of 100 bytes in a block of 92", "pcapng: packet of 100 bytes in a block of 92", capLen},
	} {
		r, err := pcapgo.NewNgReader(bytes.NewReader(tc.file), pcapgo.NgReaderOptions{WantMixedLinkType: true})
		n := 0
		for err == nil {
			if _, _, err = r.ZeroCopyReadPacketData(); err == nil {
				n++
			}
		}
		if n == len(frames) || !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("%s: pcapgo read %d packets of %d, then %v: does it check block lengths now?", tc.name, n, len(frames), err)
		}
		if err := readAll(tc.file); err == nil || err.Error() != tc.guard {
			t.Errorf("%s: through the guard, err = %v, want %q", tc.name, err, tc.guard)
		}
	}
}

// Reading a frame allocates nothing: pcapgo reads into a buffer it keeps.
// (In pcapng, a frame of a link type above 255, SLL2 for one, costs a
// 2-byte allocation: pcapgo puts its link type in an interface.)
func TestReadAllocations(t *testing.T) {
	frames := make([][]byte, 3000)
	for i := range frames {
		frames[i] = make([]byte, 100)
	}
	for name, b := range map[string][]byte{
		"pcap":   pcapFile(ltEthernet, false, frames),
		"pcapng": pcapngFile(ltEthernet, frames),
	} {
		c, err := pcapverify.Open(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		if n := testing.AllocsPerRun(2000, func() {
			if _, _, err := c.Next(); err != nil {
				t.Fatal(err)
			}
		}); n != 0 {
			t.Errorf("%s: %v allocations per frame", name, n)
		}
	}
}
