//go:build linux

package onpath

import (
	"encoding/binary"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tcpsig/tcpsig/harness/netns"
	"github.com/tcpsig/tcpsig/segment"
	"golang.org/x/sys/unix"
)

// Inbox sees the IPv4 TCP segments a host's TCP is handed, after its
// netfilter input hook: a raw IPPROTO_TCP socket gets its copy of a
// segment in ip_local_deliver_finish, after NF_INET_LOCAL_IN, so behind
// tcpsig shim (whose rules queue at that hook) it sees exactly what the
// shim accepted, as the shim passed it on (its TCP-AO or TCP-MD5 option
// overwritten by NOPs, the IP header as it came). It is the ground truth
// of what got through, whatever the shim's own counters say.
type Inbox struct {
	f       *os.File
	fn      func(pkt []byte, seg *segment.Segment)
	dropped atomic.Uint32 // the socket's drops (SO_RXQ_OVFL), as of the last packet read
	mu      sync.Mutex    // held from a read to the end of its segment's handling
	errMu   sync.Mutex
	err     error
	done    chan struct{}
	closing atomic.Bool
}

// Listen opens an Inbox in namespace n: fn is called with each TCP
// segment n's stack receives, one after the other, on the Inbox's
// goroutine (pkt and seg are its buffer: not to be kept). It needs
// CAP_NET_RAW.
func Listen(n *netns.Keeper, fn func(pkt []byte, seg *segment.Segment)) (*Inbox, error) {
	in := &Inbox{fn: fn, done: make(chan struct{})}
	err := n.Do(func() error {
		fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_RAW|syscall.SOCK_CLOEXEC|syscall.SOCK_NONBLOCK, syscall.IPPROTO_TCP)
		if err != nil {
			return err
		}
		in.f = os.NewFile(uintptr(fd), "onpath inbox")
		_ = syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_RCVBUFFORCE, 32<<20)
		return syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, unix.SO_RXQ_OVFL, 1)
	})
	if err != nil {
		if in.f != nil {
			in.f.Close()
		}
		return nil, fmt.Errorf("onpath: inbox: %w", err)
	}
	go in.loop()
	return in, nil
}

func (in *Inbox) loop() {
	defer close(in.done)
	rc, err := in.f.SyscallConn()
	if err != nil {
		in.fail(err)
		return
	}
	buf := make([]byte, 1<<16)
	oob := make([]byte, syscall.CmsgSpace(4))
	for {
		var n, oobn int
		var rerr error
		// mu is taken before the read and kept until the segment read is
		// handled, so that Sync, holding it, sees a socket either with
		// the segment still queued or with it handled.
		err := rc.Read(func(fd uintptr) bool {
			in.mu.Lock()
			n, oobn, _, _, rerr = syscall.Recvmsg(int(fd), buf, oob, 0)
			if rerr == syscall.EAGAIN {
				in.mu.Unlock()
				return false
			}
			return true
		})
		if err != nil {
			if !in.closing.Load() {
				in.fail(err)
			}
			return
		}
		if rerr == nil {
			in.overflow(oob[:oobn])
			if seg, err := segment.ParsePacket(buf[:n]); err == nil {
				in.fn(buf[:n], &seg)
			}
		}
		in.mu.Unlock()
		if rerr != nil && rerr != syscall.EINTR {
			in.fail(rerr)
			return
		}
	}
}

// overflow records the drop count a packet's SO_RXQ_OVFL message carries.
func (in *Inbox) overflow(oob []byte) {
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil {
		return
	}
	for _, m := range msgs {
		if m.Header.Level == syscall.SOL_SOCKET && m.Header.Type == unix.SO_RXQ_OVFL && len(m.Data) >= 4 {
			in.dropped.Store(binary.NativeEndian.Uint32(m.Data))
		}
	}
}

func (in *Inbox) fail(err error) {
	in.errMu.Lock()
	defer in.errMu.Unlock()
	if in.err == nil {
		in.err = fmt.Errorf("onpath: inbox: %w", err)
	}
}

// Dropped is the number of segments the socket's queue had no room for,
// as the last segment read told it: an observation with drops missed
// some of what was delivered.
func (in *Inbox) Dropped() uint32 { return in.dropped.Load() }

// Sync waits (up to timeout) until every segment queued on the socket
// when it is called has been handed to fn; it reports whether it did.
func (in *Inbox) Sync(timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for {
		in.mu.Lock()
		queued, err := in.queued()
		in.mu.Unlock()
		if err == nil && queued == 0 {
			return true
		}
		if err != nil || time.Now().After(deadline) {
			return false
		}
		time.Sleep(time.Millisecond)
	}
}

// queued is the size of the next segment waiting on the socket (SIOCINQ
// on a raw socket), 0 when none is.
func (in *Inbox) queued() (int, error) {
	rc, err := in.f.SyscallConn()
	if err != nil {
		return 0, err
	}
	var n int
	var ierr error
	if err := rc.Control(func(fd uintptr) { n, ierr = unix.IoctlGetInt(int(fd), unix.SIOCINQ) }); err != nil {
		return 0, err
	}
	return n, ierr
}

// Err is the first error of the socket, if any.
func (in *Inbox) Err() error {
	in.errMu.Lock()
	defer in.errMu.Unlock()
	return in.err
}

// Close stops the Inbox and closes its socket; it returns Err.
func (in *Inbox) Close() error {
	if in.closing.CompareAndSwap(false, true) {
		_ = in.f.SetReadDeadline(time.Unix(1, 0))
		<-in.done
		in.f.Close()
	}
	return in.Err()
}
