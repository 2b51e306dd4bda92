package segment

import (
	"net/netip"
	"testing"
)

func BenchmarkTCPChecksum(b *testing.B) {
	buf := make([]byte, 1480)
	for i := range buf {
		buf[i] = byte(i * 7)
	}
	src, dst := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2")
	b.SetBytes(int64(len(buf)))
	for b.Loop() {
		TCPChecksum(src, dst, buf)
	}
}
