package main

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/gopacket/gopacket/layers"

	"github.com/tcpsig/tcpsig/internal/segment"
)

// The kernel captures: testvectors/md5 (TCP-MD5, host kernel) and
// testvectors/linux (TCP-AO, Linux 6.12 under qemu). Their manifests'
// "keys" objects are keys files of this command; "isn" and "sne" are given
// where the handshake is not on the wire.

type fixture struct {
	dir, name, file string
	keys            json.RawMessage
	isn, sne        map[string]uint32
	packets         int
}

// fixtures lists the captures of a testvectors directory; it skips the
// test when the directory has no manifest yet.
func fixtures(t *testing.T, dir string) []fixture {
	t.Helper()
	dir = filepath.Join("..", "..", "testvectors", dir)
	b, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if os.IsNotExist(err) {
		t.Skipf("%s/manifest.json is not there yet", dir)
	}
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Captures []struct {
			Name    string            `json:"name"`
			File    string            `json:"file"`
			Keys    json.RawMessage   `json:"keys"`
			ISN     map[string]uint32 `json:"isn"`
			SNE     map[string]uint32 `json:"sne"`
			Packets int               `json:"packets"`
		} `json:"captures"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s/manifest.json: %v", dir, err)
	}
	var fs []fixture
	for _, c := range m.Captures {
		fs = append(fs, fixture{dir: dir, name: c.Name, file: filepath.Join(dir, c.File), keys: c.Keys, isn: c.ISN, sne: c.SNE, packets: c.Packets})
	}
	if len(fs) == 0 {
		t.Fatalf("%s/manifest.json lists no captures", dir)
	}
	return fs
}

// flags are the fixture's -isn and -sne flags.
func (f fixture) flags() []string {
	var flags []string
	for _, m := range []struct {
		flag string
		v    map[string]uint32
	}{{"-isn", f.isn}, {"-sne", f.sne}} {
		for ep, n := range m.v {
			flags = append(flags, m.flag, fmt.Sprintf("%s=%d", ep, n))
		}
	}
	return flags
}

// args is the command line that verifies the fixture (or pcap instead of
// its file) with -json.
func (f fixture) args(t *testing.T, pcap string) []string {
	args := append([]string{"verify", "-json", "-keys", writeFile(t, "keys.json", f.keys)}, f.flags()...)
	if pcap == "" {
		pcap = f.file
	}
	return append(args, pcap)
}

func TestMD5Fixtures(t *testing.T)     { testFixtures(t, "md5") }
func TestLinuxAOFixtures(t *testing.T) { testFixtures(t, "linux") }

// testFixtures: every capture verifies, every signed segment good (exit
// 0); a copy with one bit flipped in a MAC, and one with a bit flipped in
// a payload, each has exactly that segment bad (exit 1).
func testFixtures(t *testing.T, dir string) {
	for _, f := range fixtures(t, dir) {
		t.Run(f.name, func(t *testing.T) {
			code, out, errOut := cli(t, f.args(t, "")...)
			segs, sum := jsonLines(t, out)
			if code != 0 || errOut != "" {
				t.Fatalf("exit %d, stderr %q, verdicts %v", code, errOut, verdictsOf(segs))
			}
			if f.packets != 0 && sum.Summary.Packets != uint64(f.packets) {
				t.Errorf("%d packets, the manifest says %d", sum.Summary.Packets, f.packets)
			}
			if n := sum.Summary.Verdicts.Good; n == 0 || n != sum.Summary.Checked {
				t.Fatalf("%d good of %d checked", n, sum.Summary.Checked)
			}
			raw, err := os.ReadFile(f.file)
			if err != nil {
				t.Fatal(err)
			}
			for _, where := range []string{"mac", "payload"} {
				bad, frame := corrupt(t, raw, where)
				code, out, _ := cli(t, f.args(t, writeFile(t, "bad.pcap", bad))...)
				segs, _ := jsonLines(t, out)
				if code != 1 {
					t.Errorf("%s flipped in frame %d: exit %d, want 1", where, frame, code)
				}
				for _, s := range segs {
					want := "good"
					if s.Frame == frame {
						want = "bad"
					}
					if s.Verdict != want {
						t.Errorf("%s flipped in frame %d: frame %d is %s (%s), want %s", where, frame, s.Frame, s.Verdict, s.Reason, want)
					}
				}
			}
		})
	}
}

// pcapRecord is a record of a classic pcap file held in memory.
type pcapRecord struct {
	off, n int // the frame's bytes are file[off:off+n]
	ipOff  int // where its IP packet starts, -1 if none
}

// pcapRecords indexes a classic pcap file.
func pcapRecords(t testing.TB, b []byte) (lt uint32, recs []pcapRecord) {
	t.Helper()
	var o binary.ByteOrder = binary.LittleEndian
	if binary.BigEndian.Uint32(b) == pcapMagicMicro || binary.BigEndian.Uint32(b) == pcapMagicNano {
		o = binary.BigEndian
	}
	lt = o.Uint32(b[20:])
	var d linkDecoder
	for off := 24; off+16 <= len(b); {
		n := int(o.Uint32(b[off+8:]))
		r := pcapRecord{off: off + 16, n: n, ipOff: -1}
		if ip := d.ip(layers.LinkType(lt), b[r.off:r.off+n]); ip != nil {
			r.ipOff = r.off + n - len(ip)
		}
		recs = append(recs, r)
		off += 16 + n
	}
	return lt, recs
}

// corrupt returns a copy of a pcap file with one bit flipped in the MAC
// ("mac") or the last payload byte ("payload") of a signed data segment
// in the middle of the capture, and that frame's number.
func corrupt(t testing.TB, b []byte, where string) ([]byte, int) {
	t.Helper()
	_, recs := pcapRecords(t, b)
	var cands []int
	for i, r := range recs {
		if r.ipOff < 0 {
			continue
		}
		seg, err := segment.ParsePacket(b[r.ipOff : r.off+r.n])
		if err != nil || (seg.Auth.AO < 0 && seg.Auth.MD5 < 0) || (where == "payload" && len(seg.Payload) == 0) {
			continue
		}
		cands = append(cands, i)
	}
	if len(cands) == 0 {
		t.Fatalf("no signed segment to corrupt at %s", where)
	}
	i := cands[len(cands)/2]
	r := recs[i]
	out := slices.Clone(b)
	ip := out[r.ipOff : r.off+r.n]
	seg, _ := segment.ParsePacket(ip)
	switch where {
	case "mac":
		at := seg.Auth.AO + 4
		if seg.Auth.AO < 0 {
			at = seg.Auth.MD5 + 2
		}
		seg.Header[at] ^= 0x10
	case "payload":
		seg.Payload[len(seg.Payload)-1] ^= 0x01
	}
	return out, i + 1
}

// withoutHandshake returns a copy of a pcap file without its SYN and
// SYN-ACK segments, and the ISNs they carried by endpoint.
func withoutHandshake(t testing.TB, b []byte) ([]byte, map[string]uint32) {
	t.Helper()
	_, recs := pcapRecords(t, b)
	out := slices.Clone(b[:24])
	isn := map[string]uint32{}
	for _, r := range recs {
		if r.ipOff >= 0 {
			if seg, err := segment.ParsePacket(b[r.ipOff : r.off+r.n]); err == nil && seg.Header.Flags()&segment.SYN != 0 {
				isn[netip.AddrPortFrom(seg.Src.Unmap(), seg.Header.SrcPort()).String()] = seg.Header.Seq()
				continue
			}
		}
		out = append(out, b[r.off-16:r.off+r.n]...)
	}
	return out, isn
}

// The built-in kernel capture with its handshake cut: every segment is
// unknown-isn (exit 0: nothing failed, nothing checked), then good with
// the two ISNs on the command line.
func TestKernelCaptureWithoutHandshake(t *testing.T) {
	pcap, isn := withoutHandshake(t, demoPcap)
	if len(isn) != 2 {
		t.Fatalf("handshake ISNs %v", isn)
	}
	code, segs, sum, _ := verifyPcap(t, pcap, demoKeys(t))
	if code != 0 || sum.Summary.Verdicts.UnknownISN == 0 || sum.Summary.Verdicts.UnknownISN != sum.Summary.Checked {
		t.Fatalf("exit %d, verdicts %+v", code, sum.Summary.Verdicts)
	}
	var flags []string
	for ep, n := range isn {
		flags = append(flags, "-isn", fmt.Sprintf("%s=%d", ep, n))
	}
	code, segs2, _, _ := verifyPcap(t, pcap, demoKeys(t), flags...)
	if code != 0 {
		t.Fatalf("with -isn: exit %d", code)
	}
	wantVerdicts(t, segs2, map[string]int{"good": len(segs)})
}

// The kernel's TCP_REPAIR pairs restored at SNE 3: without -sne every
// segment is bad, without -isn unknown-isn.
func TestKernelSNEFlags(t *testing.T) {
	for _, f := range fixtures(t, "linux") {
		if f.name != "hmac-sha1-v6-maclen12-snewrap-sne3-rst-client" {
			continue
		}
		noSNE := f
		noSNE.sne = nil
		code, _, sum, _ := verifyPcap(t, mustRead(t, f.file), f.keys, noSNE.flags()...)
		if code != 1 || sum.Summary.Verdicts.Bad == 0 {
			t.Errorf("without -sne: exit %d, verdicts %+v", code, sum.Summary.Verdicts)
		}
		code, _, sum, _ = verifyPcap(t, mustRead(t, f.file), f.keys)
		if code != 0 || sum.Summary.Verdicts.UnknownISN != sum.Summary.Checked {
			t.Errorf("without -isn: exit %d, verdicts %+v", code, sum.Summary.Verdicts)
		}
		return
	}
	t.Skip("the sne3 capture is not in testvectors/linux")
}

func mustRead(t *testing.T, path string) []byte {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
