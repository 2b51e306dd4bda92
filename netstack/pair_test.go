package netstack

// An in-memory link between two gVisor stacks: a queueLink per direction
// over a channel endpoint, and a goroutine per direction moving packets
// from one's queue into the other's inbound path.
//
// The link loses nothing (issue 26 item 6). A channel endpoint's own
// queue drops what does not fit (its WritePackets returns a short count
// and no error, and gVisor's NIC ignores the count), and a burst of such
// losses stalled gVisor's TCP for minutes: a receiver that has shut down
// its write side sends no SACK blocks, and its peer then recovers two
// segments per RTO (TestGVisorHalfClosedNoSACK). These tests are about
// signing, not loss recovery; allVerified checks that nothing was lost.

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/tcpsig/tcpsig/ao"
	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/md5sig"
	"github.com/tcpsig/tcpsig/packetauth"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/link/channel"
	"gvisor.dev/gvisor/pkg/tcpip/link/ethernet"
	"gvisor.dev/gvisor/pkg/tcpip/link/nested"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

var (
	pairA = netip.MustParsePrefix("198.51.100.1/24")
	pairB = netip.MustParsePrefix("198.51.100.2/24")
)

// pair is two stacks over an in-memory link.
type pair struct {
	a, b     *stack.Stack
	ea, eb   *Endpoint // the wrappers, nil when unwrapped
	la, lb   *packetauth.Layer
	qa, qb   *queueLink   // what a and b send
	segments atomic.Int64 // packets moved, both directions
	cancel   context.CancelFunc
	wg       sync.WaitGroup
}

// keys says how a pair is signed: alg is "" (no wrapper), "none" (a
// wrapper whose layer covers no one), "md5" or a TCP-AO algorithm.
func pairLayers(alg string) (la, lb *packetauth.Layer, err error) {
	mk := func(peer netip.Addr) (*packetauth.Layer, error) {
		// gVisor fills every outbound checksum (the wrapper turns TX
		// checksum offload off): the layer may update them.
		cfg := packetauth.Config{StackChecksums: true}
		p := netip.PrefixFrom(peer, 32)
		switch alg {
		case "none":
			cfg.AO = ao.NewKeyring(nil) // a keyring without keys: nobody is covered
		case "md5":
			cfg.MD5 = md5sig.NewKeyring(nil)
			if _, err := cfg.MD5.Add(keys.MD5{Peer: p, Key: []byte(md5Key)}); err != nil {
				return nil, err
			}
		default:
			// Two MKTs, KeyIDs 1 and 2, for rotations; 1 is added last,
			// so it starts as the current key. 32 bytes or more: the
			// draft's algorithms refuse shorter master keys. With the
			// suffix "+schedule", key 1 sends until schedT0 and key 2
			// from then, each keyring on schedClock (schedRings lists
			// them).
			name, scheduled := strings.CutSuffix(alg, "+schedule")
			cfg.AO = ao.NewKeyring(nil)
			if scheduled {
				cfg.AO.SetClock(schedClock.Now)
				schedRings = append(schedRings, cfg.AO)
			}
			for _, id := range []uint8{2, 1} {
				key := fmt.Sprintf("tcpsig netstack ao key %d, of 32 bytes", id)
				c := keys.AO{Peer: p, SendID: id, RecvID: id, Algorithm: name, Key: []byte(key)}
				if scheduled {
					c.Lifetime = schedLifetime(id)
				}
				if _, err := cfg.AO.Add(c); err != nil {
					return nil, err
				}
			}
		}
		return packetauth.New(cfg)
	}
	if la, err = mk(pairB.Addr()); err != nil {
		return nil, nil, err
	}
	lb, err = mk(pairA.Addr())
	return la, lb, err
}

// newPair returns two stacks joined by an in-memory link of the given
// MTU, each wrapped with its own layer unless alg is "".
func newPair(alg string, mtu uint32) (*pair, error) { return newLinkPair(alg, mtu, false) }

