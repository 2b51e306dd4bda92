package linuxsock

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"syscall"
	"testing"

	"github.com/tcpsig/tcpsig/keys"
)

// The offsets below were read with gcc offsetof() from Linux 6.12.117's
// include/uapi/linux/tcp.h on x86-64; the kernel then accepted these
// layouts under qemu (harness/kernellab/guest).

func TestAOAddLayout(t *testing.T) {
	if bigEndian {
		t.Skip("the expected bytes are little-endian")
	}
	c := keys.AO{Peer: netip.MustParsePrefix("192.0.2.0/24"), Algorithm: "HMAC-SHA-1-96", IfIndex: 7, HasIfIndex: true,
		SendID: 100, RecvID: 200, MACLen: 12, ExcludeOptions: true, Key: []byte("secret")}
	var b [sizeAOAdd]byte
	if err := marshalAOAdd(b[:], c, Current|RNext, false); err != nil {
		t.Fatal(err)
	}
	want := map[int]byte{0: 2, 1: 0, 4: 192, 5: 0, 6: 2, 7: 0, 128: 'h', 136: '1', 137: ')', 138: 0, 192: 7, 196: 3,
		202: 24, 203: 100, 204: 200, 205: 12, 206: 3, 207: 6, 208: 's', 213: 't', 214: 0}
	for off, v := range want {
		if b[off] != v {
			t.Errorf("byte %d = %d, want %d", off, b[off], v)
		}
	}
	// IPv6 peer; IPv4 peer on an AF_INET6 socket: IPv4-mapped, IPv4 prefix length.
	c.Peer = netip.MustParsePrefix("2001:db8::1/128")
	b = [sizeAOAdd]byte{}
	if err := marshalAOAdd(b[:], c, 0, true); err != nil || ne.Uint16(b[:]) != 10 || b[8] != 0x20 || b[23] != 1 || b[202] != 128 || b[196] != 0 {
		t.Errorf("IPv6: % x %v", b[:24], err)
	}
	c.Peer = netip.MustParsePrefix("::ffff:198.51.100.0/120")
	b = [sizeAOAdd]byte{}
	if err := marshalAOAdd(b[:], c, 0, true); err != nil || ne.Uint16(b[:]) != 10 || b[18] != 0xff || b[20] != 198 || b[202] != 24 {
		t.Errorf("IPv4-mapped: % x prefix %d %v", b[:24], b[202], err)
	}
	for _, bad := range []keys.AO{
		{Algorithm: "hmac(sha1)", Key: []byte("k")},                                                   // no peer
		{Peer: c.Peer, Algorithm: "hmac(sha1)"},                                                       // no key
		{Peer: c.Peer, Algorithm: "hmac(sha1)", Key: make([]byte, 81)},                                // key too long
		{Peer: c.Peer, Algorithm: "", Key: []byte("k")},                                               // no algorithm
		{Peer: c.Peer, Algorithm: string(make([]byte, 64)), Key: []byte("k")},                         // name too long
		{Peer: c.Peer, Algorithm: "hmac(sha1)", Key: []byte("k"), MACLen: 256},                        // maclen
		{Peer: netip.MustParsePrefix("::ffff:0.0.0.0/80"), Algorithm: "hmac(sha1)", Key: []byte("k")}, // mapped, too short
	} {
		if err := marshalAOAdd(b[:], bad, 0, false); !errors.Is(err, ErrInvalid) {
			t.Errorf("%v: %v, want ErrInvalid", bad, err)
		}
	}
}

func TestAODelInfoRepairLayout(t *testing.T) {
	if bigEndian {
		t.Skip("the expected bytes are little-endian")
	}
	var d [sizeAODel]byte
	c := keys.AO{Peer: netip.MustParsePrefix("10.0.0.1/32"), SendID: 1, RecvID: 2, HasIfIndex: true, IfIndex: 9, ExcludeOptions: true}
	if err := marshalAODel(d[:], c, AODelete{SetCurrent: true, Current: 3, RNext: 4, Async: true}, false); err != nil {
		t.Fatal(err)
	}
	if d[128] != 9 || d[132] != 5 || d[138] != 32 || d[139] != 1 || d[140] != 2 || d[141] != 3 || d[142] != 4 || d[143] != 1 {
		t.Errorf("tcp_ao_del: % x", d[128:])
	}
	i := marshalAOInfo(aoInfoSet{setRNext: true, info: AOInfo{AcceptICMPs: true, Current: 5, RNext: 6,
		Counters: AOCounters{Good: 9, DroppedICMP: 11}}})
	if len(i) != 48 || ne.Uint32(i) != 0x12 || i[6] != 5 || i[7] != 6 || i[8] != 9 || i[40] != 11 {
		t.Errorf("tcp_ao_info_opt: % x", i)
	}
	i[0] |= 4 // ao_required, as the kernel reports it
	if back := unmarshalAOInfo(i); !back.AcceptICMPs || !back.Required || back.Counters.Good != 9 || back.RNext != 6 || back.Current != 5 ||
		back.Counters.DroppedICMP != 11 {
		t.Errorf("round trip %+v", back)
	}
	r := marshalAORepair(AORepair{LocalISN: 0x01020304, RemoteISN: 0x05060708, SendSNE: 1, RecvSNE: 2})
	if !bytes.Equal(r, []byte{1, 2, 3, 4, 5, 6, 7, 8, 1, 0, 0, 0, 2, 0, 0, 0}) {
		t.Errorf("tcp_ao_repair: % x", r)
	}
	if back := unmarshalAORepair(r); back != (AORepair{0x01020304, 0x05060708, 1, 2}) {
		t.Errorf("repair round trip %+v", back)
	}
}

