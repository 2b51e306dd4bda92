package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tcpsig/tcpsig/pcapverify"
	"github.com/tcpsig/tcpsig/segment"
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
// 0). Then copies with one frame damaged, each a separate run:
//
//   - a MAC bit, a payload bit, a window bit: that frame bad, exit 1;
//   - a value byte of an option other than TCP-AO/TCP-MD5 (timestamps,
//     MSS, window scale, SACK): that frame bad when the MKTs cover options,
//     good when they exclude them (TCP_AO_KEYF_EXCLUDE_OPT) and for TCP-MD5
//     (RFC 2385 does not cover options), exit 0;
//   - the source port of a mid-flow frame: that frame not good, exit 1
//     exactly when its verdict fails. With TCP-MD5, whose keys go by
//     address, it is bad; with TCP-AO it falls into a new flow whose ISNs
//     are unknown (unknown-isn), and is bad once -isn/-sne give that flow
//     the original's ISNs and SNE (portWithISNs).
//
// Every other segment of a damaged copy stays good. One frame per fixture
// per damage; the counts are logged. Run over the whole directory, the
// TCP-AO captures must include MKTs that cover options and MKTs that
// exclude them, each with an option changed.
func testFixtures(t *testing.T, dir string) {
	var st fixtureStats
	fs := fixtures(t, dir)
	for _, f := range fs {
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
			st.fixtures++
			st.good += int(sum.Summary.Verdicts.Good)
			st.checked += int(sum.Summary.Checked)
			md5 := segs[0].Kind == "md5"
			excl := !md5 && excludesOptions(t, f.keys)
			if excl != strings.Contains(f.name, "exclopt") {
				t.Fatalf("exclude_options %v, but the name says otherwise", excl)
			}
			for _, kind := range damages {
				d := damage(t, f.file, kind)
				if d.frame == 0 {
					if kind != damageOption {
						t.Fatalf("no signed segment to damage (%s)", kind)
					}
					t.Logf("no frame carries an option besides the signature")
					continue
				}
				want, label := "bad", kind
				switch {
				case kind == damageOption && md5:
					want, label = "good", "option (md5)"
				case kind == damageOption && excl:
					want, label = "good", "option (excluded)"
				case kind == damageOption:
					label = "option (covered)"
				case kind == damagePort && !md5:
					want = "not good"
				}
				code, out, errOut := cli(t, f.args(t, d.path)...)
				dsegs, _ := jsonLines(t, out)
				if errOut != "" {
					t.Errorf("%s in frame %d: stderr %q", d.what, d.frame, errOut)
				}
				if len(dsegs) != len(segs) {
					t.Errorf("%s in frame %d: %d segments judged, %d in the original", d.what, d.frame, len(dsegs), len(segs))
				}
				ds := st.kind(label)
				ds.fixtures++
				if d.opt != "" {
					ds.options[d.opt]++
				}
				var got *segmentJSON
				for k, s := range dsegs {
					if s.Frame == d.frame {
						got = &dsegs[k]
						ds.verdicts[s.Verdict]++
						continue
					}
					if s.Verdict != "good" {
						t.Errorf("%s in frame %d: frame %d is %s (%s), want good", d.what, d.frame, s.Frame, s.Verdict, s.Reason)
						continue
					}
					ds.others++
				}
				if got == nil {
					t.Errorf("%s in frame %d: the frame was not judged", d.what, d.frame)
					continue
				}
				ok := got.Verdict == want || (want == "not good" && got.Verdict != "good")
				if !ok {
					t.Errorf("%s in frame %d: %s (%s), want %s", d.what, d.frame, got.Verdict, got.Reason, want)
				}
				wantCode := 0
				if got.Verdict != "good" && got.Verdict != "unknown-isn" {
					wantCode = 1
				}
				if code != wantCode {
					t.Errorf("%s in frame %d (%s): exit %d, want %d", d.what, d.frame, got.Verdict, code, wantCode)
				}
				if kind == damagePort && !md5 {
					portWithISNs(t, f, segs, d, st.kind("port, ISNs given"))
				}
			}
		})
	}
	st.log(t)
	if t.Failed() || st.fixtures != len(fs) { // a failure, or -run chose some
		return
	}
	// Both kinds of TCP-AO MKT had an option changed, and the TCP-MD5
	// captures too if any of their frames carries an option.
	for _, label := range []string{"option (covered)", "option (excluded)"} {
		if dir != "md5" && (st.byKind[label] == nil || st.byKind[label].fixtures == 0) {
			t.Errorf("no frame had an option changed under MKTs with %s", label)
		}
	}
}

