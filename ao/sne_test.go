package ao

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"testing"

	"github.com/tcpsig/tcpsig/kdf"
	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/mac"
	"github.com/tcpsig/tcpsig/segment"
)

// ---- Shared helpers of the ao tests (sne, rotation, keyring, concurrency,
// malformed, format, fuzz and bench files). ----

var (
	cli4 = netip.MustParseAddrPort("192.0.2.1:40000")
	srv4 = netip.MustParseAddrPort("192.0.2.2:179")
	cli6 = netip.MustParseAddrPort("[2001:db8::1]:40000")
	srv6 = netip.MustParseAddrPort("[2001:db8::2]:179")
)

func host(a netip.Addr) netip.Prefix { return netip.PrefixFrom(a, a.BitLen()) }

// testKey is the master key of a test MKT, distinct per label.
func testKey(label int) []byte { return []byte(fmt.Sprintf("test-master-key-%03d", label)) }

// mustAdd adds cfg to r or fails the test.
func mustAdd(t testing.TB, r *Keyring, cfg keys.AO) *MKT {
	t.Helper()
	m, err := r.Add(cfg)
	if err != nil {
		t.Fatalf("Add(%v): %v", cfg, err)
	}
	return m
}

// testHeader lays out a TCP header: the TCP-AO option first (when maclen
// > 0), as Linux writes it, then extra options, padded with NOPs.
func testHeader(src, dst netip.AddrPort, seq, ack uint32, flags segment.Flags, keyID, rnext uint8, maclen int, extra []byte) []byte {
	var opts []byte
	if maclen > 0 {
		opts = testOption(opts, keyID, rnext, maclen)
	}
	opts = append(opts, extra...)
	for len(opts)%4 != 0 {
		opts = append(opts, segment.OptionKindNOP)
	}
	h := make([]byte, 20, 20+len(opts))
	binary.BigEndian.PutUint16(h[0:], src.Port())
	binary.BigEndian.PutUint16(h[2:], dst.Port())
	binary.BigEndian.PutUint32(h[4:], seq)
	binary.BigEndian.PutUint32(h[8:], ack)
	h[12] = byte((20 + len(opts)) / 4 << 4)
	h[13] = byte(flags)
	binary.BigEndian.PutUint16(h[14:], 65535)
	binary.BigEndian.PutUint16(h[16:], 0xbeef) // a checksum the MAC must ignore
	return append(h, opts...)
}

// tsOption is a timestamps option (10 bytes), covered by the MAC unless
// options are excluded.
var tsOption = []byte{8, 10, 1, 2, 3, 4, 5, 6, 7, 8}

// testSeg builds a segment from src to dst whose payload is split between
// the contiguous part and one fragment, so both paths are hashed.
func testSeg(t testing.TB, src, dst netip.AddrPort, seq, ack uint32, flags segment.Flags, maclen int, payload []byte) *segment.Segment {
	t.Helper()
	h := testHeader(src, dst, seq, ack, flags, 0, 0, maclen, tsOption)
	half := len(payload) / 2
	buf := append(h, payload[:half]...)
	var frags [][]byte
	if len(payload) > half {
		frags = [][]byte{bytes.Clone(payload[half:])}
	}
	seg, err := segment.FromTCP(src.Addr(), dst.Addr(), buf, frags...)
	if err != nil {
		t.Fatalf("FromTCP: %v", err)
	}
	return &seg
}

// cloneSeg deep-copies a segment, so that a test can deliver the same
// signed bytes several times or tamper with a copy.
func cloneSeg(s *segment.Segment) *segment.Segment {
	buf := append(bytes.Clone([]byte(s.Header())), s.Payload()...)
	var frags [][]byte
	for _, f := range s.Frags() {
		frags = append(frags, bytes.Clone(f))
	}
	c, err := segment.FromTCP(s.Src(), s.Dst(), buf, frags...)
	if err != nil {
		panic(err)
	}
	return &c
}

// aoOpt returns the KeyID, RNextKeyID and MAC of a segment's AO option.
func aoOpt(t testing.TB, s *segment.Segment) Option {
	t.Helper()
	o, err := ParseOption(s.Header()[s.Auth().AO:])
	if err != nil {
		t.Fatalf("ParseOption: %v", err)
	}
	return o
}