func TestAOGetKeysLayout(t *testing.T) {
	if bigEndian {
		t.Skip("the expected bytes are little-endian")
	}
	req := marshalAOGetAll(2)
	if len(req) != 608 || binary.LittleEndian.Uint32(req[272:]) != 2 || req[276] != 4 {
		t.Errorf("request: len %d", len(req))
	}
	b := make([]byte, 304)
	binary.LittleEndian.PutUint16(b, 10)
	copy(b[8:], netip.MustParseAddr("::ffff:127.0.0.1").AsSlice())
	copy(b[128:], "cmac(aes)")
	copy(b[192:], "0123456789abcdef")
	binary.LittleEndian.PutUint32(b[272:], 1)
	b[276] = 3
	b[278], b[279], b[280], b[281], b[282], b[283] = 1, 2, 32, 16, 3, 16
	binary.LittleEndian.PutUint32(b[284:], 5)
	b[288], b[296] = 5, 6
	k := unmarshalAOKey(b)
	if k.Algorithm != "cmac(aes)" || string(k.Key) != "0123456789abcdef" || !k.Current || !k.RNext ||
		k.SendID != 1 || k.RecvID != 2 || k.Peer.String() != "127.0.0.1/32" || k.MACLen != 16 || k.Good != 5 || k.Bad != 6 ||
		!k.ExcludeOptions || !k.HasIfIndex || k.IfIndex != 5 {
		t.Errorf("%+v", k)
	}
	b[283] = 255 // a keylen beyond the array is clamped, never read past it
	if k := unmarshalAOKey(b); len(k.Key) != 80 {
		t.Errorf("key of %d bytes", len(k.Key))
	}
}

func TestMD5Layout(t *testing.T) {
	if bigEndian {
		t.Skip("the expected bytes are little-endian")
	}
	for _, tc := range []struct {
		name      string
		c         keys.MD5
		in6       bool
		opt       int
		family    uint16
		addrOff   int
		addr      []byte
		flags     byte
		prefixlen byte
		ifindex   uint32
	}{
		{"v4 exact", keys.MD5{Peer: netip.MustParsePrefix("127.0.0.2/32"), Key: []byte("k")}, false,
			optMD5Sig, afInet, 4, []byte{127, 0, 0, 2}, 0, 0, 0},
		{"v4 prefix", keys.MD5{Peer: netip.MustParsePrefix("127.0.0.0/8"), Key: []byte("k")}, false,
			optMD5SigExt, afInet, 4, []byte{127, 0, 0, 0}, md5FlagPrefix, 8, 0},
		{"v4-mapped config", keys.MD5{Peer: netip.MustParsePrefix("::ffff:10.0.0.0/104"), Key: []byte("k")}, false,
			optMD5SigExt, afInet, 4, []byte{10, 0, 0, 0}, md5FlagPrefix, 8, 0},
		{"v4 on an IPv6 socket", keys.MD5{Peer: netip.MustParsePrefix("10.0.0.0/8"), Key: []byte("k")}, true,
			optMD5SigExt, afInet6, 8, netip.MustParseAddr("::ffff:10.0.0.0").AsSlice(), md5FlagPrefix, 8, 0},
		{"v6 ifindex", keys.MD5{Peer: netip.MustParsePrefix("2001:db8::1/128"), Key: []byte("k"), IfIndex: 7, HasIfIndex: true}, true,
			optMD5SigExt, afInet6, 8, netip.MustParseAddr("2001:db8::1").AsSlice(), md5FlagPrefix | md5FlagIfindex, 128, 7},
		{"default L3 domain", keys.MD5{Peer: netip.MustParsePrefix("10.0.0.1/32"), Key: []byte("k"), HasIfIndex: true}, false,
			optMD5SigExt, afInet, 4, []byte{10, 0, 0, 1}, md5FlagPrefix | md5FlagIfindex, 32, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b [sizeMD5]byte
			opt, err := marshalMD5(b[:], tc.c, tc.in6, false)
			if err != nil {
				t.Fatal(err)
			}
			if opt != tc.opt || ne.Uint16(b[:]) != tc.family ||
				!bytes.Equal(b[tc.addrOff:tc.addrOff+len(tc.addr)], tc.addr) ||
				b[128] != tc.flags || b[129] != tc.prefixlen || ne.Uint16(b[130:]) != 1 ||
				ne.Uint32(b[132:]) != tc.ifindex || b[136] != 'k' {
				t.Errorf("opt %d, struct %x", opt, b)
			}
			var d [sizeMD5]byte
			if _, err := marshalMD5(d[:], tc.c, tc.in6, true); err != nil || ne.Uint16(d[130:]) != 0 || d[136] != 0 {
				t.Errorf("delete carries a key: %x %v", d[128:140], err)
			}
		})
	}
	var b [sizeMD5]byte
	for _, n := range []int{0, 81} {
		if _, err := marshalMD5(b[:], keys.MD5{Peer: netip.MustParsePrefix("10.0.0.1/32"), Key: make([]byte, n)}, false, false); !errors.Is(err, ErrInvalid) {
			t.Errorf("key of %d bytes: %v", n, err)
		}
	}
	if _, err := marshalMD5(b[:], keys.MD5{Key: []byte("k")}, false, false); !errors.Is(err, ErrInvalid) {
		t.Errorf("no peer: %v", err)
	}
}

