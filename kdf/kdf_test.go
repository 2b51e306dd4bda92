package kdf

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net/netip"
	"testing"

	"github.com/tcpsig/tcpsig/mac"
	"github.com/tcpsig/tcpsig/segment"
	"github.com/tcpsig/tcpsig/testvectors"
)

// TestRFC9235TrafficKeys derives all 32 traffic keys of RFC 9235 from the
// master key "testvector" and the addresses, ports and ISNs in each
// vector's packet, and compares them with the published keys.
func TestRFC9235TrafficKeys(t *testing.T) {
	set, err := testvectors.RFC9235()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, v := range set.Vectors {
		alg, err := mac.Lookup(v.Alg)
		if err != nil {
			t.Fatal(err)
		}
		var m Master
		if err := m.Init(alg, set.MasterKey); err != nil {
			t.Fatal(err)
		}
		in := vectorInput(t, v)
		w := alg.NewContext()
		got, err := m.Derive(w, make([]byte, MaxInputLen), &in, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, v.TrafficKey) {
			t.Errorf("%s (%s): got %x want %x", v.Title, v.TrafficKeyKind, got, v.TrafficKey)
			continue
		}
		n++
	}
	t.Logf("RFC 9235: %d of %d traffic keys derived and equal", n, len(set.Vectors))
}

// vectorInput is the KDF input of an RFC 9235 (or draft) vector's segment.
// RFC 9235's server listens on port 179 (BGP): the context is always
// (sender's ISN, receiver's ISN) of this segment, and 0 for a SYN's
// receiver.
func vectorInput(t *testing.T, v testvectors.AO) Input {
	t.Helper()
	seg, err := segment.ParsePacket(v.Packet)
	if err != nil {
		t.Fatalf("%s: %v", v.Title, err)
	}
	in := Input{Src: seg.Src(), Dst: seg.Dst(), SrcPort: seg.Header().SrcPort(), DstPort: seg.Header().DstPort(), SrcISN: v.ClientISN, DstISN: v.ServerISN}
	if seg.Header().SrcPort() == 179 {
		in.SrcISN, in.DstISN = v.ServerISN, v.ClientISN
	}
	if seg.Header().Flags()&(segment.SYN|segment.ACK) == segment.SYN {
		in.DstISN = 0
	}
	return in
}

// TestRFC4615 checks the cmac(aes128) key reduction with the AES-CMAC-PRF-128
// vectors (18-, 16- and 10-byte keys): PRF(VK, M) = CMAC(K', M).
func TestRFC4615(t *testing.T) {
	vs, err := testvectors.RFC4615()
	if err != nil {
		t.Fatal(err)
	}
	alg, _ := mac.Lookup("cmac(aes128)")
	for _, v := range vs {
		var m Master
		if err := m.Init(alg, v.Key); err != nil {
			t.Fatal(err)
		}
		key, err := m.keyed(alg.NewContext())
		if err != nil {
			t.Fatal(err)
		}
		w := alg.NewContext()
		w.Start(key)
		w.Write(v.Msg)
		if got := w.Finish(nil); !bytes.Equal(got, v.Out) {
			t.Errorf("key len %d: got %x want %x", len(v.Key), got, v.Out)
		}
	}
	t.Logf("RFC 4615: %d vectors passed", len(vs))
}

func TestInputLayout(t *testing.T) {
	in := Input{Src: netip.MustParseAddr("10.11.12.13"), Dst: netip.MustParseAddr("172.27.28.29"),
		SrcPort: 0xe9d7, DstPort: 179, SrcISN: 0xfbfbab5a, DstISN: 0}
	b, err := in.Append(nil, 160)
	if err != nil || len(b) != 29 {
		t.Fatalf("v4 input %d bytes, %v", len(b), err)
	}
	want := "015443502d414f0a0b0c0dac1b1c1de9d700b3fbfbab5a0000000000a0"
	if got := fmt.Sprintf("%x", b); got != want {
		t.Fatalf("got %s\nwant %s", got, want)
	}
	in.Src, in.Dst = netip.MustParseAddr("fd00::1"), netip.MustParseAddr("fd00::2")
	b, _ = in.Append(nil, 512)
	if len(b) != MaxInputLen || binary.BigEndian.Uint16(b[51:]) != 512 {
		t.Fatalf("v6 input: %x", b)
	}
	in.Dst = netip.MustParseAddr("10.0.0.1")
	if _, err := in.Append(nil, 128); err != ErrAddress {
		t.Fatalf("mixed families: %v", err)
	}
}

func TestDeriveNoAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under the race detector")
	}
	alg, _ := mac.Lookup("hmac(sha256)")
	var m Master
	_ = m.Init(alg, []byte("master"))
	in := Input{Src: netip.MustParseAddr("fd00::1"), Dst: netip.MustParseAddr("fd00::2"), SrcPort: 1, DstPort: 2, SrcISN: 3, DstISN: 4}
	if n, _ := deriveAllocs(&m, alg, &in); n != 0 {
		t.Fatalf("Derive allocates %v", n)
	}
}

// deriveAllocs derives in with m, prepared for alg, once to warm up and
// then under testing.AllocsPerRun, reusing one context, scratch and output
// buffer; it returns the allocations per derivation and the key's length.
func deriveAllocs(m *Master, alg *mac.Algorithm, in *Input) (allocs float64, keyLen int) {
	w := alg.NewContext()
	scratch := make([]byte, MaxInputLen)
	out := make([]byte, 0, mac.MaxSize)
	out, _ = m.Derive(w, scratch, in, out[:0])
	allocs = testing.AllocsPerRun(100, func() { out, _ = m.Derive(w, scratch, in, out[:0]) })
	return allocs, len(out)
}