// newLinkPair is newPair with, when ether, an Ethernet link: gVisor's
// ethernet endpoint over each channel, below the wrapper, so that packets
// reach the wrapper with a link header (and the stacks resolve each other
// with ARP, which passes the layer untouched).
func newLinkPair(alg string, mtu uint32, ether bool) (*pair, error) {
	p := &pair{}
	// The channel endpoints' own queues stay empty: the queueLinks take
	// what is written.
	ca, cb := channel.New(1, mtu, ""), channel.New(1, mtu, "")
	if ether {
		ca.LinkEPCapabilities, cb.LinkEPCapabilities = 0, 0
		ca.SetLinkAddress(tcpip.LinkAddress("\x02\x00\x00\x00\x00\x01"))
		cb.SetLinkAddress(tcpip.LinkAddress("\x02\x00\x00\x00\x00\x02"))
	}
	p.qa, p.qb = newQueueLink(ca), newQueueLink(cb)
	var la, lb stack.LinkEndpoint = p.qa, p.qb
	if ether {
		la, lb = ethernet.New(la), ethernet.New(lb)
	}
	if alg != "" {
		var err error
		if p.la, p.lb, err = pairLayers(alg); err != nil {
			return nil, err
		}
		if p.ea, err = New(la, p.la); err != nil {
			return nil, err
		}
		if p.eb, err = New(lb, p.lb); err != nil {
			return nil, err
		}
		la, lb = p.ea, p.eb
	}
	var err error
	if p.a, err = newStack(la, pairA); err != nil {
		return nil, err
	}
	if p.b, err = newStack(lb, pairB); err != nil {
		p.a.Close()
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	p.wg.Add(2)
	go p.move(ctx, p.qa, cb)
	go p.move(ctx, p.qb, ca)
	return p, nil
}

// move carries packets written to from into to's inbound path, in order,
// until ctx is done; then from is closed.
func (p *pair) move(ctx context.Context, from *queueLink, to *channel.Endpoint) {
	defer p.wg.Done()
	defer from.close()
	for {
		pkts := from.take(ctx)
		if pkts == nil {
			return
		}
		for _, pkt := range pkts {
			q := stack.NewPacketBuffer(stack.PacketBufferOptions{Payload: pkt.ToBuffer()})
			proto := pkt.NetworkProtocolNumber
			pkt.DecRef()
			p.segments.Add(1)
			to.InjectInbound(proto, q)
			q.DecRef()
		}
	}
}

// lost returns the packets the link did not carry: those its drop hooks
// took and those written after it closed.
func (p *pair) lost() uint64 { return p.qa.lost.Load() + p.qb.lost.Load() }

func (p *pair) close() {
	p.cancel()
	p.wg.Wait()
	for _, s := range []*stack.Stack{p.a, p.b} {
		s.Close()
		s.Wait()
	}
}

// queueLink is one direction of the pair's link, between a stack (or its
// wrapper) and a channel endpoint whose inbound path it leaves alone:
// WritePackets appends to a queue without bound, so it neither drops nor
// blocks, and move takes the queue whole. No writer ever waits, so
// nothing can deadlock, though the move goroutines write too (a RST for
// an unknown connection, an ARP reply: sent as they deliver). The queue
// is bounded in practice by what TCP has in flight: its windows.
type queueLink struct {
	nested.Endpoint
	ready chan struct{} // a token after a write, for take to look again
	lost  atomic.Uint64

	mu     sync.Mutex // guards what follows
	queue  []*stack.PacketBuffer
	closed bool
	// drop, when set (setDrop), is asked about each packet written, in
	// order; it keeps those for which it returns true off the link.
	drop func(*stack.PacketBuffer) bool
}

func newQueueLink(child stack.LinkEndpoint) *queueLink {
	l := &queueLink{ready: make(chan struct{}, 1)}
	l.Init(child, l)
	return l
}

// WritePackets queues a reference to each packet (a clone, as a channel
// endpoint keeps, sharing the bytes) and reports them all written.
func (l *queueLink) WritePackets(pkts stack.PacketBufferList) (int, tcpip.Error) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		l.lost.Add(uint64(pkts.Len()))
		return 0, &tcpip.ErrClosedForSend{}
	}
	for _, pkt := range pkts.AsSlice() {
		if l.drop != nil && l.drop(pkt) {
			l.lost.Add(1)
			continue
		}
		l.queue = append(l.queue, pkt.Clone())
	}
	l.mu.Unlock()
	select {
	case l.ready <- struct{}{}:
	default:
	}
	return pkts.Len(), nil
}

// setDrop installs drop (nil removes it).
func (l *queueLink) setDrop(drop func(*stack.PacketBuffer) bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.drop = drop
}

// take waits until something is queued and returns all of it, oldest
// first (the caller owns the references), or nil once ctx is done.
func (l *queueLink) take(ctx context.Context) []*stack.PacketBuffer {
	for {
		l.mu.Lock()
		q := l.queue
		l.queue = nil
		l.mu.Unlock()
		if len(q) > 0 {
			return q
		}
		select {
		case <-l.ready:
		case <-ctx.Done():
			return nil
		}
	}
}

// close releases what is still queued (counted as lost) and refuses
// further writes.
func (l *queueLink) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	for _, pkt := range l.queue {
		pkt.DecRef()
	}
	l.lost.Add(uint64(len(l.queue)))
	l.queue = nil
}

func (p *pair) String() string { return fmt.Sprintf("pair %v <-> %v", pairA, pairB) }
