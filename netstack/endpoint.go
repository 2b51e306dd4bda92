package netstack

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tcpsig/tcpsig/packetauth"
	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/link/nested"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// ErrNil is returned by [New] for a nil child endpoint or layer.
var ErrNil = errors.New("netstack: nil link endpoint or layer")

// ExpireEvery is how often an [Endpoint] asks its layer to forget idle and
// closed connections ([packetauth.Layer.Expire]).
const ExpireEvery = 10 * time.Second

// Endpoint is a stack.LinkEndpoint that wraps another one (the child, the
// wire side) and passes every packet through a [packetauth.Layer]: what
// the stack writes goes out signed, what the child delivers reaches the
// stack only once verified. It reports the child's MTU minus the layer's
// Overhead, no GSO and no TX checksum offload.
type Endpoint struct {
	nested.Endpoint
	layer   *packetauth.Layer
	dropped atomic.Uint64

	stop     chan struct{}
	stopOnce sync.Once
}

var _ stack.LinkEndpoint = (*Endpoint)(nil)
var _ stack.GSOEndpoint = (*Endpoint)(nil)

// New wraps child with layer; the stack is given the returned endpoint
// (stack.CreateNIC). Until the endpoint is closed, a goroutine calls
// layer.Expire every [ExpireEvery].
func New(child stack.LinkEndpoint, layer *packetauth.Layer) (*Endpoint, error) {
	if child == nil || layer == nil {
		return nil, ErrNil
	}
	e := &Endpoint{layer: layer, stop: make(chan struct{})}
	e.Init(child, e)
	go e.expire()
	return e, nil
}

func (e *Endpoint) expire() {
	t := time.NewTicker(ExpireEvery)
	defer t.Stop()
	for {
		select {
		case now := <-t.C:
			e.layer.Expire(now)
		case <-e.stop:
			return
		}
	}
}

// Layer returns the layer: its Counters, its Conns, and Conn to rotate a
// connection's keys by its 4-tuple.
func (e *Endpoint) Layer() *packetauth.Layer { return e.layer }

// Dropped returns the number of packets the layer refused (either
// direction), which the stack never saw or the wire never carried; the
// layer's Counters say why.
func (e *Endpoint) Dropped() uint64 { return e.dropped.Load() }

// MTU is the child's MTU less the layer's Overhead, so that a segment still
// fits the link once the option is inserted.
func (e *Endpoint) MTU() uint32 {
	m, o := e.Endpoint.MTU(), uint32(e.layer.Overhead())
	if m <= o {
		return 0
	}
	return m - o
}

// SetMTU sets the child's MTU to mtu plus the layer's Overhead: the
// inverse of MTU.
func (e *Endpoint) SetMTU(mtu uint32) {
	e.Endpoint.SetMTU(mtu + uint32(e.layer.Overhead()))
}

// Capabilities are the child's without TX checksum offload: a packet to
// an uncovered peer leaves with the checksum the stack computed.
func (e *Endpoint) Capabilities() stack.LinkEndpointCapabilities {
	return e.Endpoint.Capabilities() &^ stack.CapabilityTXChecksumOffload
}

// SupportedGSO is GSONotSupported: the layer signs one segment at a time.
func (e *Endpoint) SupportedGSO() stack.SupportedGSO { return stack.GSONotSupported }

// GSOMaxSize is 0: no GSO.
func (e *Endpoint) GSOMaxSize() uint32 { return 0 }

// Close stops the expiry goroutine and closes the child.
func (e *Endpoint) Close() {
	e.stopOnce.Do(func() { close(e.stop) })
	e.Endpoint.Close()
}

// batch is the per-call state of WritePackets, pooled.
type batch struct {
	list stack.PacketBufferList
	orig []int // index in the caller's list of each packet of list
	buf  []byte
}

var batches = sync.Pool{New: func() any { return new(batch) }}

// scratches hold inbound packets flattened for the layer (those that span
// views).
var scratches = sync.Pool{New: func() any { return new([]byte) }}

// WritePackets signs the packets of covered peers and writes everything
// the layer does not refuse to the child. A refused packet counts as
// written (TCP retransmits it); the count returned is of the caller's
// packets.
func (e *Endpoint) WritePackets(pkts stack.PacketBufferList) (int, tcpip.Error) {
	b := batches.Get().(*batch)
	defer func() {
		b.list.Reset()
		b.orig = b.orig[:0]
		batches.Put(b)
	}()
	for i, p := range pkts.AsSlice() {
		if q := e.outbound(p, &b.buf); q != nil {
			b.list.PushBack(q)
			b.orig = append(b.orig, i)
		}
	}
	if b.list.Len() == 0 {
		return pkts.Len(), nil
	}
	n, err := e.Endpoint.WritePackets(b.list)
	if n < len(b.orig) {
		return b.orig[n], err
	}
	return pkts.Len(), err
}

