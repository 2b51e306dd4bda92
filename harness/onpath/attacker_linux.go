//go:build linux

package onpath

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tcpsig/tcpsig/harness/netns"
)

// Attacker is the sniffer and injector running in M. Its methods are
// safe for concurrent use.
type Attacker struct {
	// Tracker holds what the sniffer saw.
	Tracker *Tracker

	every time.Duration
	sniff *os.File // AF_PACKET, cooked (SOCK_DGRAM), every interface
	raw   int      // AF_INET, SOCK_RAW, IPPROTO_RAW: IP_HDRINCL

	mu      sync.Mutex
	targets map[Flow]Kind
	sent    map[Flow]*Counts
	err     error // the first send or read error

	watchMu  sync.Mutex
	watchers map[*watcher]struct{}

	stopping atomic.Bool
	stop     chan struct{}
	wg       sync.WaitGroup
	once     sync.Once
}

// Start opens the attacker's sockets in namespace m (M of [New]) and
// starts sniffing; each flow given to Inject is then sent its kinds every
// interval every. It needs CAP_NET_RAW.
func Start(m *netns.Keeper, every time.Duration) (*Attacker, error) {
	a := &Attacker{Tracker: NewTracker(), every: every, raw: -1,
		targets: make(map[Flow]Kind), sent: make(map[Flow]*Counts), stop: make(chan struct{}),
		watchers: make(map[*watcher]struct{})}
	err := m.Do(func() error {
		// ETH_P_ALL on a socket bound to no interface: every frame of
		// every interface of M, both directions.
		fd, err := syscall.Socket(syscall.AF_PACKET, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC|syscall.SOCK_NONBLOCK, int(htons(syscall.ETH_P_ALL)))
		if err != nil {
			return fmt.Errorf("packet socket: %w", err)
		}
		_ = syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_RCVBUFFORCE, 8<<20)
		a.sniff = os.NewFile(uintptr(fd), "onpath sniffer")
		a.raw, err = syscall.Socket(syscall.AF_INET, syscall.SOCK_RAW|syscall.SOCK_CLOEXEC, syscall.IPPROTO_RAW)
		if err != nil {
			return fmt.Errorf("raw socket: %w", err)
		}
		return nil
	})
	if err != nil {
		a.closeSockets()
		return nil, fmt.Errorf("onpath: %w", err)
	}
	a.wg.Add(2)
	go a.sniffLoop()
	go a.injectLoop()
	return a, nil
}

// Inject sets the kinds sent on f from now on (0 stops f).
func (a *Attacker) Inject(f Flow, k Kind) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if k == 0 {
		delete(a.targets, f)
		return
	}
	a.targets[f] = k
	if a.sent[f] == nil {
		a.sent[f] = &Counts{}
	}
}

// SendOnce sends f each kind of k once, now, with the tracker's current
// view, and counts them as Inject's rounds do.
func (a *Attacker) SendOnce(f Flow, k Kind) error {
	v := a.Tracker.View(f)
	for _, x := range kinds {
		if k&x == 0 {
			continue
		}
		pkt, err := Build(nil, x, v)
		if err == nil {
			err = a.send(pkt, v)
		}
		a.mu.Lock()
		if a.sent[f] == nil {
			a.sent[f] = &Counts{}
		}
		if err != nil {
			a.sent[f].Errors++
		} else {
			a.sent[f].add(x)
		}
		a.mu.Unlock()
		if err != nil {
			return fmt.Errorf("onpath: send %v to %v: %w", x, f, err)
		}
	}
	return nil
}

// StopAll stops every flow's injection.
func (a *Attacker) StopAll() {
	a.mu.Lock()
	defer a.mu.Unlock()
	clear(a.targets)
}

// Sent is what was sent on f so far.
func (a *Attacker) Sent(f Flow) Counts {
	a.mu.Lock()
	defer a.mu.Unlock()
	if c := a.sent[f]; c != nil {
		return *c
	}
	return Counts{}
}

// Total is what was sent on all flows so far.
func (a *Attacker) Total() Counts {
	a.mu.Lock()
	defer a.mu.Unlock()
	var t Counts
	for _, c := range a.sent {
		t.Data += c.Data
		t.RST += c.RST
		t.RSTInWindow += c.RSTInWindow
		t.SYN += c.SYN
		t.Errors += c.Errors
	}
	return t
}

