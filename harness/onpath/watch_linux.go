//go:build linux

package onpath

import (
	"fmt"
	"net/netip"

	"github.com/tcpsig/tcpsig/segment"
)

// watcher is one Watch call: the direction it follows and its function.
type watcher struct {
	f  Flow
	fn func(pkt []byte, seg *segment.Segment)
}

// Watch calls fn with each packet the sniffer sees from f.Peer to
// f.Target (a zero port in f matches any port), parsed, until the
// returned function is called. fn runs on the sniffer's goroutine, one
// packet after the other; it must return soon and keep neither pkt nor
// seg (they are the sniffer's buffer).
func (a *Attacker) Watch(f Flow, fn func(pkt []byte, seg *segment.Segment)) (stop func()) {
	w := &watcher{f: f, fn: fn}
	a.watchMu.Lock()
	a.watchers[w] = struct{}{}
	a.watchMu.Unlock()
	return func() {
		a.watchMu.Lock()
		delete(a.watchers, w)
		a.watchMu.Unlock()
	}
}

// watched hands pkt to the watchers of its direction.
func (a *Attacker) watched(pkt []byte) {
	a.watchMu.Lock()
	defer a.watchMu.Unlock()
	if len(a.watchers) == 0 {
		return
	}
	seg, err := segment.ParsePacket(pkt)
	if err != nil {
		return
	}
	h := seg.Header()
	from, to := netip.AddrPortFrom(seg.Src(), h.SrcPort()), netip.AddrPortFrom(seg.Dst(), h.DstPort())
	for w := range a.watchers {
		if matches(w.f.Peer, from) && matches(w.f.Target, to) {
			w.fn(pkt, &seg)
		}
	}
}

// matches reports whether a, a flow's end, names b: the same address,
// and the same port unless a's is 0.
func matches(a, b netip.AddrPort) bool {
	return a.Addr() == b.Addr() && (a.Port() == 0 || a.Port() == b.Port())
}

// SendPacket sends pkt, a whole IPv4 packet (a captured segment replayed,
// or one of BuildSignedSYN's), as it is from M: the kernel recomputes
// its header checksum, and picks an identification only where pkt's is
// 0. It is not counted in Sent or Total.
func (a *Attacker) SendPacket(pkt []byte) error {
	if len(pkt) < 20 || pkt[0]>>4 != 4 {
		return ErrNotIPv4
	}
	dst := netip.AddrFrom4([4]byte(pkt[16:20]))
	if err := a.send(pkt, View{Flow: Flow{Target: netip.AddrPortFrom(dst, 0)}}); err != nil {
		return fmt.Errorf("onpath: send to %v: %w", dst, err)
	}
	return nil
}