// refMAC is the reference computation of a segment's MAC, independent of
// this package: the traffic key from the master key bytes with kdf (a
// freshly prepared Master, a fresh context), then RFC 5925 §5.1 spelled out
// byte by byte with mac. in is the traffic key's KDF context.
func refMAC(t testing.TB, alg string, master []byte, in kdf.Input, s *segment.Segment, sne uint32, maclen int, exclude bool) []byte {
	t.Helper()
	a, err := mac.Lookup(alg)
	if err != nil {
		t.Fatal(err)
	}
	var km kdf.Master
	if err := km.Init(a, master); err != nil {
		t.Fatal(err)
	}
	ctx := a.NewContext()
	tk, err := km.Derive(ctx, make([]byte, kdf.MaxInputLen), &in, nil)
	if err != nil {
		t.Fatal(err)
	}
	km.Wipe()
	ctx = a.NewContext()
	if err := ctx.SetKey(tk); err != nil {
		t.Fatal(err)
	}
	var msg []byte
	msg = binary.BigEndian.AppendUint32(msg, sne)
	msg = segment.AppendPseudoHeader(msg, s.Src(), s.Dst(), s.Len())
	h := bytes.Clone([]byte(s.Header()))
	h[16], h[17] = 0, 0
	off := s.Auth().AO
	if exclude {
		msg = append(msg, h[:20]...)
		msg = append(msg, h[off:off+4]...)
		msg = append(msg, make([]byte, maclen)...)
	} else {
		clear(h[off+4 : off+4+maclen])
		msg = append(msg, h...)
	}
	msg = append(msg, s.Payload()...)
	for _, f := range s.Frags() {
		msg = append(msg, f...)
	}
	ctx.Write(msg)
	return ctx.Finish(nil)[:maclen]
}

// sendOtherInput is the KDF context of the Send_other key of the sender
// src (ISN srcISN) to dst (ISN dstISN): also the receiver's Receive_other.
func sendOtherInput(src, dst netip.AddrPort, srcISN, dstISN uint32) kdf.Input {
	return kdf.Input{Src: src.Addr().Unmap(), Dst: dst.Addr().Unmap(), SrcPort: src.Port(), DstPort: dst.Port(), SrcISN: srcISN, DstISN: dstISN}
}

// pair is two established connections built with Conn.Init of an
// Established Endpoint, as after a handshake: the client at c, the
// server at s.
type pair struct {
	cring, sring *Keyring
	c, s         *Conn
	cli, srv     netip.AddrPort
	cisn, sisn   uint32
}

// newPair imports a client and a server connection whose sequence bases
// and SNEs are given per direction (c2s: client to server), with the
// current and RNext keys named by ID on each side.
func newPair(t testing.TB, cring, sring *Keyring, cli, srv netip.AddrPort, cisn, sisn uint32,
	c2sSNE, c2sSeq, s2cSNE, s2cSeq uint32, cCur, cNext, sCur, sNext uint8) *pair {
	t.Helper()
	p := &pair{cring: cring, sring: sring, c: new(Conn), s: new(Conn), cli: cli, srv: srv, cisn: cisn, sisn: sisn}
	err := restore(p.c, cring, Endpoint{Local: cli, Remote: srv}, Policy{}, Endpoint{
		LocalISN: cisn, RemoteISN: sisn, SendSNE: c2sSNE, SendSeq: c2sSeq, RecvSNE: s2cSNE, RecvSeq: s2cSeq,
		CurrentSendID: cCur, RNextRecvID: cNext})
	if err != nil {
		t.Fatalf("client Import: %v", err)
	}
	err = restore(p.s, sring, Endpoint{Local: srv, Remote: cli}, Policy{}, Endpoint{
		LocalISN: sisn, RemoteISN: cisn, SendSNE: s2cSNE, SendSeq: s2cSeq, RecvSNE: c2sSNE, RecvSeq: c2sSeq,
		CurrentSendID: sCur, RNextRecvID: sNext})
	if err != nil {
		t.Fatalf("server Import: %v", err)
	}
	t.Cleanup(func() { p.c.Close(); p.s.Close() })
	return p
}

