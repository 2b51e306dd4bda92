package capture

import (
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// Options configure [Start].
type Options struct {
	// Interface is the name of the interface to capture on; "" means "lo".
	Interface string
	// Filter, if not nil, is called with each packet's IP header and
	// payload (the link-layer header removed); packets for which it
	// returns false are not kept. Frames that carry neither IPv4 nor IPv6
	// are never passed to it and are dropped when it is set. See
	// [TCPPorts].
	Filter func(ip []byte) bool
}

// ErrDropped is returned (wrapped) by [Capture.Stop] when the kernel
// dropped packets because the capture did not read them fast enough; the
// capture is then incomplete.
var ErrDropped = errors.New("capture: kernel dropped packets")

// Capture is a running capture started by [Start]. Its methods are safe
// for concurrent use.
type Capture struct {
	f        *os.File
	rc       syscall.RawConn
	linkType LinkType
	loopback bool
	filter   func([]byte) bool

	stopping atomic.Bool
	stopOnce sync.Once
	done     chan struct{}
	stopErr  error

	mu   sync.Mutex
	pkts []Packet
	err  error // first read error of the loop
}

// Start opens an AF_PACKET socket on the interface named in opts, in the
// network namespace of the calling OS thread, and records packets until
// [Capture.Stop]. Callers that have moved a thread into another namespace
// must call Start from the goroutine locked to that thread; the packet
// socket stays in that namespace afterwards, whichever thread reads it.
// It needs CAP_NET_RAW.
func Start(opts Options) (*Capture, error) {
	name := opts.Interface
	if name == "" {
		name = "lo"
	}
	// Protocol 0: the socket receives nothing until it is bound, so no
	// packet of another interface slips in before bind.
	fd, err := syscall.Socket(syscall.AF_PACKET, syscall.SOCK_RAW|syscall.SOCK_CLOEXEC|syscall.SOCK_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("capture: packet socket: %w", err)
	}
	c, err := setup(fd, name)
	if err != nil {
		syscall.Close(fd)
		return nil, err
	}
	c.filter = opts.Filter
	c.f = os.NewFile(uintptr(fd), "packet:"+name)
	if c.rc, err = c.f.SyscallConn(); err != nil {
		c.f.Close()
		return nil, err
	}
	c.done = make(chan struct{})
	go c.loop()
	return c, nil
}

func setup(fd int, name string) (*Capture, error) {
	ifi, err := net.InterfaceByName(name)
	if err != nil {
		return nil, fmt.Errorf("capture: %w", err)
	}
	hw, err := hwType(fd, name)
	if err != nil {
		return nil, fmt.Errorf("capture: %s: %w", name, err)
	}
	c := &Capture{}
	switch hw {
	case syscall.ARPHRD_LOOPBACK:
		c.linkType, c.loopback = LinkTypeEthernet, true
	case syscall.ARPHRD_ETHER:
		c.linkType = LinkTypeEthernet
	case syscall.ARPHRD_NONE:
		c.linkType = LinkTypeRaw
	default:
		return nil, fmt.Errorf("capture: %s: unsupported hardware type %d", name, hw)
	}
	// A large receive buffer so that a burst is not dropped; the forced
	// variant needs CAP_NET_ADMIN, the plain one is capped by rmem_max.
	const rcvbuf = 8 << 20
	if syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_RCVBUFFORCE, rcvbuf) != nil {
		_ = syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_RCVBUF, rcvbuf)
	}
	if err := syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1); err != nil {
		return nil, fmt.Errorf("capture: SO_TIMESTAMPNS: %w", err)
	}
	sa := &syscall.SockaddrLinklayer{Protocol: htons(syscall.ETH_P_ALL), Ifindex: ifi.Index}
	if err := syscall.Bind(fd, sa); err != nil {
		return nil, fmt.Errorf("capture: bind %s: %w", name, err)
	}
	if _, err := packetStats(fd); err != nil { // reading resets the counters
		return nil, fmt.Errorf("capture: PACKET_STATISTICS: %w", err)
	}
	return c, nil
}

// LinkType returns the link type of the captured packets.
func (c *Capture) LinkType() LinkType { return c.linkType }

// Packets returns a copy of the list of packets kept so far; the packets'
// bytes are shared and must not be modified.
func (c *Capture) Packets() []Packet {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Packet(nil), c.pkts...)
}

// Len returns the number of packets kept so far.
func (c *Capture) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pkts)
}

