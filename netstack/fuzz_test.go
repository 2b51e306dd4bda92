package netstack

// The wrapper's packet path, both directions, under arbitrary packets:
// never a panic; never a TCP segment of a covered peer delivered to the
// stack without its MAC verified (or with the option still in it); never
// a TCP segment to a covered peer written to the wire unsigned.

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"testing"

	"github.com/tcpsig/tcpsig/ao"
	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/md5sig"
	"github.com/tcpsig/tcpsig/packetauth"
	"github.com/tcpsig/tcpsig/segment"
	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/link/channel"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

var (
	fuzzLocal4 = netip.MustParseAddr("192.0.2.1")
	fuzzPeer4  = netip.MustParseAddr("192.0.2.9")
	fuzzLocal6 = netip.MustParseAddr("2001:db8::1")
	fuzzPeer6  = netip.MustParseAddr("2001:db8::9")
)

// fuzzKinds are the kinds of key of fuzzLayer.
var fuzzKinds = []byte{0, 1, 2}

// fuzzLayer is the layer of a fuzz run: kind 0 covers the two peers with
// TCP-AO hmac(sha1) (KeyIDs 1 and 2), kind 1 with TCP-MD5, kind 2 with
// TCP-AO kmac256-128 (the draft's: a 20-byte option, a 32-byte master
// key). forPeer builds the peer's side (keys for the local addresses).
func fuzzLayer(kind byte, forPeer bool) (*packetauth.Layer, error) {
	peers := []netip.Addr{fuzzPeer4, fuzzPeer6}
	if forPeer {
		peers = []netip.Addr{fuzzLocal4, fuzzLocal6}
	}
	var cfg packetauth.Config
	for _, a := range peers {
		p := netip.PrefixFrom(a, a.BitLen())
		if kind == 1 {
			if cfg.MD5 == nil {
				cfg.MD5 = md5sig.NewKeyring(nil)
			}
			if _, err := cfg.MD5.Add(keys.MD5{Peer: p, Key: []byte(md5Key)}); err != nil {
				return nil, err
			}
			continue
		}
		if cfg.AO == nil {
			cfg.AO = ao.NewKeyring(nil)
		}
		alg, key := "hmac(sha1)", []byte{0, 1, 2, 3}
		if kind == 2 {
			alg, key = "kmac256-128", []byte("tcpsig netstack fuzz, 32 bytes..")
		}
		for _, id := range []uint8{2, 1} {
			key[0] = id
			if _, err := cfg.AO.Add(keys.AO{Peer: p, SendID: id, RecvID: id, Algorithm: alg, Key: key}); err != nil {
				return nil, err
			}
		}
	}
	return packetauth.New(cfg)
}

// recorder is the stack above the wrapper: it keeps what it is given.
type recorder struct{ got [][]byte }

func (r *recorder) DeliverNetworkPacket(_ tcpip.NetworkProtocolNumber, p *stack.PacketBuffer) {
	v := p.ToView()
	r.got = append(r.got, v.ToSlice())
	v.Release()
}

func (r *recorder) DeliverLinkPacket(tcpip.NetworkProtocolNumber, *stack.PacketBuffer) {}

// Frames of a fuzz input: a direction byte (even: from the wire, odd:
// from the stack), a 2-byte length, the packet.
func appendFrame(b []byte, out bool, pkt []byte) []byte {
	d := byte(0)
	if out {
		d = 1
	}
	return append(binary.BigEndian.AppendUint16(append(b, d), uint16(len(pkt))), pkt...)
}

