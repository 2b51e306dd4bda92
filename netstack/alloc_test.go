package netstack

import (
	"testing"

	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/link/channel"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// counter is a stack above the wrapper that only counts.
type counter struct{ n int }

func (c *counter) DeliverNetworkPacket(tcpip.NetworkProtocolNumber, *stack.PacketBuffer) { c.n++ }
func (c *counter) DeliverLinkPacket(tcpip.NetworkProtocolNumber, *stack.PacketBuffer)    {}

// pathSetup returns an endpoint whose layer tracks an established
// connection (the client seed of the fuzz target, kind: see fuzzLayer),
// a data segment the stack sends on it and one the peer sent, signed.
func pathSetup(tb testing.TB, kind byte) (*Endpoint, *channel.Endpoint, *counter, []byte, []byte) {
	tb.Helper()
	seed, err := fuzzSeed(kind, false, false)
	if err != nil {
		tb.Fatal(err)
	}
	layer, err := fuzzLayer(kind, false)
	if err != nil {
		tb.Fatal(err)
	}
	child := channel.New(64, 1500, "")
	ep, err := New(child, layer)
	if err != nil {
		tb.Fatal(err)
	}
	c := &counter{}
	ep.Attach(c)
	// Replay the handshake (the first three frames) and keep the data
	// frames: frame 3 is the peer's data, frame 4 the stack's.
	var frames [][]byte
	for rest := seed[1:]; len(rest) >= 3; {
		n := int(rest[1])<<8 | int(rest[2])
		frames = append(frames, rest[3:3+n])
		rest = rest[3+n:]
	}
	for i, f := range frames[:3] {
		if i == 1 {
			if _, err := layer.Inbound(nil, f); err != nil {
				tb.Fatal(err)
			}
			continue
		}
		if _, err := layer.Outbound(nil, f); err != nil {
			tb.Fatal(err)
		}
	}
	return ep, child, c, frames[4], frames[3]
}

func writeOne(ep *Endpoint, child *channel.Endpoint, pkt []byte) {
	p := stack.NewPacketBuffer(stack.PacketBufferOptions{Payload: buffer.MakeWithData(pkt)})
	p.NetworkProtocolNumber = header.IPv4ProtocolNumber
	var l stack.PacketBufferList
	l.PushBack(p)
	ep.WritePackets(l)
	p.DecRef()
	if w := child.Read(); w != nil {
		w.DecRef()
	}
}

func deliverOne(ep *Endpoint, pkt []byte) {
	p := stack.NewPacketBuffer(stack.PacketBufferOptions{Payload: buffer.MakeWithData(pkt)})
	ep.DeliverNetworkPacket(header.IPv4ProtocolNumber, p)
	p.DecRef()
}

// TestEndpointAllocs: in steady state the wrapper's path allocates
// nothing beyond what building the caller's packet takes (the layer, the
// rebuilt PacketBuffer and its view come from pools), either way.
func TestEndpointAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's instrumentation allocates")
	}
	for _, kind := range fuzzKinds {
		ep, child, c, out, in := pathSetup(t, kind)
		// The baseline: building and freeing the caller's packet alone.
		base := testing.AllocsPerRun(1000, func() {
			p := stack.NewPacketBuffer(stack.PacketBufferOptions{Payload: buffer.MakeWithData(out)})
			var l stack.PacketBufferList
			l.PushBack(p)
			p.DecRef()
		})
		w := testing.AllocsPerRun(1000, func() { writeOne(ep, child, out) })
		d := testing.AllocsPerRun(1000, func() { deliverOne(ep, in) })
		counts := ep.Layer().Counters()
		t.Logf("kind %d: allocs per packet: caller's packet %.1f, written %.1f, delivered %.1f; %d delivered; layer %+v", kind, base, w, d, c.n, counts)
		if c.n < 1000 || counts.Dropped.Total() != 0 {
			t.Fatalf("the path did not run: %d delivered, layer %+v", c.n, counts)
		}
		if w > base || d > base {
			t.Errorf("the wrapper allocates: written %.1f, delivered %.1f, the caller's packet alone %.1f", w, d, base)
		}
		ep.Close()
	}
}

// BenchmarkEndpoint: one short data segment (the fuzz seed's) through the
// wrapper each way (written: signed; delivered: verified), per kind of
// key: the wrapper's fixed cost per packet.
func BenchmarkEndpoint(b *testing.B) {
	for _, kind := range fuzzKinds {
		name := []string{"hmac(sha1)", "md5", "kmac256-128"}[kind]
		for _, dir := range []string{"write", "deliver"} {
			b.Run(name+"/"+dir, func(b *testing.B) {
				ep, child, _, out, in := pathSetup(b, kind)
				defer ep.Close()
				b.ReportAllocs()
				b.SetBytes(int64(len(out)))
				for b.Loop() {
					if dir == "write" {
						writeOne(ep, child, out)
					} else {
						deliverOne(ep, in)
					}
				}
			})
		}
	}
}