// TestLazyTemplate: the template a Master makes on its first derivation is
// made once however many goroutines derive first at the same time, every
// one of them gets the RFC 9235 traffic key, and a wiped Master derives
// nothing (its key bytes are gone before and after the template, the
// template's own memory cleared).
func TestLazyTemplate(t *testing.T) {
	set, err := testvectors.RFC9235()
	if err != nil {
		t.Fatal(err)
	}
	v := set.Vectors[0]
	alg, err := mac.Lookup(v.Alg)
	if err != nil {
		t.Fatal(err)
	}
	in := vectorInput(t, v)
	var m Master
	if err := m.Init(alg, set.MasterKey); err != nil {
		t.Fatal(err)
	}
	got := make([][]byte, 8)
	done := make(chan error, len(got))
	for i := range got {
		go func() {
			var err error
			got[i], err = m.Derive(alg.NewContext(), make([]byte, MaxInputLen), &in, nil)
			done <- err
		}()
	}
	for range got {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	for i, g := range got {
		if !bytes.Equal(g, v.TrafficKey) {
			t.Fatalf("goroutine %d: traffic key %x, want %x", i, g, v.TrafficKey)
		}
	}
	tmpl := m.key.Load() // the template's memory, which Wipe clears and lets go
	if tmpl == nil || tmpl.Empty() {
		t.Fatal("no template after the first derivations")
	}
	m.Wipe()
	if !tmpl.Empty() || m.key.Load() != nil {
		t.Fatal("Wipe left the template's bytes")
	}
	if _, err := m.Derive(alg.NewContext(), make([]byte, MaxInputLen), &in, nil); err == nil {
		t.Fatal("a wiped Master derived a key")
	}
	var fresh Master
	if err := fresh.Init(alg, set.MasterKey); err != nil {
		t.Fatal(err)
	}
	fresh.Wipe()
	if _, err := fresh.Derive(alg.NewContext(), make([]byte, MaxInputLen), &in, nil); err == nil || fresh.short.Load() != nil || fresh.long.Load() != nil {
		t.Fatal("a Master wiped before its first use kept its key or derived")
	}
}

// TestWaitingKeyWiped checks that a master key waiting for its template,
// short (one array, Init's or InitIn's) or long (a lazyKey), is cleared
// when the template is made and by a Wipe before that, and that both
// derive the same keys.
func TestWaitingKeyWiped(t *testing.T) {
	t.Run("Init", func(t *testing.T) { testWaitingKeyWiped(t, false) })
	t.Run("InitIn", func(t *testing.T) { testWaitingKeyWiped(t, true) })
}

func testWaitingKeyWiped(t *testing.T, into bool) {
	alg, err := mac.Lookup("hmac(sha1)")
	if err != nil {
		t.Fatal(err)
	}
	in := Input{Src: netip.MustParseAddr("192.0.2.1"), Dst: netip.MustParseAddr("192.0.2.2"), SrcPort: 179, DstPort: 4000, SrcISN: 1}
	for _, n := range []int{1, shortKeyLen, shortKeyLen + 1, 80} {
		key := bytes.Repeat([]byte{0xa5}, n)
		waiting := func(m *Master) []byte {
			if b := m.short.Load(); b != nil {
				return b[:]
			}
			return m.long.Load().b
		}
		var m, wiped Master
		var buf, bufWiped *[ShortKeyLen]byte
		if into {
			buf, bufWiped = new([ShortKeyLen]byte), new([ShortKeyLen]byte)
		}
		if err := m.InitIn(alg, key, buf); err != nil {
			t.Fatal(err)
		}
		if err := wiped.InitIn(alg, key, bufWiped); err != nil {
			t.Fatal(err)
		}
		raw, rawWiped := waiting(&m), waiting(&wiped)
		if into && n <= ShortKeyLen && (&raw[0] != &buf[0] || &rawWiped[0] != &bufWiped[0]) {
			t.Fatalf("%d-byte key: InitIn did not keep it in its buffer", n)
		}
		if (m.short.Load() != nil) != (n <= shortKeyLen) || !bytes.Equal(m.waiting(), key) {
			t.Fatalf("%d-byte key kept as %x", n, m.waiting())
		}
		got, err := m.Derive(alg.NewContext(), make([]byte, MaxInputLen), &in, nil)
		if err != nil {
			t.Fatal(err)
		}
		k, w := new(mac.Key), alg.NewContext() // the template made at once
		if err := makeTemplate(w, k, alg, key); err != nil {
			t.Fatal(err)
		}
		want, err := in.Append(nil, alg.Size()*8)
		if err != nil || w.Start(k) != nil {
			t.Fatal(err)
		}
		w.Write(want)
		if want = w.Finish(nil); !bytes.Equal(got, want) {
			t.Fatalf("%d-byte key: traffic key %x, want %x", n, got, want)
		}
		wiped.Wipe()
		if !bytes.Equal(raw, make([]byte, len(raw))) || m.waiting() != nil {
			t.Errorf("%d-byte key: the template's making left the key's bytes", n)
		}
		if !bytes.Equal(rawWiped, make([]byte, len(rawWiped))) || wiped.waiting() != nil || wiped.n != 0 {
			t.Errorf("%d-byte key: Wipe before the first derivation left the key's bytes", n)
		}
	}
}