// Printing an AOKey shows its counters and never its key.
func TestAOKeyFormat(t *testing.T) {
	k := AOKey{AO: keys.AO{Peer: netip.MustParsePrefix("192.0.2.1/32"), Algorithm: "hmac(sha1)", Key: []byte("topsecret")},
		Current: true, Good: 7}
	for _, s := range []string{fmt.Sprint(k), fmt.Sprintf("%v %+v %#v %s", k, k, k, k), fmt.Sprint([]AOKey{k})} {
		if strings.Contains(s, "topsecret") || !strings.Contains(s, "good=7") || !strings.Contains(s, "current=true") {
			t.Errorf("%s", s)
		}
	}
}

// TestDraftAlgorithmsRefused: the draft's algorithms, by either name, are
// refused before the kernel sees them, with an error that names the
// algorithm and the roads that do sign with it.
func TestDraftAlgorithmsRefused(t *testing.T) {
	for _, name := range []string{"HMAC-SHA256-128", "hmac-sha256-128", "KMAC256-128"} {
		var b [sizeAOAdd]byte
		c := keys.AO{Peer: netip.MustParsePrefix("192.0.2.1/32"), Algorithm: name, MACLen: 16, Key: make([]byte, 32)}
		err := marshalAOAdd(b[:], c, 0, false)
		if !errors.Is(err, ErrDraftAlgorithm) || !errors.Is(err, errors.ErrUnsupported) || errors.Is(err, ErrInvalid) {
			t.Fatalf("%s: %v", name, err)
		}
		for _, want := range []string{strings.ToLower(name), "engine", "packetauth", "netstack", "shim"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %q does not say %q", name, err, want)
			}
		}
		if b != [sizeAOAdd]byte{} {
			t.Errorf("%s: bytes written for the kernel", name)
		}
	}
}

// TestAddAOENOENT: the kernel's ENOENT for TCP_AO_ADD_KEY (an algorithm
// it does not offer, as Linux 7.2 answers for all but hmac(sha1),
// hmac(sha256) and cmac(aes128)) becomes ErrAlgorithmUnavailable naming
// the algorithm, the errno still wrapped; other errnos pass unchanged.
func TestAddAOENOENT(t *testing.T) {
	c := keys.AO{Algorithm: "HMAC-SHA-1-96"}
	err := addAOError(c, syscall.ENOENT)
	if !errors.Is(err, ErrAlgorithmUnavailable) || !errors.Is(err, syscall.ENOENT) || !errors.Is(err, errors.ErrUnsupported) ||
		!strings.Contains(err.Error(), "hmac(sha1)") || !strings.Contains(err.Error(), "kernel does not offer") {
		t.Errorf("ENOENT: %v", err)
	}
	c.Algorithm = "hmac(sha3-512)"
	if err := addAOError(c, syscall.ENOENT); !strings.Contains(err.Error(), "hmac(sha3-512)") {
		t.Errorf("ENOENT: %v", err)
	}
	if err := addAOError(c, syscall.EEXIST); err != syscall.EEXIST {
		t.Errorf("EEXIST: %v", err)
	}
}
