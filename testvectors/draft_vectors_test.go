package testvectors

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

var updateDraft = flag.Bool("update-draft", false, "rewrite rfc/tcp-ao-algs-07-vectors.json from RFC 9235's packets with OpenSSL")

// draftMasterKey is the vectors' master key: 32 bytes, 0x00..0x1f.
func draftMasterKey() []byte {
	k := make([]byte, 32)
	for i := range k {
		k[i] = byte(i)
	}
	return k
}

// TestDraftVectorsOpenSSL rebuilds the draft-ietf-tcpm-tcp-ao-algs-07
// vectors from RFC 9235's 32 packets (the TCP-AO option grown to 20
// bytes for a 16-byte MAC, lengths and checksums fixed) with traffic keys
// and MACs computed by OpenSSL, and compares them with the stored file;
// with -update-draft it writes the file. Nothing of tcpsig's engine is
// used: the packet surgery, the KDF context and the MAC message are
// written out here.
func TestDraftVectorsOpenSSL(t *testing.T) {
	openssl, err := exec.LookPath("openssl")
	if err != nil {
		t.Skip("openssl not installed: the draft vectors' expected values come from OpenSSL")
	}
	set, err := RFC9235()
	if err != nil {
		t.Fatal(err)
	}
	o := &opensslRunner{t: t, bin: openssl, dir: t.TempDir()}
	out := draftFile{
		Source:      "RFC 9235's 32 packets re-signed with draft-ietf-tcpm-tcp-ao-algs-07's algorithms by testvectors' TestDraftVectorsOpenSSL: traffic keys and MACs computed with OpenSSL (openssl kdf HKDF, openssl mac HMAC/KMAC256)",
		MasterKey:   hex.EncodeToString(draftMasterKey()),
		ClientKeyID: set.ClientKeyID, ServerKeyID: set.ServerKeyID, SNE: set.SNE, MACLen: 16,
	}
	for _, alg := range []struct{ name, draft string }{{"hmac-sha256-128", "HMAC-SHA256-128"}, {"kmac256-128", "KMAC256-128"}} {
		for _, v := range set.Vectors {
			dv, err := resign(o, alg.name, &v, set.SNE, draftMasterKey())
			if err != nil {
				t.Fatalf("%s %s: %v", alg.name, v.Section, err)
			}
			old := strings.SplitN(v.Title, ": ", 2)
			cover := map[bool]string{true: "covers", false: "omits"}[v.IncludeOptions]
			dv.Title = fmt.Sprintf("IPv%d %s %s options: %s", v.IPVersion, alg.draft, cover, old[1])
			out.Vectors = append(out.Vectors, dv)
		}
	}
	got, err := json.MarshalIndent(out, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	const file = "rfc/tcp-ao-algs-07-vectors.json"
	if *updateDraft {
		if err := os.WriteFile(file, got, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s: %d vectors", file, len(out.Vectors))
		return
	}
	if want := []byte(draftAlgs); !bytes.Equal(got, want) {
		t.Fatalf("%s differs from what OpenSSL computes now (run with -update-draft to see)", file)
	}
	t.Logf("%d draft vectors: traffic keys and MACs equal OpenSSL's", len(out.Vectors))
}

type opensslRunner struct {
	t        *testing.T
	bin, dir string
	n        int
}

// run runs openssl with args and in as its input file, and returns its
// output as bytes (hex, colons allowed).
func (o *opensslRunner) run(in []byte, args ...string) ([]byte, error) {
	o.n++
	f := filepath.Join(o.dir, fmt.Sprint(o.n))
	if err := os.WriteFile(f, in, 0o600); err != nil {
		return nil, err
	}
	// openssl mac [options] -in FILE ALGORITHM: the algorithm comes last.
	last := len(args) - 1
	out, err := exec.Command(o.bin, append(append(args[:last:last], "-in", f), args[last])...).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("openssl %v: %v: %s", args, err, out)
	}
	return hex.DecodeString(strings.ReplaceAll(strings.TrimSpace(string(out)), ":", ""))
}

// trafficKey derives with OpenSSL: HKDF-SHA256 (salt 32 zero bytes, info
// = context, 32 bytes) or KMAC256 (key 132 zero bytes, S = "KDF", 32
// bytes, X = 0x00000001 || master || context).
func (o *opensslRunner) trafficKey(alg string, master, context []byte) ([]byte, error) {
	if alg == "hmac-sha256-128" {
		out, err := exec.Command(o.bin, "kdf", "-keylen", "32", "-kdfopt", "digest:SHA256", "-kdfopt", "hexkey:"+hex.EncodeToString(master),
			"-kdfopt", "hexsalt:"+strings.Repeat("00", 32), "-kdfopt", "hexinfo:"+hex.EncodeToString(context), "HKDF").CombinedOutput()
		if err != nil {
			return nil, fmt.Errorf("openssl kdf: %v: %s", err, out)
		}
		return hex.DecodeString(strings.ReplaceAll(strings.TrimSpace(string(out)), ":", ""))
	}
	x := append(append([]byte{0, 0, 0, 1}, master...), context...)
	return o.run(x, "mac", "-macopt", "hexkey:"+strings.Repeat("00", 132), "-macopt", "custom:KDF", "-macopt", "size:32", "KMAC256")
}

// mac is HMAC-SHA256's first 16 bytes or KMAC256 with L = 128, S = "".
func (o *opensslRunner) mac(alg string, key, msg []byte) ([]byte, error) {
	if alg == "hmac-sha256-128" {
		m, err := o.run(msg, "mac", "-macopt", "digest:SHA256", "-macopt", "hexkey:"+hex.EncodeToString(key), "HMAC")
		if err != nil || len(m) != 32 {
			return nil, fmt.Errorf("HMAC: %x, %v", m, err)
		}
		return m[:16], nil
	}
	return o.run(msg, "mac", "-macopt", "hexkey:"+hex.EncodeToString(key), "-macopt", "size:16", "KMAC256")
}

// resign rebuilds v's packet with a 20-byte TCP-AO option and signs it
// for alg under master.
func resign(o *opensslRunner, alg string, v *AO, sne uint32, master []byte) (draftVector, error) {
	p := v.Packet
	var iph []byte
	var src, dst []byte
	switch v.IPVersion {
	case 4:
		iph = bytes.Clone(p[:int(p[0]&15)*4])
		src, dst = iph[12:16], iph[16:20]
	case 6:
		iph = bytes.Clone(p[:40])
		src, dst = iph[8:24], iph[24:40]
	}
	if len(iph) == 0 || len(p) < len(iph)+20 {
		return draftVector{}, fmt.Errorf("bad packet")
	}
	tcp := p[len(iph):]
	hl := int(tcp[12]>>4) * 4
	th, payload := tcp[:hl], tcp[hl:]
	// The TCP-AO option: kind 29, length 16 (a 12-byte MAC).
	ao := -1
	for i := 20; i < hl; {
		switch th[i] {
		case 0:
			i = hl
		case 1:
			i++
		default:
			if th[i] == 29 {
				ao = i
			}
			i += int(th[i+1])
		}
	}
	if ao < 0 || th[ao+1] != 16 {
		return draftVector{}, fmt.Errorf("no 16-byte TCP-AO option")
	}
	nth := append(append(bytes.Clone(th[:ao]), 29, 20, th[ao+2], th[ao+3]), make([]byte, 16)...)
	nth = append(nth, th[ao+16:]...)
	nth[12] = byte(len(nth)/4) << 4
	tcpLen := len(nth) + len(payload)
	if v.IPVersion == 4 {
		binary.BigEndian.PutUint16(iph[2:], uint16(len(iph)+tcpLen))
		iph[10], iph[11] = 0, 0
		binary.BigEndian.PutUint16(iph[10:], checksum(nil, iph))
	} else {
		binary.BigEndian.PutUint16(iph[4:], uint16(tcpLen))
	}
	// The context, from the segment's point of view (RFC 5925 §5.2).
	sport, dport := binary.BigEndian.Uint16(th[0:]), binary.BigEndian.Uint16(th[2:])
	sisn, disn := v.ClientISN, v.ServerISN
	if sport == 179 {
		sisn, disn = disn, sisn
	}
	if th[13]&0x12 == 0x02 { // a SYN without ACK
		disn = 0
	}
	ctx := append(append(bytes.Clone(src), dst...), byte(sport>>8), byte(sport), byte(dport>>8), byte(dport))
	ctx = binary.BigEndian.AppendUint32(ctx, sisn)
	ctx = binary.BigEndian.AppendUint32(ctx, disn)
	tk, err := o.trafficKey(alg, master, ctx)
	if err != nil || len(tk) != 32 {
		return draftVector{}, fmt.Errorf("traffic key %x: %v", tk, err)
	}
	// The MAC message (RFC 5925 §5.1): SNE, pseudo-header, TCP header
	// with checksum and MAC zeroed (with options excluded: the base
	// header and the TCP-AO option only), payload.
	pseudo := pseudoHeader(src, dst, tcpLen)
	msg := binary.BigEndian.AppendUint32(nil, sne)
	msg = append(msg, pseudo...)
	hdr := bytes.Clone(nth)
	hdr[16], hdr[17] = 0, 0
	if v.IncludeOptions {
		msg = append(msg, hdr...)
	} else {
		msg = append(msg, hdr[:20]...)
		msg = append(msg, hdr[ao:ao+20]...)
	}
	msg = append(msg, payload...)
	m, err := o.mac(alg, tk, msg)
	if err != nil || len(m) != 16 {
		return draftVector{}, fmt.Errorf("MAC %x: %v", m, err)
	}
	copy(nth[ao+4:], m)
	nth[16], nth[17] = 0, 0
	seg := append(bytes.Clone(nth), payload...)
	binary.BigEndian.PutUint16(nth[16:], checksum(pseudo, seg))
	pkt := append(append(iph, nth...), payload...)
	return draftVector{Section: v.Section, IPVersion: v.IPVersion, Algorithm: alg, IncludeOptions: v.IncludeOptions,
		ClientISN: fmt.Sprintf("0x%08x", v.ClientISN), ServerISN: fmt.Sprintf("0x%08x", v.ServerISN),
		TrafficKeyKind: v.TrafficKeyKind, Context: spaced(ctx), Packet: spaced(pkt), TrafficKey: spaced(tk), MAC: spaced(m)}, nil
}

// pseudoHeader is TCP's pseudo-header: RFC 793's for IPv4, RFC 8200's
// for IPv6.
func pseudoHeader(src, dst []byte, tcpLen int) []byte {
	b := append(bytes.Clone(src), dst...)
	if len(src) == 4 {
		return append(b, 0, 6, byte(tcpLen>>8), byte(tcpLen))
	}
	b = binary.BigEndian.AppendUint32(b, uint32(tcpLen))
	return append(b, 0, 0, 0, 6)
}

// checksum is the Internet checksum of a || b (RFC 1071).
func checksum(a, b []byte) uint16 {
	var s uint32
	for _, p := range [][]byte{a, b} {
		for i := 0; i+1 < len(p); i += 2 {
			s += uint32(p[i])<<8 | uint32(p[i+1])
		}
		if len(p)%2 == 1 {
			s += uint32(p[len(p)-1]) << 8
		}
	}
	for s > 0xffff {
		s = s&0xffff + s>>16
	}
	return ^uint16(s)
}

func spaced(b []byte) string {
	h := hex.EncodeToString(b)
	var sb strings.Builder
	for i := 0; i < len(h); i += 2 {
		if i > 0 {
			sb.WriteByte(' ')
		}
		sb.WriteString(h[i : i+2])
	}
	return sb.String()
}