// ---- SNE ----

// TestComputeSNE checks ComputeSNE against the cases of Linux's
// tcp_ao_compute_sne: a seq before or after the basis,
// numerically smaller or larger, with and without a wrap between them,
// and the ±2^31 edges.
func TestComputeSNE(t *testing.T) {
	for _, c := range []struct {
		name            string
		sne, basis, seq uint32
		want            uint32
	}{
		{"equal", 7, 1000, 1000, 7},
		{"after, no wrap", 7, 1000, 2000, 7},
		{"before, no wrap", 7, 2000, 1000, 7},
		{"after, across the wrap", 7, 0xffffff00, 0x10, 8},
		{"before, across the wrap", 8, 0x10, 0xffffff00, 7},
		{"after, just past the wrap", 0, 0xffffffff, 0, 1},
		{"before, just before the wrap", 1, 0, 0xffffffff, 0},
		{"after by 2^31-1, wraps", 3, 0x80000001, 0, 4},
		{"exactly 2^31 ahead counts as before", 3, 0x80000000, 0, 3},
		{"exactly 2^31 ahead numerically larger is the previous wrap", 3, 0, 0x80000000, 2},
		{"after by 2^31-1, no wrap", 3, 0, 0x7fffffff, 3},
		{"the SNE itself wraps", 0xffffffff, 0xfffffff0, 5, 0},
		{"and unwraps", 0, 5, 0xfffffff0, 0xffffffff},
		{"SNE 0 at the ISN", 0, 0x12345678, 0x12345679, 0},
	} {
		if got := ComputeSNE(c.sne, c.basis, c.seq); got != c.want {
			t.Errorf("%s: ComputeSNE(%d, %#x, %#x) = %d, want %d", c.name, c.sne, c.basis, c.seq, got, c.want)
		}
	}
}

// TestComputeSNEOracle checks ComputeSNE on random inputs against a 64-bit
// oracle: the extended sequence number of seq is the one of
// (SNE-1, seq), (SNE, seq), (SNE+1, seq) that lies in [basis-2^31,
// basis+2^31) of the extended basis.
func TestComputeSNEOracle(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 200000; i++ {
		sne, basis := r.Uint32(), r.Uint32()
		var seq uint32
		switch i % 3 {
		case 0:
			seq = r.Uint32()
		case 1: // near the basis
			seq = basis + uint32(int32(r.IntN(1<<16)-1<<15))
		default: // near the wrap
			basis = uint32(int32(r.IntN(1<<16) - 1<<15))
			seq = uint32(int32(r.IntN(1<<16) - 1<<15))
		}
		ext := int64(sne)<<32 | int64(basis)
		var want uint32
		found := false
		for _, d := range []int64{-1, 0, 1} {
			cand := (int64(sne)+d)<<32 | int64(seq)
			if cand >= ext-1<<31 && cand < ext+1<<31 {
				want, found = uint32(int64(sne)+d), true
			}
		}
		if !found {
			t.Fatalf("oracle found no SNE for %d %#x %#x", sne, basis, seq)
		}
		if got := ComputeSNE(sne, basis, seq); got != want {
			t.Fatalf("ComputeSNE(%d, %#x, %#x) = %d, oracle %d", sne, basis, seq, got, want)
		}
	}
}

// wrapStream is one direction of the wrap test: segments i = 0..n-1 at
// start + i*step, of which wrapAt is the first past 2^32.
type wrapStream struct {
	from, to     *Conn
	src, dst     netip.AddrPort
	srcISN       uint32
	dstISN       uint32
	startSNE     uint32
	start, step  uint32
	n            int
	signOrder    []int // sender's order; an index twice is a retransmission
	deliverOrder []int // receiver's order, of the signed copies (by index)
}

func (w *wrapStream) seq(i int) uint32 { return w.start + uint32(i)*w.step }

func (w *wrapStream) sne(i int) uint32 {
	if uint64(w.start)+uint64(i)*uint64(w.step) >= 1<<32 {
		return w.startSNE + 1
	}
	return w.startSNE
}

