//go:build linux

package main

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tcpsig/tcpsig/ao"
	"github.com/tcpsig/tcpsig/harness/onpath"
	"github.com/tcpsig/tcpsig/segment"
	"github.com/tcpsig/tcpsig/shim"
)

// floodPackets is the size of TestShimFlood's flood.
const floodPackets = 100000

// TestShimFlood (issue 38, finding 4): M, off the sessions' path as far as
// their keys go, sends 100,000 ACKs from A's address (a covered TCP-AO
// peer of B's shim) to B, each with a TCP-AO option and its own source
// port, while a session tracked by both shims moves data both ways. Two
// real sessions that B's shim never saw the handshake of (opened before
// the shims started) send: one before the flood, one only after it.
// Before, each forgery logged a WARN line, the unseen table stopped at
// 1024 forgeries, and the session that sent after the flood was never
// listed. Now:
//
//   - B's shim logs a bounded number of lines: its unseen lines are at
//     most two buckets' worth (10 each, one more per 6 s of the run), its
//     WARN lines in all far fewer than the forgeries it dropped;
//   - both real unseen sessions are listed after the flood, with the
//     evidence "local" (B's stack sent on them, which no forgery makes it
//     do);
//   - the tracked session's bytes arrive whole both ways, during the flood
//     and after it.
//
// Nothing is timed: the flood is sent as fast as M can, the checks wait
// for states.
func TestShimFlood(t *testing.T) {
	needQueue(t)
	start := time.Now()
	on, err := onpath.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(on.Close)
	nsA, nsB := &ns{on.A}, &ns{on.B}
	plain := &net.ListenConfig{}

	// The sessions the shims never see the handshake of: plain, before
	// either shim runs.
	before := dialDuplex(t, nsA, nsB, "unseen before", plain, onpath.AddrA, 3)
	unseen := dialDuplex(t, nsA, nsB, "unseen after", plain, onpath.AddrA, 4)
	exchange(t, 4<<10, before, unseen)

	mkt := func(peer netip.Addr) string {
		return fmt.Sprintf(`{"ao": [{"alg": "hmac(sha256)", "key": "hex:%x", "sndid": 5, "rcvid": 5, "peer": "%v/32"}]}`,
			[]byte("tcpsig-flood-test-key"), peer)
	}
	dirA, dirB := shortDir(t), shortDir(t)
	startShim(t, nsA, dirA, "-keys", writeKeys(t, dirA, "keys.json", mkt(onpath.AddrB)), "-queue", "53")
	shB, sockB := startShim(t, nsB, dirB, "-keys", writeKeys(t, dirB, "keys.json", mkt(onpath.AddrA)), "-queue", "53")

	main := dialDuplex(t, nsA, nsB, "main", plain, onpath.AddrA, 1)
	exchange(t, 64<<10, main)
	before.writeBA(1 << 10)
	listedLocal(t, sockB, before.flow, "before the flood")

	inFlight := exchangeStart(256<<10, main)
	sent, err := flood(on, main.flow, floodPackets)
	if err != nil {
		t.Fatalf("the flood: %v after %d packets", err, sent)
	}
	exchangeEnd(t, inFlight)

	// The second real unseen session sends after the flood.
	unseen.writeBA(1 << 10)
	unseen.writeAB(1 << 10)
	u := listedLocal(t, sockB, unseen.flow, "sending after the flood")
	listedLocal(t, sockB, before.flow, "after the flood")
	exchange(t, 64<<10, main)
	main.close(t)

	st, err := shimStatusOf(sockB)
	if err != nil {
		t.Fatal(err)
	}
	log := shB.Log()
	elapsed := time.Since(start)
	unseenLines := strings.Count(log, "TCP-AO session seen without its handshake")
	warn := strings.Count(log, "level=WARN")
	// The shim's buckets: 10 lines, one more per 6 s, one for the peer's
	// segments and one for the local stack's.
	bound := 2 * (10 + int(elapsed/(6*time.Second)) + 1)
	t.Logf("M sent %d forged ACKs; B's shim dropped %d without a session (queue full %d), listed %d unseen (totals %+v), logged %d unseen lines (bound %d for %v) and %d WARN lines in all; the real session: %+v",
		sent, st.Counters.Dropped.NoConn, queueFull(st), len(st.Unseen), st.UnseenTotals, unseenLines, bound, elapsed.Round(time.Second), warn, u)
	if st.Counters.Dropped.NoConn < 10000 {
		t.Errorf("B's shim dropped %d segments without a session: the flood did not reach it, the test shows nothing", st.Counters.Dropped.NoConn)
	}
	if unseenLines > bound {
		t.Errorf("%d unseen lines in the log, want at most %d", unseenLines, bound)
	}
	if uint64(warn)*100 > st.Counters.Dropped.NoConn {
		t.Errorf("%d WARN lines for %d forgeries dropped: the log grows with the flood", warn, st.Counters.Dropped.NoConn)
	}
	if st.UnseenTotals.Evicted["once"] == 0 || len(st.Unseen) > 1024 {
		t.Errorf("the unseen table: %d listed, totals %+v; want at most 1024, forgeries evicted", len(st.Unseen), st.UnseenTotals)
	}
}

