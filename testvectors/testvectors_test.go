package testvectors

import (
	"bytes"
	"crypto/aes"
	"crypto/hmac"
	_ "embed"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/aead/cmac"
)

//go:embed rfc/rfc9235-test-vectors.txt
var rfc9235Text string

func TestCounts(t *testing.T) {
	macs, err := MACs()
	if err != nil {
		t.Fatal(err)
	}
	bySource := map[string]int{}
	for _, m := range macs {
		bySource[m.Source]++
		if len(m.Key) == 0 || len(m.MAC) == 0 || m.Data == nil {
			t.Errorf("%s %s: empty field", m.Case, m.Alg)
		}
	}
	t.Logf("MACs: %d %v", len(macs), bySource)
	if len(macs) != 84 {
		t.Errorf("MACs: %d cases, want 84", len(macs))
	}
	if _, err := RFC4493Subkeys(); err != nil {
		t.Error(err)
	}
	prfs, err := RFC4615()
	t.Logf("RFC4615: %d", len(prfs))
	if err != nil || len(prfs) != 3 {
		t.Errorf("RFC4615: %d cases, %v", len(prfs), err)
	}
	set, err := RFC9235()
	t.Logf("RFC9235: %d", len(set.Vectors))
	if err != nil || len(set.Vectors) != 32 {
		t.Errorf("RFC9235: %d vectors, %v", len(set.Vectors), err)
	}
}

// TestStrict shows that damaged files fail to load: a truncated file, a line
// that does not parse, and a file missing its last line (caught by the case
// counts where the rest still parses).
func TestStrict(t *testing.T) {
	macs := func(f func(string) ([]MAC, error)) func(string) error {
		return func(s string) error { _, err := f(s); return err }
	}
	for name, p := range map[string]struct {
		text  string
		parse func(string) error
	}{
		"rfc2202":  {rfc2202, macs(parse2202)},
		"rfc4231":  {rfc4231, macs(parse4231)},
		"rfc4493":  {rfc4493, macs(parse4493MACs)},
		"rmd-sha3": {rmdSHA3, macs(parseRMDSHA3)},
		"rfc4615":  {rfc4615, func(s string) error { _, err := parse4615(s); return err }},
		"rfc9235":  {rfc9235, func(s string) error { _, err := parse9235(s); return err }},
	} {
		if err := p.parse(p.text); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		ls := strings.SplitAfter(strings.TrimRight(p.text, "\n"), "\n")
		n := len(ls)
		for what, text := range map[string]string{
			"truncated":         strings.Join(ls[:n*2/3], ""),
			"garbage line":      strings.Join(ls[:n-2], "") + "garbage\n" + strings.Join(ls[n-2:], ""),
			"last line dropped": strings.Join(ls[:n-1], ""),
		} {
			err := p.parse(text)
			if err == nil {
				t.Errorf("%s %s: loaded without error", name, what)
			}
			t.Logf("%s %s: %v", name, what, err)
		}
	}
}

