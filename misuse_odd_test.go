package tcpsig_test

import (
	"bytes"
	"math"
	"net/netip"
	"reflect"
	"testing"

	"github.com/tcpsig/tcpsig/ao"
	"github.com/tcpsig/tcpsig/kdf"
	"github.com/tcpsig/tcpsig/keyfile"
	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/mac"
	"github.com/tcpsig/tcpsig/md5sig"
	"github.com/tcpsig/tcpsig/packetauth"
	"github.com/tcpsig/tcpsig/pcapverify"
	"github.com/tcpsig/tcpsig/segment"
	"github.com/tcpsig/tcpsig/sigpool"
)

// results makes check's list of results of vs: each error as an error,
// the rest as they are.
func results(vs ...any) []reflect.Value {
	out := make([]reflect.Value, len(vs))
	for i, v := range vs {
		out[i] = reflect.ValueOf(v)
		if e, ok := v.(error); ok || v == nil {
			out[i] = reflect.ValueOf(&e).Elem()
		}
	}
	return out
}

// TestMisuseOdd makes the calls a careless caller makes that the
// reflective tests cannot: nil and empty fragments and options, lengths
// past what a packet holds, a header shorter than its data offset says,
// mismatched names and keys, a key deleted twice or from another ring,
// a key or context of another algorithm, a request ended twice, a pool
// entry released twice, a verifier used after Close, a capture that is
// not one. None may panic; every error must be a sentinel.
func TestMisuseOdd(t *testing.T) {
	src, dst := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2")
	peer := netip.MustParsePrefix("192.0.2.0/24")
	sha1, _ := mac.Lookup("hmac(sha1)")
	cmac, _ := mac.Lookup("cmac(aes128)")
	pkt, _ := segment.AppendPacket(nil, segment.IP{Src: src, Dst: dst}, segment.Fields{SrcPort: 1, DstPort: 2, Flags: segment.SYN, Options: [][]byte{ao.AppendOption(nil, 12)}}, []byte("xyz"))
	seg, _ := segment.ParsePacket(pkt)
	hdr := seg.Header()
	try := func(name string, f func() []reflect.Value) { t.Helper(); check(t, name, f, nil) }
	try("FromTCP nil frags", func() []reflect.Value {
		_, err := segment.FromTCP(src, dst, hdr, nil, nil, []byte{})
		return results(err)
	})
	try("FromTCP many frags", func() []reflect.Value {
		fr := make([][]byte, 100000)
		for i := range fr {
			fr[i] = []byte{1}
		}
		_, err := segment.FromTCP(src, dst, hdr, fr...)
		return results(err)
	})
	try("FromTCP huge frag", func() []reflect.Value {
		_, err := segment.FromTCP(src, dst, hdr, make([]byte, 70000))
		return results(err)
	})
	try("FromTCP v4/v6 mixed", func() []reflect.Value {
		_, err := segment.FromTCP(src, netip.MustParseAddr("2001:db8::1"), hdr)
		return results(err)
	})
	try("FromTCP zone", func() []reflect.Value {
		_, err := segment.FromTCP(netip.MustParseAddr("fe80::1%eth0"), netip.MustParseAddr("fe80::2"), hdr)
		return results(err)
	})
	try("AppendPacket nil option", func() []reflect.Value {
		_, err := segment.AppendPacket(nil, segment.IP{Src: src, Dst: dst}, segment.Fields{Options: [][]byte{nil, {}, {1}}}, nil)
		return results(err)
	})
	try("AppendPacket long options", func() []reflect.Value {
		_, err := segment.AppendPacket(nil, segment.IP{Src: src, Dst: dst}, segment.Fields{Options: [][]byte{make([]byte, 100)}}, nil)
		return results(err)
	})
	try("AppendPacket bad option length", func() []reflect.Value {
		_, err := segment.AppendPacket(nil, segment.IP{Src: src, Dst: dst}, segment.Fields{Options: [][]byte{{29, 200}}}, nil)
		return results(err)
	})
	try("AppendPacket huge payload", func() []reflect.Value {
		_, err := segment.AppendPacket(nil, segment.IP{Src: src, Dst: dst}, segment.Fields{}, make([]byte, 70000))
		return results(err)
	})
	try("AppendPacket invalid addrs", func() []reflect.Value {
		_, err := segment.AppendPacket(nil, segment.IP{Src: netip.Addr{}, Dst: dst}, segment.Fields{}, nil)
		return results(err)
	})
	try("AppendPacket v6 huge", func() []reflect.Value {
		_, err := segment.AppendPacket(nil, segment.IP{Src: netip.MustParseAddr("2001:db8::1"), Dst: netip.MustParseAddr("2001:db8::2")}, segment.Fields{}, make([]byte, 70000))
		return results(err)
	})
	try("AppendIP huge", func() []reflect.Value {
		_, err := segment.AppendIP(nil, segment.IP{Src: src, Dst: dst}, math.MaxInt)
		return results(err)
	})
	try("AppendPseudoHeader mixed", func() []reflect.Value {
		return results(segment.AppendPseudoHeader(nil, src, netip.MustParseAddr("2001:db8::1"), -5))
	})
	try("TCPChecksum invalid", func() []reflect.Value { return results(segment.TCPChecksum(netip.Addr{}, dst, []byte{1})) })
	try("TCPOffset mismatch", func() []reflect.Value {
		other, _ := segment.ParsePacket(pkt)
		a, b := segment.TCPOffset(pkt[:10], &other)
		return results(a, b)
	})
	try("TCP short", func() []reflect.Value {
		h := segment.TCP([]byte{1, 2, 3})
		h.SetSeq(1)
		h.SetAck(1)
		h.SetDataOffset(15)
		h.SetFlags(0xff)
		h.SetChecksum(1)
		_, err := h.AuthOptions()
		return results(h.Seq(), h.Ack(), h.DataOffset(), h.Options(), h.Window(), h.Checksum(), err)
	})
	try("TCP DataOffset beyond", func() []reflect.Value {
		h := segment.TCP(bytes.Clone(hdr[:20]))
		h.SetDataOffset(15)
		_, err := h.AuthOptions()
		return results(h.Options(), err)
	})
	try("WithTCP short", func() []reflect.Value { _, err := seg.WithTCP([]byte{1}); return results(err) })
	try("ShortenAO", func() []reflect.Value {
		s2, _ := segment.ParsePacket(bytes.Clone(pkt))
		return results(s2.ShortenAO(-1), s2.ShortenAO(100), s2.ShortenAO(math.MaxInt))
	})
	try("EachPayload nil", func() []reflect.Value { seg.EachPayload(nil); return nil })
	try("ParseICMP garbage", func() []reflect.Value {
		for n := range 80 {
			b := bytes.Repeat([]byte{0x45}, n)
			segment.ParseICMP(b)
			b6 := bytes.Repeat([]byte{0x60}, n)
			segment.ParseICMP(b6)
		}
		return nil
	})
	// keyrings
	try("md5 AddAll names mismatch", func() []reflect.Value {
		_, err := md5sig.NewKeyring(nil).AddAll([]keys.MD5{{Peer: peer, Key: []byte("k")}, {Peer: netip.MustParsePrefix("198.51.100.0/24"), Key: []byte("k")}}, []string{"a"})
		_, err2 := md5sig.NewKeyring(nil).AddAll(nil, []string{"a", "b"})
		_, err3 := md5sig.NewKeyring(nil).AddAll([]keys.MD5{{}, {}}, []string{"a", "b", "c"})
		return results(err, err2, err3)
	})
	try("md5 Delete foreign key", func() []reflect.Value {
		r1, r2 := md5sig.NewKeyring(nil), md5sig.NewKeyring(nil)
		k, _ := r1.Add(keys.MD5{Peer: peer, Key: []byte("k")})
		return results(r2.Delete(k, md5sig.DeleteOptions{}), r1.Delete(k, md5sig.DeleteOptions{}), r1.Delete(k, md5sig.DeleteOptions{}))
	})
	try("md5 Add huge key", func() []reflect.Value {
		_, err := md5sig.NewKeyring(nil).Add(keys.MD5{Peer: peer, Key: make([]byte, 1<<20)})
		_, err2 := md5sig.NewKeyring(nil).Add(keys.MD5{Peer: netip.PrefixFrom(src, 33), Key: []byte("k")})
		_, err3 := md5sig.NewKeyring(nil).Add(keys.MD5{Peer: netip.Prefix{}, Key: []byte("k")})
		return results(err, err2, err3)
	})
	try("md5 Sign odd segments", func() []reflect.Value {
		r := md5sig.NewKeyring(nil)
		r.Add(keys.MD5{Peer: peer, Key: []byte("k")})
		var zero segment.Segment
		s2, _ := segment.ParsePacket(bytes.Clone(pkt))
		return results(r.Sign(&zero, 0), r.Verify(&zero, -1), r.Sign(&s2, math.MaxInt), r.Verify(&s2, math.MinInt))
	})
	// kdf
	try("kdf Master Init odd", func() []reflect.Value {
		var m kdf.Master
		e1 := m.Init(cmac, make([]byte, 1<<20))
		e2 := m.Init(sha1, nil)
		var buf [kdf.ShortKeyLen]byte
		e3 := m.InitIn(sha1, make([]byte, 1000), &buf)
		e4 := m.InitIn(sha1, []byte("k"), nil)
		var m2 kdf.Master
		m2.Init(sha1, []byte("k"))
		w := sha1.NewContext()
		_, e5 := m2.Derive(w, nil, &kdf.Input{}, nil)
		_, e6 := m2.Derive(cmac.NewContext(), make([]byte, 10), &kdf.Input{}, make([]byte, 1))
		_, e7 := m2.Derive(nil, nil, nil, nil)
		m2.Wipe()
		_, e8 := m2.Derive(w, nil, &kdf.Input{}, nil)
		return results(e1, e2, e3, e4, e5, e6, e7, e8)
	})
	try("kdf Input odd", func() []reflect.Value {
		in := kdf.Input{}
		_, e1 := in.Append(nil, -1)
		_, e2 := in.Append(nil, math.MaxInt)
		_, e3 := in.Append(nil, 1<<20)
		return results(e1, e2, e3)
	})
	try("kdf Extract/Reduce wrong alg", func() []reflect.Value {
		var prk [32]byte
		var d [16]byte
		return results(kdf.Extract(cmac.NewContext(), &prk, nil, nil), kdf.ReduceCMACKey(sha1.NewContext(), &d, make([]byte, 100)))
	})
	// mac
	try("mac cross-alg", func() []reflect.Value {
		var k mac.Key
		k.Init(cmac, make([]byte, 16))
		c := sha1.NewContext()
		_, e1 := c.Compute(&k, nil, []byte("x"))
		e2 := c.Start(&k)
		e3 := c.Schedule(&k, make([]byte, 1000))
		e4 := c.SetKey(nil)
		c.Wipe()
		_, e5 := c.Write([]byte("x"))
		c.Finish(nil)
		c.Restart()
		return results(e1, e2, e3, e4, e5, sha1.CheckMACLen(-1), sha1.CheckMasterKey(math.MinInt))
	})
	// sigpool
	try("sigpool odd ids", func() []reflect.Value {
		p, _ := sigpool.New(sigpool.Config{Shards: 1})
		id, _ := p.Alloc(sha1, 10)
		r, _ := p.Start(id)
		r.End()
		r.End()
		e1 := p.Release(id)
		e2 := p.Release(id)
		_, e3 := p.Start(id)
		_, e4 := p.Lease(id)
		_, e5 := p.StartHint(sigpool.ID(-5), math.MaxUint32)
		return results(e1, e2, e3, e4, e5)
	})
	try("sigpool request key wrong alg", func() []reflect.Value {
		p, _ := sigpool.New(sigpool.Config{Shards: 1})
		id, _ := p.Alloc(sha1, 10)
		r, _ := p.Start(id)
		var k mac.Key
		k.Init(cmac, make([]byte, 16))
		e := r.Key(&k)
		e2 := r.Key(nil)
		r.End()
		e3 := r.Key(&k)
		return results(e, e2, e3)
	})
	// packetauth
	try("packetauth odd", func() []reflect.Value {
		r := md5sig.NewKeyring(nil)
		r.Add(keys.MD5{Peer: peer, Key: []byte("k")})
		l, _ := packetauth.New(packetauth.Config{MD5: r})
		out, e1 := l.Outbound(pkt[:0], pkt) // overlap
		_, e2 := l.Inbound(nil, pkt[:30])
		e3 := l.SeedRevoked(netip.AddrPort{}, netip.AddrPort{}, packetauth.Kind(99))
		e4 := l.Seed(ao.Endpoint{})
		l.Revoke(nil)
		l.Conns(nil)
		return results(out, e1, e2, e3, e4)
	})
	// pcapverify
	try("pcapverify odd", func() []reflect.Value {
		k, _ := demoVerifier(t)
		v, _ := pcapverify.NewVerifier(k, &pcapverify.Options{MaxFlows: -1}, nil)
		e1 := v.Packet(-1, pkt, true)
		e2 := v.Packet(math.MaxInt, nil, false)
		v.Close()
		e3 := v.Packet(1, pkt, false)
		_, e4 := pcapverify.Open(bytes.NewReader([]byte{0xd4, 0xc3, 0xb2, 0xa1}))
		_, e5 := pcapverify.LoadKeys(&keyfile.File{AO: []keyfile.AO{{}}})
		_, e6 := pcapverify.LoadKeys(&keyfile.File{MD5: []keyfile.MD5{{}}})
		return results(e1, e2, e3, e4, e5, e6)
	})
	// keyfile
	try("keyfile odd", func() []reflect.Value {
		f := &keyfile.File{AO: []keyfile.AO{{}}, MD5: []keyfile.MD5{{}}}
		b, e1 := f.Marshal()
		_ = f.String()
		f.Wipe()
		f.Wipe()
		a, n := f.AOConfigs()
		_, e2 := keyfile.Parse(b)
		return results(a, n, e1, e2)
	})
}