// WaitIdle returns once no packet has been kept for the duration idle,
// or with false when that has not happened within limit. Tests call it
// after closing their sockets, to let delayed ACKs and the last segments
// of a close reach the capture.
func (c *Capture) WaitIdle(idle, limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	n := c.Len()
	for {
		time.Sleep(idle)
		m := c.Len()
		if m == n {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		n = m
	}
}

// Stop ends the capture: packets the kernel queued before Stop was called
// are still read, then the socket is closed. It returns an error wrapping
// [ErrDropped] if the kernel dropped any packet, or the error that ended
// the capture early. Stop may be called more than once.
func (c *Capture) Stop() error {
	c.stopOnce.Do(func() {
		c.stopping.Store(true)
		// Wakes the loop; it then drains the queue without waiting.
		_ = c.f.SetReadDeadline(time.Unix(1, 0))
		<-c.done
		var st tpacketStats
		var serr error
		if err := c.rc.Control(func(fd uintptr) { st, serr = packetStats(int(fd)) }); err != nil && serr == nil {
			serr = err
		}
		cerr := c.f.Close()
		c.mu.Lock()
		defer c.mu.Unlock()
		switch {
		case c.err != nil:
			c.stopErr = fmt.Errorf("capture: read: %w", c.err)
		case serr != nil:
			c.stopErr = fmt.Errorf("capture: PACKET_STATISTICS: %w", serr)
		case st.drops != 0:
			c.stopErr = fmt.Errorf("%w: %d of %d", ErrDropped, st.drops, st.packets)
		default:
			c.stopErr = cerr
		}
	})
	return c.stopErr
}

// WriteFile writes the packets kept so far to a pcap file at path.
func (c *Capture) WriteFile(path string) error {
	return WriteFile(path, c.linkType, c.Packets())
}

func (c *Capture) loop() {
	defer close(c.done)
	buf := make([]byte, DefaultSnapLen)
	oob := make([]byte, syscall.CmsgSpace(16))
	for {
		var (
			n, oobn int
			from    syscall.Sockaddr
			rerr    error
		)
		err := c.rc.Read(func(fd uintptr) bool {
			n, oobn, _, from, rerr = syscall.Recvmsg(int(fd), buf, oob, syscall.MSG_TRUNC)
			return rerr != syscall.EAGAIN
		})
		if err != nil {
			if c.stopping.Load() {
				c.drain(buf, oob)
			} else {
				c.setErr(err)
			}
			return
		}
		if rerr == syscall.EINTR {
			continue
		}
		if rerr != nil {
			c.setErr(rerr)
			return
		}
		c.keep(buf, n, oob[:oobn], from)
	}
}

// drain reads, without waiting, what the socket has queued.
func (c *Capture) drain(buf, oob []byte) {
	err := c.rc.Control(func(fd uintptr) {
		for {
			n, oobn, _, from, err := syscall.Recvmsg(int(fd), buf, oob, syscall.MSG_TRUNC)
			if err == syscall.EINTR {
				continue
			}
			if err != nil {
				if err != syscall.EAGAIN {
					c.setErr(err)
				}
				return
			}
			c.keep(buf, n, oob[:oobn], from)
		}
	})
	if err != nil {
		c.setErr(err)
	}
}

func (c *Capture) setErr(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		c.err = err
	}
}

// keep records one received frame: n is its length on the wire (MSG_TRUNC),
// which may exceed len(buf).
func (c *Capture) keep(buf []byte, n int, oob []byte, from syscall.Sockaddr) {
	if ll, ok := from.(*syscall.SockaddrLinklayer); ok && c.loopback && ll.Pkttype != syscall.PACKET_OUTGOING {
		return // the arriving copy of a looped-back packet
	}
	data := buf[:min(n, len(buf))]
	if c.filter != nil {
		ip := c.linkType.IP(data)
		if ip == nil || !c.filter(ip) {
			return
		}
	}
	p := Packet{Time: timestamp(oob), Data: append([]byte(nil), data...), Length: n}
	c.mu.Lock()
	c.pkts = append(c.pkts, p)
	c.mu.Unlock()
}

// timestamp returns the SCM_TIMESTAMPNS time in oob, or now.
func timestamp(oob []byte) time.Time {
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err == nil {
		for _, m := range msgs {
			if m.Header.Level == syscall.SOL_SOCKET && m.Header.Type == syscall.SCM_TIMESTAMPNS && len(m.Data) >= 16 {
				ts := (*syscall.Timespec)(unsafe.Pointer(&m.Data[0]))
				return time.Unix(ts.Unix())
			}
		}
	}
	return time.Now()
}

type tpacketStats struct{ packets, drops uint32 }

func packetStats(fd int) (tpacketStats, error) {
	var st tpacketStats
	l := uint32(unsafe.Sizeof(st))
	_, _, e := syscall.Syscall6(syscall.SYS_GETSOCKOPT, uintptr(fd), syscall.SOL_PACKET, syscall.PACKET_STATISTICS,
		uintptr(unsafe.Pointer(&st)), uintptr(unsafe.Pointer(&l)), 0)
	if e != 0 {
		return st, e
	}
	return st, nil
}

// hwType returns the ARPHRD_* type of the interface (SIOCGIFHWADDR).
func hwType(fd int, name string) (uint16, error) {
	var ifr struct {
		name   [16]byte
		family uint16
		_      [22]byte
	}
	if len(name) >= len(ifr.name) {
		return 0, fmt.Errorf("interface name too long")
	}
	copy(ifr.name[:], name)
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), syscall.SIOCGIFHWADDR, uintptr(unsafe.Pointer(&ifr))); e != 0 {
		return 0, e
	}
	return ifr.family, nil
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }
