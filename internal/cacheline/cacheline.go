// Package cacheline is tcpsig's one cache-line size: how far apart the
// engine keeps data that different cores write (a lane's lock, a pool
// shard, an MKT's counters, a scratch buffer, a reclaim row).
package cacheline

import "github.com/klauspost/cpuid/v2"

// Size is the unit of separation, in bytes: two 64-byte lines, because
// x86's adjacent-line prefetcher fetches them in pairs, and one 128-byte
// line (Apple M, POWER). Padding a value with Size bytes on each side
// keeps it off every line another such value is on.
const Size = 128

var align = func() int {
	if l := cpuid.CPU.CacheLine; l > Size && l&(l-1) == 0 {
		return l
	}
	return Size
}()

// Align is the unit of buffers allocated at run time: Size, or the CPU's
// line as cpuid (klauspost/cpuid/v2) reports it when that is a larger
// power of two. Fixed padding stays Size; a CPU with longer lines then
// costs speed, never correctness.
func Align() int { return align }
