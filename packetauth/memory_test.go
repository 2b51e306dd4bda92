package packetauth

import (
	"net/netip"
	"runtime"
	"testing"
	"unsafe"

	"github.com/tcpsig/tcpsig/segment"
)

// TestMemoryPerConnection measures the heap a tracked, established TCP-AO
// connection holds (its table entry, the ao.Conn within it and the traffic
// keys derived for one MKT), for the algorithms with the smallest and the
// largest keyed state, and checks it against the bound docs/packetauth.md states.
func TestMemoryPerConnection(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes allocation sizes")
	}
	const n = 200
	for _, c := range []struct {
		alg   string
		bound int
	}{{"hmac(sha1)", 8 << 10}, {"cmac(aes128)", 8 << 10}, {"hmac(sha512)", 8 << 10}} {
		p := newPair(t, false, Config{AO: aoRingAlg(t, addrB4, c.alg, 1, 2)}, Config{AO: aoRingAlg(t, addrA4, c.alg, 2, 1)})
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for i := 0; i < n; i++ {
			q := &pair{t: t, a: &end{l: p.a.l, ap: netip.AddrPortFrom(addrA4, uint16(1000+i)), seq: uint32(i) * 7},
				b: &end{l: p.b.l, ap: p.b.ap, seq: uint32(i) * 11}}
			q.handshake()
			q.send(q.a, q.b, segment.ACK|segment.PSH, payload)
			q.send(q.b, q.a, segment.ACK|segment.PSH, payload)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		per := int(after.HeapAlloc-before.HeapAlloc) / (2 * n) // both layers hold n each
		t.Logf("%s: %d bytes per tracked connection (struct %d bytes)", c.alg, per, unsafe.Sizeof(conn{}))
		if per > c.bound {
			t.Errorf("%s: %d bytes per connection, more than %d", c.alg, per, c.bound)
		}
		runtime.KeepAlive(p)
	}
}