// TestSNEWrap runs both directions of a connection across the 2^32 wrap,
// with reordering around it on the sender (a retransmission of the last
// pre-wrap segment after the first post-wrap one) and on the receiver
// (post-wrap segments delivered before pre-wrap ones), per algorithm and
// family. Each signed MAC is checked against the reference computation
// with the expected SNE, each segment verifies at the peer, a segment
// MACed with the SNE of the wrong wrap does not, and both sides' SNEs end
// one up.
func TestSNEWrap(t *testing.T) {
	for _, alg := range []string{"hmac(sha1)", "cmac(aes128)", "hmac(sha256)"} {
		for _, fam := range []struct {
			name     string
			cli, srv netip.AddrPort
		}{{"v4", cli4, srv4}, {"v6", cli6, srv6}} {
			for _, startSNE := range []uint32{0, 1, 0xffffffff} {
				t.Run(fmt.Sprintf("%s/%s/sne%d", alg, fam.name, startSNE), func(t *testing.T) {
					testSNEWrap(t, alg, fam.cli, fam.srv, startSNE)
				})
			}
		}
	}
}

func testSNEWrap(t *testing.T, alg string, cli, srv netip.AddrPort, startSNE uint32) {
	const cisn, sisn = 0x01020304, 0xa0b0c0d0
	key := []byte("wrap-test-key")
	cring, sring := NewKeyring(nil), NewKeyring(nil)
	mustAdd(t, cring, keys.AO{Peer: host(srv.Addr()), SendID: 1, RecvID: 2, Algorithm: alg, Key: key})
	mustAdd(t, sring, keys.AO{Peer: host(cli.Addr()), SendID: 2, RecvID: 1, Algorithm: alg, Key: key})
	// The two directions wrap on different segments.
	c2s := wrapStream{src: cli, dst: srv, srcISN: cisn, dstISN: sisn, startSNE: startSNE, start: 0xffffff00, step: 0x40, n: 8,
		signOrder:    []int{0, 1, 2, 4, 3, 5, 6, 7, 3},
		deliverOrder: []int{0, 1, 5, 4, 2, 3, 7, 6, 3}}
	s2c := wrapStream{src: srv, dst: cli, srcISN: sisn, dstISN: cisn, startSNE: startSNE, start: 0xfffff000, step: 0x400, n: 8,
		signOrder:    []int{0, 1, 2, 3, 4, 5, 7, 6, 3},
		deliverOrder: []int{4, 3, 0, 2, 1, 6, 5, 7, 3}}
	p := newPair(t, cring, sring, cli, srv, cisn, sisn, startSNE, c2s.start, startSNE, s2c.start, 1, 2, 2, 1)
	c2s.from, c2s.to = p.c, p.s
	s2c.from, s2c.to = p.s, p.c

	signed := map[*wrapStream][]*segment.Segment{}
	// Interleave the two directions' signing, then their deliveries.
	for k := 0; k < 9; k++ {
		for _, w := range []*wrapStream{&c2s, &s2c} {
			i := w.signOrder[k]
			payload := bytes.Repeat([]byte{byte(i)}, int(w.step))
			seg := testSeg(t, w.src, w.dst, w.seq(i), w.dstISN+1, segment.ACK, 12, payload)
			if err := w.from.Sign(seg); err != nil {
				t.Fatalf("sign %v seq %#x: %v", w.src, w.seq(i), err)
			}
			want := refMAC(t, alg, key, sendOtherInput(w.src, w.dst, w.srcISN, w.dstISN), seg, w.sne(i), 12, false)
			if got := aoOpt(t, seg).MAC; !bytes.Equal(got, want) {
				t.Fatalf("%v seg %d seq %#x: MAC %x, reference with SNE %d is %x", w.src, i, w.seq(i), got, w.sne(i), want)
			}
			signed[w] = append(signed[w], seg)
		}
	}
	for k := 0; k < 9; k++ {
		for _, w := range []*wrapStream{&c2s, &s2c} {
			i := w.deliverOrder[k]
			var seg *segment.Segment
			for _, s := range signed[w] {
				if s.Header().Seq() == w.seq(i) {
					seg = cloneSeg(s)
				}
			}
			if err := w.to.Verify(seg); err != nil {
				t.Fatalf("verify %v seg %d seq %#x (SNE %d): %v", w.src, i, w.seq(i), w.sne(i), err)
			}
		}
	}
	for _, w := range []*wrapStream{&c2s, &s2c} {
		last := w.seq(w.n - 1)
		if st := w.from.Endpoint(); st.SendSNE != startSNE+1 || st.SendSeq != last {
			t.Errorf("%v sender: SendSNE %d SendSeq %#x, want %d %#x", w.src, st.SendSNE, st.SendSeq, startSNE+1, last)
		}
		if st := w.to.Endpoint(); st.RecvSNE != startSNE+1 || st.RecvSeq != last {
			t.Errorf("%v receiver: RecvSNE %d RecvSeq %#x, want %d %#x", w.src, st.RecvSNE, st.RecvSeq, startSNE+1, last)
		}
		// A segment MACed with the other wrap's SNE must not verify, on
		// either side of the wrap.
		for _, i := range []int{w.n - 1, 0} {
			seg := testSeg(t, w.src, w.dst, w.seq(i), w.dstISN+1, segment.ACK, 12, []byte("wrong wrap"))
			if err := w.from.Sign(seg); err != nil {
				t.Fatal(err)
			}
			wrong := w.sne(i) ^ 1
			copy(aoOpt(t, seg).MAC, refMAC(t, alg, key, sendOtherInput(w.src, w.dst, w.srcISN, w.dstISN), seg, wrong, 12, false))
			if err := w.to.Verify(seg); !errors.Is(err, ErrBadMAC) {
				t.Errorf("%v seq %#x MACed with SNE %d: %v, want ErrBadMAC", w.src, w.seq(i), wrong, err)
			}
		}
	}
	cc, sc := p.c.Counters(), p.s.Counters()
	if cc.Good != 9 || sc.Good != 9 || cc.Bad != 2 || sc.Bad != 2 {
		t.Errorf("counters: client %+v server %+v, want 9 good and 2 bad each", cc, sc)
	}
}

