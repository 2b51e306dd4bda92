//go:build linux

package nfqueue_test

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tcpsig/tcpsig/harness/netns"
	"github.com/tcpsig/tcpsig/segment"
	"github.com/tcpsig/tcpsig/shim/nfqueue"
	"github.com/tcpsig/tcpsig/shim/nfrules"
	"golang.org/x/sys/unix"
)

// TestBatch: under a bulk transfer one wake-up reads several packets, and
// their verdicts, sent together in one message, deliver every byte.
func TestBatch(t *testing.T) {
	inNS(t, 1500, func(q *nfqueue.Queue) error {
		var ps [64]nfqueue.Packet
		most := 0
		done := make(chan error, 1)
		go func() {
			for {
				n, err := q.ReadBatch(ps[:])
				if err != nil {
					if errors.Is(err, nfqueue.ErrClosed) {
						err = nil
					}
					done <- err
					return
				}
				most = max(most, n)
				for i := range ps[:n] {
					if ps[i].Err != nil {
						done <- ps[i].Err
						return
					}
					if err := q.AddVerdict(ps[i].ID, nfqueue.Accept, nil); err != nil {
						done <- err
						return
					}
				}
				if err := q.Flush(); err != nil && !errors.Is(err, nfqueue.ErrClosed) {
					done <- err
					return
				}
			}
		}()
		msg := bytes.Repeat([]byte{0x5a}, 8<<20)
		got, err := exchange(msg, 10*time.Second)
		q.Close()
		if rerr := <-done; rerr != nil {
			t.Error(rerr)
		}
		if err != nil {
			return err
		}
		if !bytes.Equal(got, msg) {
			t.Errorf("server read %d bytes, want %d", len(got), len(msg))
		}
		if most < 2 {
			t.Errorf("at most %d packet per read under a bulk transfer: want batches", most)
		}
		t.Logf("largest batch: %d packets", most)
		return nil
	})
}

// TestCloseWakesRead: Close makes a read sleeping on an empty queue return
// ErrClosed.
func TestCloseWakesRead(t *testing.T) {
	inNS(t, 1500, func(q *nfqueue.Queue) error {
		done := make(chan error, 1)
		go func() {
			var p nfqueue.Packet
			done <- q.Read(&p)
		}()
		time.Sleep(50 * time.Millisecond)
		q.Close()
		select {
		case err := <-done:
			if !errors.Is(err, nfqueue.ErrClosed) {
				t.Errorf("read after Close: %v, want ErrClosed", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("Close did not wake a sleeping read")
		}
		return nil
	})
}

// TestFullQueueDrops: a queue nobody answers holds at most its MaxLen
// packets; the kernel drops the rest and counts them, and nothing passes
// unanswered (the connection is never made).
func TestFullQueueDrops(t *testing.T) {
	inNS(t, 1500, func(*nfqueue.Queue) error {
		q, err := nfqueue.Open(nfqueue.Config{Num: 9, MaxLen: 4})
		if err != nil {
			return err
		}
		defer q.Close()
		if _, err := nfrules.Install(nfrules.Spec{Table: "shtest", Queue: 9, Peers: []netip.Prefix{netip.PrefixFrom(peer, 32)}}); err != nil {
			return err
		}
		// 16 connections' SYNs, from this thread (in the namespace).
		var fds []int
		defer func() {
			for _, fd := range fds {
				unix.Close(fd)
			}
		}()
		for range 16 {
			fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
			if err != nil {
				return err
			}
			fds = append(fds, fd)
			if err := unix.Connect(fd, &unix.SockaddrInet4{Port: 9, Addr: peer.As4()}); err != nil && err != unix.EINPROGRESS && err != unix.EPERM {
				return err
			}
		}
		time.Sleep(300 * time.Millisecond)
		for _, fd := range fds {
			pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}
			if n, _ := unix.Poll(pfd, 0); n > 0 {
				if e, _ := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ERROR); e == 0 {
					t.Error("connected through a queue that answers nothing")
				}
			}
		}
		st, err := q.Stats()
		if err != nil {
			return err
		}
		if st.Waiting > 4 || st.Dropped == 0 {
			t.Errorf("stats %+v: want at most 4 waiting and drops counted", st)
		}
		t.Logf("stats: %+v", st)
		// From a thread outside the namespace too: Stats reads the
		// queue's namespace, not the caller's.
		type res struct {
			st  nfqueue.Stats
			err error
		}
		c := make(chan res)
		go func() {
			runtime.LockOSThread() // a new thread, never moved into the namespace; exits with the goroutine
			st, err := q.Stats()
			c <- res{st, err}
		}()
		if r := <-c; r.err != nil || r.st.Dropped < st.Dropped {
			t.Errorf("stats from another thread: %+v, %v; want those of the queue (%+v)", r.st, r.err, st)
		}
		return nil
	})
}