func aesCMAC(t *testing.T, key, msg []byte) []byte {
	t.Helper()
	c, err := aes.NewCipher(key)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := cmac.Sum(msg, c, aes.BlockSize)
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

// TestMACsRecompute recomputes every MAC with an independent implementation,
// which proves both the parser and the files.
func TestMACsRecompute(t *testing.T) {
	macs, err := MACs()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range macs {
		var full []byte
		if m.Alg == "cmac(aes128)" {
			full = aesCMAC(t, m.Key, m.Data)
		} else if h := Hashes[m.Alg]; h != nil {
			mac := hmac.New(h, m.Key)
			mac.Write(m.Data)
			full = mac.Sum(nil)
		} else {
			t.Errorf("%s: unknown algorithm %s", m.Case, m.Alg)
			continue
		}
		if m.Truncated != (len(m.MAC) < len(full)) || !bytes.Equal(full[:len(m.MAC)], m.MAC) {
			t.Errorf("%s %s: MAC %x (truncated %v), computed %x", m.Case, m.Alg, m.MAC, m.Truncated, full)
		}
	}
}

// TestSharedInputs checks that the RIPEMD-160 and SHA-3 cases use the RFC
// 2286 (= RFC 2202 HMAC-SHA-1) and RFC 4231 inputs they claim.
func TestSharedInputs(t *testing.T) {
	macs, err := MACs()
	if err != nil {
		t.Fatal(err)
	}
	inputs := map[string]MAC{}
	for _, m := range macs {
		switch m.Alg {
		case "hmac(sha1)":
			inputs[strings.Replace(m.Case, "2202", "2286", 1)] = m
		case "hmac(sha256)":
			inputs[m.Case] = m
		}
	}
	for _, m := range macs {
		if m.Alg != "hmac(rmd160)" && !strings.HasPrefix(m.Alg, "hmac(sha3-") {
			continue
		}
		if in, ok := inputs[m.Case]; !ok || !bytes.Equal(in.Key, m.Key) || !bytes.Equal(in.Data, m.Data) {
			t.Errorf("%s %s: inputs differ from the RFC's", m.Case, m.Alg)
		}
	}
}

func TestRFC4493Subkeys(t *testing.T) {
	sk, err := RFC4493Subkeys()
	if err != nil {
		t.Fatal(err)
	}
	c, err := aes.NewCipher(sk.Key)
	if err != nil {
		t.Fatal(err)
	}
	l := make([]byte, 16)
	c.Encrypt(l, l)
	// dbl is the doubling in GF(2^128) of RFC 4493 §2.3.
	dbl := func(b []byte) []byte {
		out := make([]byte, 16)
		for i := range out {
			out[i] = b[i] << 1
			if i < 15 {
				out[i] |= b[i+1] >> 7
			}
		}
		out[15] ^= 0x87 & -(b[0] >> 7)
		return out
	}
	k1 := dbl(l)
	if k2 := dbl(k1); !bytes.Equal(l, sk.L) || !bytes.Equal(k1, sk.K1) || !bytes.Equal(k2, sk.K2) {
		t.Errorf("subkeys %x %x %x, computed %x %x %x", sk.L, sk.K1, sk.K2, l, k1, k2)
	}
	macs, _ := MACs()
	for _, m := range macs {
		if m.Source == "RFC 4493" && !bytes.Equal(m.Key, sk.Key) {
			t.Errorf("%s: key %x, want the subkey example's %x", m.Case, m.Key, sk.Key)
		}
	}
}

func TestRFC4615(t *testing.T) {
	prfs, err := RFC4615()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range prfs {
		k := p.Key
		if len(k) != 16 {
			k = aesCMAC(t, make([]byte, 16), k)
		}
		if got := aesCMAC(t, k, p.Msg); !bytes.Equal(got, p.Out) {
			t.Errorf("key %x: PRF %x, computed %x", p.Key, p.Out, got)
		}
	}
}

func TestRFC9235(t *testing.T) {
	set, err := RFC9235()
	if err != nil {
		t.Fatal(err)
	}
	if string(set.MasterKey) != "testvector" || set.ClientKeyID != 61 || set.ServerKeyID != 84 || set.SNE != 0 || set.MACLen != 12 {
		t.Errorf("common inputs %q %d %d %d %d", set.MasterKey, set.ClientKeyID, set.ServerKeyID, set.SNE, set.MACLen)
	}
	perVersion := map[int]int{}
	for _, v := range set.Vectors {
		perVersion[v.IPVersion]++
		if err := checkAO(set, v); err != nil {
			t.Errorf("%s %s: %v", v.Section, v.Title, err)
		}
	}
	t.Logf("RFC 9235 vectors per IP version: %v", perVersion)
	if perVersion[4] != 16 || perVersion[6] != 16 {
		t.Errorf("per IP version %v, want 16 each", perVersion)
	}
}

// checkAO parses v.Packet as an IP packet of the stated version and checks
// the TCP-AO option (kind 29) carries v.MAC and the sender's KeyIDs.
func checkAO(set RFC9235Set, v AO) error {
	p := v.Packet
	var tcp []byte
	switch {
	case len(p) < 40:
		return fmt.Errorf("packet too short")
	case v.IPVersion == 4 && p[0]>>4 == 4 && int(binary.BigEndian.Uint16(p[2:])) == len(p) && p[9] == 6:
		tcp = p[int(p[0]&15)*4:]
	case v.IPVersion == 6 && p[0]>>4 == 6 && int(binary.BigEndian.Uint16(p[4:])) == len(p)-40 && p[6] == 6:
		tcp = p[40:]
	default:
		return fmt.Errorf("not a TCP/IPv%d packet: % x", v.IPVersion, p[:12])
	}
	off := int(tcp[12]>>4) * 4
	if off < 20 || off > len(tcp) {
		return fmt.Errorf("bad TCP data offset %d", off)
	}
	var ao []byte
	for opts := tcp[20:off]; len(opts) > 0 && opts[0] != 0; {
		if opts[0] == 1 {
			opts = opts[1:]
			continue
		}
		if len(opts) < 2 || int(opts[1]) < 2 || int(opts[1]) > len(opts) {
			return fmt.Errorf("bad TCP option % x", opts)
		}
		if opts[0] == 29 {
			ao = opts[:opts[1]]
		}
		opts = opts[opts[1]:]
	}
	send := strings.HasPrefix(v.TrafficKeyKind, "Send_")
	keyID, rnext, isn := set.ClientKeyID, set.ServerKeyID, v.ClientISN
	if !send {
		keyID, rnext, isn = rnext, keyID, v.ServerISN
	}
	// RFC 5925 §5.2: only a SYN without ACK uses a *_SYN_traffic_key.
	syn, ack := tcp[13]&0x02 != 0, tcp[13]&0x10 != 0
	switch {
	case len(ao) != 4+set.MACLen || !bytes.Equal(ao[4:], v.MAC):
		return fmt.Errorf("TCP-AO option % x does not end with the MAC % x", ao, v.MAC)
	case ao[2] != keyID || ao[3] != rnext:
		return fmt.Errorf("KeyID %d RNextKeyID %d, want %d %d", ao[2], ao[3], keyID, rnext)
	case (syn && !ack) != strings.Contains(v.TrafficKeyKind, "SYN"):
		return fmt.Errorf("SYN %v ACK %v with %s", syn, ack, v.TrafficKeyKind)
	case syn && binary.BigEndian.Uint32(tcp[4:]) != isn:
		return fmt.Errorf("SYN sequence number %#x, want ISN %#x", binary.BigEndian.Uint32(tcp[4:]), isn)
	case len(v.TrafficKey) != map[string]int{"hmac(sha1)": 20, "cmac(aes128)": 16}[v.Alg]:
		return fmt.Errorf("%d-byte traffic key for %s", len(v.TrafficKey), v.Alg)
	}
	return nil
}

// TestRFC9235Text checks the JSON against the RFC-layout text file: the hex
// lines under each section heading are the packet, traffic key and MAC.
func TestRFC9235Text(t *testing.T) {
	set, err := RFC9235()
	if err != nil {
		t.Fatal(err)
	}
	heading := regexp.MustCompile(`^(\d\.\d\.\d)  `)
	hexLine := regexp.MustCompile(`^ +[0-9a-f]{2}(?: [0-9a-f]{2})*$`)
	blocks, section := map[string]string{}, ""
	for _, l := range strings.Split(rfc9235Text, "\n") {
		if m := heading.FindStringSubmatch(l); m != nil {
			section = m[1]
		} else if strings.HasPrefix(l, "---") {
			section = ""
		} else if section != "" && hexLine.MatchString(l) {
			blocks[section] += strings.ReplaceAll(l, " ", "")
		} else if section != "" && l != "" {
			blocks[section+" labels"] += strings.TrimSpace(l) + "\n"
		}
	}
	for _, v := range set.Vectors {
		want := hex.EncodeToString(append(append(v.Packet[:len(v.Packet):len(v.Packet)], v.TrafficKey...), v.MAC...))
		labels := "IP/TCP packet:\n" + v.TrafficKeyKind + ":\nMAC:\n"
		isns := fmt.Sprintf("Client ISN = 0x%08x   Server ISN = 0x%08x", v.ClientISN, v.ServerISN)
		if blocks[v.Section] != want || blocks[v.Section+" labels"] != labels || !strings.Contains(rfc9235Text, isns) {
			t.Errorf("%s: JSON and text differ", v.Section)
		}
	}
	if len(blocks) != 2*len(set.Vectors) {
		t.Errorf("text has %d sections, JSON %d", len(blocks)/2, len(set.Vectors))
	}
}