// TestSNEWrapRepairedWrong is restore.c's "wrong SEQ ext number" case: a
// receiver restored with an SNE one off rejects the sender's segments.
func TestSNEWrapRepairedWrong(t *testing.T) {
	key := testKey(1)
	cring, sring := NewKeyring(nil), NewKeyring(nil)
	mustAdd(t, cring, keys.AO{Peer: host(srv4.Addr()), SendID: 1, RecvID: 2, Algorithm: "hmac(sha1)", Key: key})
	mustAdd(t, sring, keys.AO{Peer: host(cli4.Addr()), SendID: 2, RecvID: 1, Algorithm: "hmac(sha1)", Key: key})
	p := newPair(t, cring, sring, cli4, srv4, 1, 2, 5, 0x1000, 5, 0x2000, 1, 2, 2, 1)
	st := p.s.Endpoint()
	st.RecvSNE++
	if err := restore(p.s, sring, Endpoint{Local: srv4, Remote: cli4}, Policy{}, st); err != nil {
		t.Fatal(err)
	}
	seg := testSeg(t, cli4, srv4, 0x1000, 3, segment.ACK, 12, []byte("x"))
	if err := p.c.Sign(seg); err != nil {
		t.Fatal(err)
	}
	if err := p.s.Verify(seg); !errors.Is(err, ErrBadMAC) {
		t.Fatalf("receiver with RecvSNE+1 verified: %v", err)
	}
}

