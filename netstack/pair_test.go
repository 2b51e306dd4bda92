package netstack

// An in-memory link between two gVisor stacks: two channel endpoints and
// a goroutine per direction moving packets from one's outbound queue into
// the other's inbound path.

import (
	"context"
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"

	"github.com/tcpsig/tcpsig/ao"
	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/md5sig"
	"github.com/tcpsig/tcpsig/packetauth"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/link/channel"
	"gvisor.dev/gvisor/pkg/tcpip/link/ethernet"
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
			// draft's algorithms refuse shorter master keys.
			cfg.AO = ao.NewKeyring(nil)
			for _, id := range []uint8{2, 1} {
				key := fmt.Sprintf("tcpsig netstack ao key %d, of 32 bytes", id)
				if _, err := cfg.AO.Add(keys.AO{Peer: p, SendID: id, RecvID: id, Algorithm: alg, Key: []byte(key)}); err != nil {
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
	ca, cb := channel.New(1024, mtu, ""), channel.New(1024, mtu, "")
	var la, lb stack.LinkEndpoint = ca, cb
	if ether {
		ca.LinkEPCapabilities, cb.LinkEPCapabilities = 0, 0
		ca.SetLinkAddress(tcpip.LinkAddress("\x02\x00\x00\x00\x00\x01"))
		cb.SetLinkAddress(tcpip.LinkAddress("\x02\x00\x00\x00\x00\x02"))
		la, lb = ethernet.New(ca), ethernet.New(cb)
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
	go p.move(ctx, ca, cb)
	go p.move(ctx, cb, ca)
	return p, nil
}

// move carries packets written to from into to's inbound path.
func (p *pair) move(ctx context.Context, from, to *channel.Endpoint) {
	defer p.wg.Done()
	for {
		pkt := from.ReadContext(ctx)
		if pkt == nil {
			return
		}
		q := stack.NewPacketBuffer(stack.PacketBufferOptions{Payload: pkt.ToBuffer()})
		proto := pkt.NetworkProtocolNumber
		pkt.DecRef()
		p.segments.Add(1)
		to.InjectInbound(proto, q)
		q.DecRef()
	}
}

func (p *pair) close() {
	p.cancel()
	p.wg.Wait()
	for _, s := range []*stack.Stack{p.a, p.b} {
		s.Close()
		s.Wait()
	}
}

func (p *pair) String() string { return fmt.Sprintf("pair %v <-> %v", pairA, pairB) }