// listedLocal waits until the status of the shim at sock lists f as an
// unseen session with the evidence local, or fails t.
func listedLocal(t *testing.T, sock string, f onpath.Flow, when string) *shim.UnseenConn {
	t.Helper()
	var st shim.Status
	var u *shim.UnseenConn
	var err error
	if !waitFor(30*time.Second, func() bool {
		st, err = shimStatusOf(sock)
		u = findUnseen(st, f)
		return err == nil && u != nil && u.Evidence == "local"
	}) {
		t.Errorf("%s, the real unseen session %v is not listed with evidence local: %+v (%d listed, totals %+v, err %v)",
			when, f, u, len(st.Unseen), st.UnseenTotals, err)
	}
	return u
}

// findUnseen returns the status's entry of f (its target is B's end).
func findUnseen(st shim.Status, f onpath.Flow) *shim.UnseenConn {
	for i, u := range st.Unseen {
		if u.Local == f.Target && u.Remote == f.Peer {
			return &st.Unseen[i]
		}
	}
	return nil
}

func queueFull(st shim.Status) (n uint64) {
	for _, q := range st.Queues {
		n += uint64(q.QueueFull) + uint64(q.SocketFull)
	}
	return n
}

// flood sends n ACKs from M to the target of f as if from its peer's
// address, each from another source port (never f's own), with a TCP-AO
// option of KeyID 5 and a MAC of zeros, from a raw socket (IP_HDRINCL).
// A full socket buffer (ENOBUFS) is waited out. It returns how many it
// sent.
func flood(on *onpath.Net, f onpath.Flow, n int) (sent int, err error) {
	err = on.M.Do(func() error {
		fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_RAW|syscall.SOCK_CLOEXEC, syscall.IPPROTO_RAW)
		if err != nil {
			return err
		}
		defer syscall.Close(fd)
		to := &syscall.SockaddrInet4{Addr: f.Target.Addr().As4()}
		var opt [16]byte
		o := ao.AppendOption(opt[:0], 12)
		o[2], o[3] = 5, 5
		var buf []byte
		for i := 0; sent < n; i++ {
			port := uint16(1024 + i%64000)
			if port == f.Peer.Port() {
				continue
			}
			buf, err = segment.AppendPacket(buf[:0], segment.IP{Src: f.Peer.Addr(), Dst: f.Target.Addr()},
				segment.Fields{SrcPort: port, DstPort: f.Target.Port(), Seq: uint32(i) * 7919, Ack: uint32(i) * 104729,
					Flags: segment.ACK, Window: 502, Options: [][]byte{o}}, nil)
			if err != nil {
				return err
			}
			for {
				err = syscall.Sendto(fd, buf, 0, to)
				if !errors.Is(err, syscall.ENOBUFS) && !errors.Is(err, syscall.EAGAIN) {
					break
				}
				time.Sleep(time.Millisecond)
			}
			if err != nil {
				return err
			}
			sent++
		}
		return nil
	})
	return sent, err
}