// TestSpread: with rules for two queues, every connection's packets, both
// ways, go to one of them, and 16 connections use both.
func TestSpread(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: network namespaces and netfilter rules")
	}
	err := netns.Run(func() error {
		for _, a := range []netip.Addr{local, peer} {
			if err := netns.AddAddr("lo", netip.PrefixFrom(a, 32)); err != nil {
				return err
			}
		}
		var qs [2]*nfqueue.Queue
		for i := range qs {
			q, err := nfqueue.Open(nfqueue.Config{Num: 20 + uint16(i)})
			if err != nil {
				return err
			}
			defer q.Close()
			qs[i] = q
		}
		if _, err := nfrules.Install(nfrules.Spec{Table: "shtest", Queue: 20, Queues: 2, Peers: []netip.Prefix{netip.PrefixFrom(peer, 32)}}); err != nil {
			return err
		}
		var mu sync.Mutex
		seen := map[[2]netip.AddrPort]map[int]map[uint8]bool{} // connection -> queue -> hooks
		var wg sync.WaitGroup
		for i, q := range qs {
			wg.Go(func() {
				var p nfqueue.Packet
				for q.Read(&p) == nil {
					if seg, err := segment.ParsePacket(p.Payload); err == nil {
						a, b := netip.AddrPortFrom(seg.Src(), seg.Header().SrcPort()), netip.AddrPortFrom(seg.Dst(), seg.Header().DstPort())
						if b.Addr() == local {
							a, b = b, a
						}
						mu.Lock()
						k := [2]netip.AddrPort{a, b}
						if seen[k] == nil {
							seen[k] = map[int]map[uint8]bool{}
						}
						if seen[k][i] == nil {
							seen[k][i] = map[uint8]bool{}
						}
						seen[k][i][p.Hook] = true
						mu.Unlock()
					}
					if q.Verdict(p.ID, nfqueue.Accept, nil) != nil {
						return
					}
				}
			})
		}
		for range 16 {
			got, err := exchange([]byte("spread"), 5*time.Second)
			if err != nil || string(got) != "spread" {
				return fmt.Errorf("exchange: %q, %v", got, err)
			}
		}
		for _, q := range qs {
			q.Close()
		}
		wg.Wait()
		used := map[int]bool{}
		for k, byQueue := range seen {
			if len(byQueue) != 1 {
				t.Errorf("connection %v on queues %v, want one", k, byQueue)
			}
			for i, hooks := range byQueue {
				used[i] = true
				if !hooks[nfqueue.HookOutput] || !hooks[nfqueue.HookInput] {
					t.Errorf("connection %v: hooks %v on queue %d, want both ways", k, hooks, i)
				}
			}
		}
		if len(seen) != 16 || len(used) != 2 {
			t.Errorf("%d connections over queues %v: want 16 over both", len(seen), used)
		}
		return nil
	})
	if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.EOPNOTSUPP) {
		t.Skipf("needs nf_tables with symhash and a netfilter queue: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestBatchNoAllocs: reading a batch and answering it, rewritten, in one
// message allocates nothing.
func TestBatchNoAllocs(t *testing.T) {
	inNS(t, 1500, func(q *nfqueue.Queue) error {
		tr, err := startTraffic()
		if err != nil {
			return err
		}
		defer tr.Kill()
		var ps [16]nfqueue.Packet
		buf := make([]byte, 0, nfqueue.MaxPayload)
		var stepErr error
		step := func() {
			if stepErr != nil {
				return
			}
			var n int
			if n, stepErr = q.ReadBatch(ps[:]); stepErr != nil {
				return
			}
			for i := range ps[:n] {
				out := append(buf[:0], ps[i].Payload...)
				if stepErr = q.AddVerdict(ps[i].ID, nfqueue.Accept, out); stepErr != nil {
					return
				}
			}
			stepErr = q.Flush()
		}
		for range 100 {
			step()
		}
		if stepErr != nil {
			return fmt.Errorf("%w\n%s", stepErr, tr.Log())
		}
		if n := testing.AllocsPerRun(300, step); n != 0 {
			t.Errorf("ReadBatch+AddVerdict+Flush: %v allocations per batch, want 0", n)
		}
		return stepErr
	})
}