// fuzzSeed is a connection of kind (see fuzzLayer) to port 179 of the
// local address, opened by the peer (server) or by the stack, with data
// both ways and FINs: wire packets signed by a peer layer in lockstep
// with a layer like the fuzzed one, so that they verify.
func fuzzSeed(kind byte, server, v6 bool) ([]byte, error) {
	l, err := fuzzLayer(kind, false)
	if err != nil {
		return nil, err
	}
	peer, err := fuzzLayer(kind, true)
	if err != nil {
		return nil, err
	}
	local, remote := fuzzLocal4, fuzzPeer4
	if v6 {
		local, remote = fuzzLocal6, fuzzPeer6
	}
	in := []byte{kind}
	var lseq, pseq uint32 = 5000, 9000
	lport, pport := uint16(179), uint16(40000)
	// send passes a segment from the stack (out) or the peer through both
	// layers, as the wire would, and records the frame the fuzzed
	// endpoint sees: the stack's unsigned packet, or the peer's signed one.
	send := func(out bool, flags segment.Flags, payload []byte) error {
		ip := segment.IP{Src: remote, Dst: local}
		f := segment.Fields{SrcPort: pport, DstPort: lport, Seq: pseq, Ack: lseq, Flags: flags, Window: 65000}
		if out {
			ip = segment.IP{Src: local, Dst: remote}
			f = segment.Fields{SrcPort: lport, DstPort: pport, Seq: lseq, Ack: pseq, Flags: flags, Window: 65000}
		}
		if flags&segment.ACK == 0 {
			f.Ack = 0
		}
		pkt, err := segment.AppendPacket(nil, ip, f, payload)
		if err != nil {
			return err
		}
		n := uint32(len(payload))
		if flags&(segment.SYN|segment.FIN) != 0 {
			n++
		}
		if out {
			lseq += n
			in = appendFrame(in, true, pkt)
			signed, err := l.Outbound(nil, pkt)
			if err != nil {
				return fmt.Errorf("seed: local outbound: %w", err)
			}
			_, err = peer.Inbound(nil, signed)
			return err
		}
		pseq += n
		signed, err := peer.Outbound(nil, pkt)
		if err != nil {
			return fmt.Errorf("seed: peer outbound: %w", err)
		}
		in = appendFrame(in, false, signed)
		_, err = l.Inbound(nil, signed)
		return err
	}
	steps := []struct {
		out   bool
		flags segment.Flags
		data  string
	}{
		{!server, segment.SYN, ""},
		{server, segment.SYN | segment.ACK, ""},
		{!server, segment.ACK, ""},
		{false, segment.ACK | segment.PSH, "peer data"},
		{true, segment.ACK | segment.PSH, "local data"},
		{false, segment.ACK | segment.FIN, ""},
		{true, segment.ACK | segment.FIN, ""},
		{false, segment.ACK, ""},
	}
	for _, s := range steps {
		if err := send(s.out, s.flags, []byte(s.data)); err != nil {
			return nil, err
		}
	}
	return in, nil
}

// tcpFrom reports whether netstack would take pkt for TCP (or for a
// fragment that may carry TCP) from a covered peer (inbound), or to one
// (outbound): IPv4 protocol 6, or an IPv6 chain of hop-by-hop, routing
// and destination options headers ending in TCP or a fragment header.
// It is written apart from the segment package the layer parses with.
func tcpFrom(pkt []byte, inbound bool) bool {
	var a netip.Addr
	switch {
	case len(pkt) >= header.IPv4MinimumSize && pkt[0]>>4 == 4:
		h := header.IPv4(pkt)
		a = netip.AddrFrom4(h.SourceAddress().As4())
		if !inbound {
			a = netip.AddrFrom4(h.DestinationAddress().As4())
		}
		if h.Protocol() != 6 {
			return false
		}
	case len(pkt) >= header.IPv6MinimumSize && pkt[0]>>4 == 6:
		h := header.IPv6(pkt)
		a = netip.AddrFrom16(h.SourceAddress().As16())
		if !inbound {
			a = netip.AddrFrom16(h.DestinationAddress().As16())
		}
		next, off := pkt[6], header.IPv6MinimumSize
		for i := 0; ; i++ {
			if next == 6 || next == 44 {
				break
			}
			if (next != 0 && next != 43 && next != 60) || off+8 > len(pkt) || i > 32 {
				return false
			}
			next, off = pkt[off], off+8*(int(pkt[off+1])+1)
		}
	default:
		return false
	}
	return a == fuzzPeer4 || a == fuzzPeer6
}

func FuzzEndpoint(f *testing.F) {
	for _, kind := range fuzzKinds {
		for _, server := range []bool{false, true} {
			for _, v6 := range []bool{false, true} {
				seed, err := fuzzSeed(kind, server, v6)
				if err != nil {
					f.Fatal(err)
				}
				f.Add(seed)
			}
		}
	}
	md5Check, err := md5Checker()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, in []byte) { fuzzRun(t, md5Check, in) })
}

// md5Checker verifies MD5 segments as the peers would, whatever source
// address the stack put in them: with the key for every address.
func md5Checker() (*md5sig.Keyring, error) {
	ring := md5sig.NewKeyring(nil)
	for _, p := range []string{"0.0.0.0/0", "::/0"} {
		if _, err := ring.Add(keys.MD5{Peer: netip.MustParsePrefix(p), Key: []byte(md5Key)}); err != nil {
			return nil, err
		}
	}
	return ring, nil
}