// portWithISNs verifies a TCP-AO capture whose frame d.frame had its
// source port changed again, now with -isn and -sne flags that give the
// damaged frame's new flow the ISNs and SNE of the original: the flow is
// then fully known, so the frame is bad because the port is authenticated
// (it is in the traffic keys' context and in the MACed header), not
// merely unjudgeable. segs are the verdicts of the undamaged capture.
func portWithISNs(t *testing.T, f fixture, segs []segmentJSON, d damaged, ds *damageStats) {
	t.Helper()
	g := f
	g.isn, g.sne = map[string]uint32{}, maps.Clone(f.sne)
	isn := map[string]uint32{}
	for ep, n := range f.isn {
		ap, err := netip.ParseAddrPort(ep)
		if err != nil {
			t.Fatal(err)
		}
		ep = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()).String()
		isn[ep], g.isn[ep] = n, n
	}
	var sne *uint32
	for _, s := range segs {
		if (s.Flags == "S" || s.Flags == "S.") && s.Seq != nil {
			isn[s.Src] = *s.Seq
		}
		if s.Frame == d.frame {
			sne = s.SNE
		}
	}
	srcISN, ok1 := isn[d.src.String()]
	dstISN, ok2 := isn[d.dst.String()]
	if !ok1 || !ok2 || sne == nil {
		t.Fatalf("frame %d: ISNs of %v and %v, or the SNE, unknown", d.frame, d.src, d.dst)
	}
	g.isn[d.newSrc.String()], g.isn[d.dst.String()] = srcISN, dstISN
	if g.sne == nil {
		g.sne = map[string]uint32{}
	}
	g.sne[d.newSrc.String()] = *sne
	code, out, errOut := cli(t, g.args(t, d.path)...)
	dsegs, _ := jsonLines(t, out)
	if code != 1 || errOut != "" {
		t.Errorf("%s in frame %d, ISNs given: exit %d, stderr %q, want 1", d.what, d.frame, code, errOut)
	}
	ds.fixtures++
	for _, s := range dsegs {
		switch {
		case s.Frame == d.frame:
			ds.verdicts[s.Verdict]++
			if s.Verdict != "bad" {
				t.Errorf("%s in frame %d, ISNs given: %s (%s), want bad", d.what, d.frame, s.Verdict, s.Reason)
			}
		case s.Verdict != "good":
			t.Errorf("%s in frame %d, ISNs given: frame %d is %s (%s), want good", d.what, d.frame, s.Frame, s.Verdict, s.Reason)
		default:
			ds.others++
		}
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
	c, err := pcapverify.Open(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	for off := 24; off+16 <= len(b); {
		n := int(o.Uint32(b[off+8:]))
		r := pcapRecord{off: off + 16, n: n, ipOff: -1}
		// The IP packet ends the frame: what is before it is the link header.
		ip, _, err := c.Next()
		if err != nil {
			t.Fatalf("record at %d: %v", off, err)
		}
		if ip != nil {
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
		if err != nil || (seg.Auth().AO == 0 && seg.Auth().MD5 == 0) || (where == "payload" && len(seg.Payload()) == 0) {
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
		at := seg.Auth().AO + 4
		if seg.Auth().AO == 0 {
			at = seg.Auth().MD5 + 2
		}
		seg.Header()[at] ^= 0x10
	case "payload":
		seg.Payload()[len(seg.Payload())-1] ^= 0x01
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
			if seg, err := segment.ParsePacket(b[r.ipOff : r.off+r.n]); err == nil && seg.Header().Flags()&segment.SYN != 0 {
				isn[netip.AddrPortFrom(seg.Src().Unmap(), seg.Header().SrcPort()).String()] = seg.Header().Seq()
				continue
			}
		}
		out = append(out, b[r.off-16:r.off+r.n]...)
	}
	return out, isn
}

// The built-in kernel capture with its handshake cut: every segment is
// unknown-isn (exit 3: nothing verified), then good with the two ISNs on
// the command line.
func TestKernelCaptureWithoutHandshake(t *testing.T) {
	pcap, isn := withoutHandshake(t, demoPcap)
	if len(isn) != 2 {
		t.Fatalf("handshake ISNs %v", isn)
	}
	code, segs, sum, _ := verifyPcap(t, pcap, demoKeys(t))
	if code != 3 || sum.Summary.Verdicts.UnknownISN == 0 || sum.Summary.Verdicts.UnknownISN != sum.Summary.Checked {
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
		if code != 3 || sum.Summary.Verdicts.UnknownISN != sum.Summary.Checked {
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