// TestSNEForged checks that segments that fail to verify never move the
// receive SNE or its basis, however far ahead (or across the wrap) their
// sequence numbers are, whether their MAC is garbage, made with another
// key, or their MAC length is wrong; and that genuine segments still
// verify afterwards, on both sides of the wrap.
func TestSNEForged(t *testing.T) {
	key, other := testKey(1), testKey(2)
	cring, sring := NewKeyring(nil), NewKeyring(nil)
	mustAdd(t, cring, keys.AO{Peer: host(srv4.Addr()), SendID: 1, RecvID: 2, Algorithm: "hmac(sha256)", Key: key})
	mustAdd(t, sring, keys.AO{Peer: host(cli4.Addr()), SendID: 2, RecvID: 1, Algorithm: "hmac(sha256)", Key: key})
	const start = 0xffff0000
	p := newPair(t, cring, sring, cli4, srv4, 11, 22, 0, start, 0, 0x100, 1, 2, 2, 1)
	genuine := func(seq uint32) {
		t.Helper()
		seg := testSeg(t, cli4, srv4, seq, 23, segment.ACK, 12, []byte("genuine"))
		if err := p.c.Sign(seg); err != nil {
			t.Fatal(err)
		}
		if err := p.s.Verify(seg); err != nil {
			t.Fatalf("genuine seq %#x: %v", seq, err)
		}
	}
	genuine(start + 0x100)
	for _, ahead := range []uint32{1, 0x8000, 0x10000, 0x7fff0000, 0x7fffffff, 0x80000000, 0xfffffff0} {
		for _, forge := range []struct {
			name string
			mk   func(seq uint32) *segment.Segment
		}{
			{"garbage MAC", func(seq uint32) *segment.Segment {
				seg := testSeg(t, cli4, srv4, seq, 23, segment.ACK, 12, []byte("forged"))
				o := aoOpt(t, seg)
				seg.Header()[seg.Auth().AO+2] = 1 // the server's RecvID
				for i := range o.MAC {
					o.MAC[i] = byte(seq>>uint(i%4*8)) ^ byte(i)
				}
				return seg
			}},
			{"right KeyID, wrong key", func(seq uint32) *segment.Segment {
				seg := testSeg(t, cli4, srv4, seq, 23, segment.ACK, 12, []byte("forged"))
				seg.Header()[seg.Auth().AO+2] = 1
				sne := ComputeSNE(0, start+0x100, seq)
				copy(aoOpt(t, seg).MAC, refMAC(t, "hmac(sha256)", other, sendOtherInput(cli4, srv4, 11, 22), seg, sne, 12, false))
				return seg
			}},
			{"genuine segment, one payload bit flipped", func(seq uint32) *segment.Segment {
				seg := testSeg(t, cli4, srv4, seq, 23, segment.ACK, 12, []byte("forged"))
				if err := p.c.Sign(seg); err != nil {
					t.Fatal(err)
				}
				// Signing moved the client's send basis; the test is
				// about the receiver, so put it back.
				seg.Frags()[0][0] ^= 0x80
				return seg
			}},
			{"MAC length 16", func(seq uint32) *segment.Segment {
				seg := testSeg(t, cli4, srv4, seq, 23, segment.ACK, 16, []byte("forged"))
				seg.Header()[seg.Auth().AO+2] = 1
				return seg
			}},
		} {
			before := p.s.Endpoint()
			cbefore := p.c.Endpoint()
			seq := start + 0x100 + ahead
			err := p.s.Verify(forge.mk(seq))
			if !errors.Is(err, ErrBadMAC) {
				t.Errorf("%s at +%#x: %v, want ErrBadMAC", forge.name, ahead, err)
			}
			if after := p.s.Endpoint(); after != before {
				t.Fatalf("%s at +%#x moved the receive state: %+v -> %+v", forge.name, ahead, before, after)
			}
			restoreSend(t, p.c, cbefore)
		}
	}
	genuine(start + 0x200)
	genuine(0x100) // across the wrap
	genuine(start + 0x300)
	if st := p.s.Endpoint(); st.RecvSNE != 1 || st.RecvSeq != 0x100 {
		t.Errorf("after the wrap: RecvSNE %d RecvSeq %#x, want 1 0x100", st.RecvSNE, st.RecvSeq)
	}
	if c := p.s.Counters(); c.Good != 4 || c.Bad != 28 {
		t.Errorf("server counters %+v, want 4 good, 28 bad", c)
	}
}

// restoreSend puts a connection's send SNE state back (the forged-segment
// test signs segments it then damages).
func restoreSend(t *testing.T, c *Conn, st Endpoint) {
	t.Helper()
	c.send.mu.Lock()
	c.send.sne = NewSNE(st.SendSNE, st.SendSeq)
	c.send.mu.Unlock()
}

// testOption is AppendOption with the KeyIDs set, for segments a test
// builds without signing them.
func testOption(dst []byte, keyID, rnext uint8, maclen int) []byte {
	n := len(dst)
	dst = AppendOption(dst, maclen)
	dst[n+2], dst[n+3] = keyID, rnext
	return dst
}