// fuzzRun passes the frames of in through a fresh endpoint and checks
// every packet it lets through; it returns the packets delivered to the
// stack and written to the wire, and the layer's counters.
func fuzzRun(t testing.TB, md5Check *md5sig.Keyring, in []byte) (delivered, written int, c packetauth.Counters) {
	if len(in) == 0 {
		return
	}
	kind := in[0] % byte(len(fuzzKinds))
	layer, err := fuzzLayer(kind, false)
	if err != nil {
		t.Fatal(err)
	}
	child := channel.New(16, 1500, "")
	ep, err := New(child, layer)
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	rec := &recorder{}
	ep.Attach(rec)
	for rest := in[1:]; len(rest) >= 3; {
		out := rest[0]%2 == 1
		n := min(int(binary.BigEndian.Uint16(rest[1:])), len(rest)-3)
		pkt := rest[3 : 3+n]
		rest = rest[3+n:]
		proto := header.IPv4ProtocolNumber
		if len(pkt) > 0 && pkt[0]>>4 == 6 {
			proto = header.IPv6ProtocolNumber
		}
		before := layer.Counters()
		p := stack.NewPacketBuffer(stack.PacketBufferOptions{Payload: buffer.MakeWithData(pkt)})
		p.NetworkProtocolNumber = proto
		if !out {
			rec.got = rec.got[:0]
			ep.DeliverNetworkPacket(proto, p)
			p.DecRef()
			after := layer.Counters()
			delivered += len(rec.got)
			if len(rec.got) > 1 {
				t.Fatalf("one packet delivered %d times", len(rec.got))
			}
			if len(rec.got) == 1 && tcpFrom(rec.got[0], true) {
				if after.Verified != before.Verified+1 {
					t.Fatalf("a covered peer's segment reached the stack unverified (verified %d -> %d): %x", before.Verified, after.Verified, pkt)
				}
				if seg, err := segment.ParsePacket(rec.got[0]); err == nil && (seg.Auth().AO != 0 || seg.Auth().MD5 != 0) {
					t.Fatalf("the option reached the stack: %x", rec.got[0])
				}
			}
			continue
		}
		var pl stack.PacketBufferList
		pl.PushBack(p)
		ep.WritePackets(pl)
		pl.DecRef()
		after := layer.Counters()
		for {
			w := child.Read()
			if w == nil {
				break
			}
			v := w.ToView()
			b := v.ToSlice()
			v.Release()
			w.DecRef()
			written++
			if !tcpFrom(b, false) {
				continue
			}
			if after.Signed != before.Signed+1 {
				t.Fatalf("a segment to a covered peer left unsigned (signed %d -> %d): %x", before.Signed, after.Signed, b)
			}
			seg, err := segment.ParsePacket(b)
			switch {
			case err != nil:
				t.Fatalf("a signed segment does not parse (%v): %x", err, b)
			case kind == 1 && md5Check.Verify(&seg, 0) != nil:
				t.Fatalf("an MD5 segment to a covered peer does not verify (%v): %x", md5Check.Verify(&seg, 0), b)
			case kind != 1 && seg.Auth().AO == 0:
				t.Fatalf("a TCP-AO segment without the option: %x", b)
			}
		}
	}
	return delivered, written, layer.Counters()
}

// TestFuzzSeeds: the seeds run the whole path, so that the fuzzer starts
// from packets that verify: every wire frame is delivered verified, every
// stack frame written signed.
func TestFuzzSeeds(t *testing.T) {
	md5Check, err := md5Checker()
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range fuzzKinds {
		for _, server := range []bool{false, true} {
			for _, v6 := range []bool{false, true} {
				seed, err := fuzzSeed(kind, server, v6)
				if err != nil {
					t.Fatal(err)
				}
				d, w, c := fuzzRun(t, md5Check, seed)
				in, out := 4, 4 // the steps of fuzzSeed
				if server {
					in, out = 5, 3
				}
				if d != in || w != out || c.Verified != uint64(in) || c.Signed != uint64(out) || c.Dropped.Total() != 0 {
					t.Errorf("kind %d server %v v6 %v: delivered %d, written %d, layer %+v", kind, server, v6, d, w, c)
				}
			}
		}
	}
}
