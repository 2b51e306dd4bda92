//go:build linux

package nfqueue

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// Stats are the kernel's counters of a queue.
type Stats struct {
	Waiting     uint32 // packets waiting for a verdict now
	Dropped     uint32 // packets dropped because the queue was full
	UserDropped uint32 // packets dropped because the socket's buffer was full
}

const statsPath = "/proc/thread-self/net/netfilter/nfnetlink_queue"

// Stats reads the queue's counters from the kernel's nfnetlink_queue proc
// file of the queue's namespace, opened by Open; it may be called from any
// goroutine, at the same time as a read.
func (q *Queue) Stats() (Stats, error) {
	var b []byte
	var err error
	if q.stats != nil {
		b, err = io.ReadAll(io.NewSectionReader(q.stats, 0, 1<<30))
	} else {
		b, err = os.ReadFile(statsPath) // the calling thread's namespace
	}
	if q.closed.Load() {
		return Stats{}, ErrClosed
	}
	if err != nil {
		return Stats{}, fmt.Errorf("nfqueue: %w", err)
	}
	return parseStats(b, q.num)
}

// parseStats finds queue num in the lines of nfnetlink_queue's proc file:
// queue number, peer port id, waiting, copy mode, copy range, dropped,
// user dropped, id sequence, 1.
func parseStats(b []byte, num uint16) (Stats, error) {
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) < 7 {
			continue
		}
		if n, err := strconv.ParseUint(f[0], 10, 16); err != nil || uint16(n) != num {
			continue
		}
		var v [3]uint32
		for i, s := range []string{f[2], f[5], f[6]} {
			x, err := strconv.ParseUint(s, 10, 32)
			if err != nil {
				return Stats{}, fmt.Errorf("%w: nfnetlink_queue line %q", ErrMalformed, line)
			}
			v[i] = uint32(x)
		}
		return Stats{Waiting: v[0], Dropped: v[1], UserDropped: v[2]}, nil
	}
	return Stats{}, fmt.Errorf("nfqueue: queue %d not in nfnetlink_queue: %w", num, os.ErrNotExist)
}