// outbound returns what to write for p: p itself (with a reference the
// caller's list owns) for a packet the layer leaves alone, a new packet
// for a signed one, nil for a refused one.
func (e *Endpoint) outbound(p *stack.PacketBuffer, scratch *[]byte) *stack.PacketBuffer {
	link := len(p.LinkHeader().Slice())
	b := contiguous(p)
	if b == nil {
		b = flatten(p, scratch)
	}
	v := e.pass(b, link, e.layer.Overhead(), e.layer.Outbound)
	switch v {
	case nil:
		return nil
	case untouched:
		return p.IncRef()
	}
	out := v.AsSlice()[link:]
	q := stack.NewPacketBuffer(stack.PacketBufferOptions{Payload: buffer.MakeWithView(v)})
	consumeHeaders(q, link, out)
	q.NetworkProtocolNumber = p.NetworkProtocolNumber
	q.TransportProtocolNumber = p.TransportProtocolNumber
	q.EgressRoute = p.EgressRoute
	q.Owner = p.Owner
	q.Hash = p.Hash
	q.Mark = p.Mark
	q.PktType = p.PktType
	q.NICID = p.NICID
	return q
}

// DeliverNetworkPacket passes what the child received through the layer:
// a covered peer's segment reaches the stack verified and stripped, a
// refused one not at all, anything else as it came.
func (e *Endpoint) DeliverNetworkPacket(proto tcpip.NetworkProtocolNumber, p *stack.PacketBuffer) {
	link := len(p.LinkHeader().Slice())
	b := contiguous(p)
	if b == nil {
		scratch := scratches.Get().(*[]byte)
		defer scratches.Put(scratch)
		b = flatten(p, scratch)
	}
	v := e.pass(b, link, 0, e.layer.Inbound)
	switch v {
	case nil:
		return
	case untouched:
		e.Endpoint.DeliverNetworkPacket(proto, p)
		return
	}
	q := stack.NewPacketBuffer(stack.PacketBufferOptions{Payload: buffer.MakeWithView(v)})
	if link > 0 {
		q.LinkHeader().Consume(link)
	}
	q.PktType = p.PktType
	q.NICID = p.NICID
	q.RXChecksumValidated = p.RXChecksumValidated
	e.Endpoint.DeliverNetworkPacket(proto, q)
	q.DecRef()
}

// untouched is what pass returns for a packet the layer left alone.
var untouched = new(buffer.View)

// pass runs b (link bytes of link header, then an IP packet) through fn,
// the layer's Outbound or Inbound, and returns the view to send on: the
// link header, then the layer's output, in a view with room bytes more
// than b for the layer to grow into (or a copy if it had to grow its
// output elsewhere); nil for a refused packet (counted); untouched for b
// itself.
func (e *Endpoint) pass(b []byte, link, room int, fn func(dst, pkt []byte) ([]byte, error)) *buffer.View {
	raw := b[link:]
	v := buffer.NewViewSize(len(b) + room)
	w := v.AsSlice()
	copy(w, b[:link])
	out, err := fn(w[link:link], raw)
	switch {
	case err != nil || len(out) == 0 && len(raw) > 0:
		v.Release()
		e.dropped.Add(1)
		return nil
	case len(out) == 0 || len(raw) > 0 && &out[0] == &raw[0]:
		v.Release()
		return untouched
	case len(w) > link && &out[0] == &w[link]:
		v.CapLength(link + len(out))
		return v
	}
	c := buffer.NewViewSize(link + len(out))
	copy(c.AsSlice(), w[:link])
	copy(c.AsSlice()[link:], out)
	v.Release()
	return c
}

// contiguous returns the whole of p (from its first header) when one view
// holds it all, as a slice of p's own bytes (the layer only reads its
// input: not to be written), else nil.
func contiguous(p *stack.PacketBuffer) []byte {
	n := p.Size()
	vl, off := p.AsViewList()
	for v := vl.Front(); v != nil; v = v.Next() {
		s := v.AsSlice()
		if off >= len(s) {
			off -= len(s)
			continue
		}
		if len(s)-off >= n {
			return s[off : off+n : off+n]
		}
		break
	}
	return nil
}

// flatten copies the whole of p (from its first header) into *scratch,
// growing it if needed, and returns the copy.
func flatten(p *stack.PacketBuffer, scratch *[]byte) []byte {
	n := p.Size()
	if cap(*scratch) < n {
		*scratch = make([]byte, n, max(n, 2048))
	}
	b := (*scratch)[:n]
	vl, off := p.AsViewList()
	i := 0
	for v := vl.Front(); v != nil && i < n; v = v.Next() {
		s := v.AsSlice()
		if off >= len(s) {
			off -= len(s)
			continue
		}
		i += copy(b[i:], s[off:])
		off = 0
	}
	return b[:i]
}

// consumeHeaders marks the link, IP and TCP headers of a rebuilt outbound
// packet q (pkt is its bytes after the link header), for children that
// look at them.
func consumeHeaders(q *stack.PacketBuffer, link int, pkt []byte) {
	if link > 0 {
		q.LinkHeader().Consume(link)
	}
	ip := 0
	switch {
	case len(pkt) >= 20 && pkt[0]>>4 == 4:
		ip = int(pkt[0]&15) * 4
	case len(pkt) >= 40 && pkt[0]>>4 == 6 && pkt[6] == 6:
		ip = 40
	}
	if ip == 0 || ip+20 > len(pkt) {
		return
	}
	q.NetworkHeader().Consume(ip)
	if t := int(pkt[ip+12]>>4) * 4; t >= 20 && ip+t <= len(pkt) {
		q.TransportHeader().Consume(t)
	}
}