// Err is the first error of a send or of the sniffer, if any.
func (a *Attacker) Err() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.err
}

func (a *Attacker) setErr(err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.err == nil {
		a.err = err
	}
}

// Close stops the injector and the sniffer and closes their sockets; it
// returns Err.
func (a *Attacker) Close() error {
	a.once.Do(func() {
		a.stopping.Store(true)
		close(a.stop)
		_ = a.sniff.SetReadDeadline(time.Unix(1, 0)) // wakes the sniffer
		a.wg.Wait()
		a.closeSockets()
	})
	return a.Err()
}

func (a *Attacker) closeSockets() {
	if a.sniff != nil {
		a.sniff.Close()
	}
	if a.raw >= 0 {
		syscall.Close(a.raw)
	}
}

// injectLoop sends each target's kinds every a.every.
func (a *Attacker) injectLoop() {
	defer a.wg.Done()
	tick := time.NewTicker(a.every)
	defer tick.Stop()
	type job struct {
		f Flow
		k Kind
	}
	var jobs []job
	var pkt []byte
	for round := 0; ; round++ {
		select {
		case <-a.stop:
			return
		case <-tick.C:
		}
		jobs = jobs[:0]
		a.mu.Lock()
		for f, k := range a.targets {
			jobs = append(jobs, job{f, k})
		}
		a.mu.Unlock()
		for _, j := range jobs {
			// One view for the round: each kind goes to the numbers as they
			// were, and which goes first turns with the rounds, so each
			// is, in turn, the one a stack without protection takes
			// (after an accepted RST or data, the others miss).
			v := a.Tracker.View(j.f)
			for i := range kinds {
				k := kinds[(round+i)%len(kinds)]
				if j.k&k == 0 {
					continue
				}
				var err error
				if pkt, err = Build(pkt[:0], k, v); err == nil {
					err = a.send(pkt, v)
				}
				a.mu.Lock()
				c := a.sent[j.f]
				if err != nil {
					c.Errors++
				} else {
					c.add(k)
				}
				a.mu.Unlock()
				if err != nil && !errors.Is(err, syscall.ENOBUFS) {
					a.setErr(fmt.Errorf("onpath: send %v to %v: %w", k, j.f, err))
				}
			}
		}
	}
}

// send writes one forged IPv4 packet; M's kernel routes it.
func (a *Attacker) send(pkt []byte, v View) error {
	dst := v.Flow.Target.Addr()
	if !dst.Is4() {
		return fmt.Errorf("%v: the injector sends IPv4 only", dst)
	}
	for {
		err := syscall.Sendto(a.raw, pkt, 0, &syscall.SockaddrInet4{Addr: dst.As4()})
		if err != syscall.EINTR {
			return err
		}
	}
}

// sniffLoop feeds the tracker every packet that arrives at M; M's own
// transmissions (its forwarding, and the forged segments) are skipped,
// so each segment of A and B is seen once, as its sender sent it.
func (a *Attacker) sniffLoop() {
	defer a.wg.Done()
	rc, err := a.sniff.SyscallConn()
	if err != nil {
		a.setErr(err)
		return
	}
	buf := make([]byte, 1<<16)
	for {
		var (
			n    int
			from syscall.Sockaddr
			rerr error
		)
		err := rc.Read(func(fd uintptr) bool {
			n, from, rerr = syscall.Recvfrom(int(fd), buf, 0)
			return rerr != syscall.EAGAIN
		})
		if err != nil {
			if !a.stopping.Load() {
				a.setErr(fmt.Errorf("onpath: sniffer: %w", err))
			}
			return
		}
		if rerr == syscall.EINTR {
			continue
		}
		if rerr != nil {
			a.setErr(fmt.Errorf("onpath: sniffer: %w", rerr))
			return
		}
		if ll, ok := from.(*syscall.SockaddrLinklayer); ok && ll.Pkttype == syscall.PACKET_OUTGOING {
			continue
		}
		a.Tracker.Observe(buf[:n])
		a.watched(buf[:n])
	}
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }
