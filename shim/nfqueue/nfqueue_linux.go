//go:build linux

package nfqueue

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// Verdict is a netfilter verdict for a queued packet.
type Verdict uint32

// The verdicts a queue reader gives.
const (
	Drop   Verdict = 0 // NF_DROP
	Accept Verdict = 1 // NF_ACCEPT
)

// Errors returned by Read.
var (
	// ErrTruncated: the kernel copied only part of a packet (larger than
	// 64 KiB); such a packet can only be dropped.
	ErrTruncated = errors.New("nfqueue: packet truncated by the kernel")
	// ErrMalformed: a netlink message from the kernel did not parse.
	ErrMalformed = errors.New("nfqueue: malformed netlink message")
	// ErrClosed: the queue was closed.
	ErrClosed = errors.New("nfqueue: queue closed")
)

// Config configures a queue.
type Config struct {
	Num      uint16 // the queue number the rules name
	MaxLen   uint32 // packets the kernel holds waiting for verdicts; 0: 1024
	FailOpen bool   // accept, rather than drop, packets that find the queue full
}

// Packet is one queued packet.
type Packet struct {
	ID      uint32 // the kernel's packet id, to give with the verdict
	Proto   uint16 // hw_protocol: 0x0800 IPv4, 0x86dd IPv6
	Hook    uint8  // the netfilter hook that queued it (NF_INET_*)
	Mark    uint32
	InDev   uint32 // input interface index, 0 if none
	OutDev  uint32 // output interface index, 0 if none
	Payload []byte // the IP packet; valid until the next Read
	// Err is ErrTruncated for a packet the kernel did not copy whole
	// (drop it) and ErrMalformed for a message that did not parse (ID
	// may be 0); nil otherwise.
	Err error
}

// MaxPayload is the largest packet a verdict can carry: a netlink
// attribute's 16-bit length less its header.
const MaxPayload = 0xffff - 4

const maxPayload = MaxPayload

// Netfilter hooks as in Packet.Hook.
const (
	HookPrerouting  = 0
	HookInput       = 1
	HookForward     = 2
	HookOutput      = 3
	HookPostrouting = 4
)

// nfnetlink_queue constants (linux/netfilter/nfnetlink_queue.h).
const (
	subsysQueue    = 3
	msgPacket      = subsysQueue << 8
	msgVerdict     = subsysQueue<<8 | 1
	msgConfig      = subsysQueue<<8 | 2
	cfgCmd         = 1
	cfgParams      = 2
	cfgQueueMaxLen = 3
	cfgMask        = 4
	cfgFlags       = 5
	cmdBind        = 1
	copyPacket     = 2
	flagFailOpen   = 1
	flagGSO        = 4
	aPacketHdr     = 1
	aVerdictHdr    = 2
	aMark          = 3
	aInDev         = 5
	aOutDev        = 6
	aPayload       = 10
	aCapLen        = 13
	nlHdrLen       = 16
	nfgenLen       = 4
)

// Queue is a bound netfilter queue. Read, ReadBatch, AddVerdict, Flush
// and Verdict are for one goroutine; Close may be called from any.
type Queue struct {
	fd  int // the NETLINK_NETFILTER socket (non-blocking, not in the runtime's poller)
	efd int // eventfd that Close signals, to wake a sleeping read
	num uint16
	seq uint32 // of the last config request

	mu      sync.Mutex // held while fd is used, so that Close does not close it under a read or a send
	rbuf    []byte     // receive buffer: the datagrams of one batch, one after the other
	rest    []byte     // unparsed messages of the last datagram, in rbuf
	pending error      // an error met after a batch had packets, returned by the next read
	wbuf    []byte     // verdicts not yet sent
	pfd     [2]unix.PollFd
	drained bool // the last read found the socket empty: the next waits in poll(2) first
	one     [1]Packet
	closed  atomic.Bool
	stats   *os.File // the namespace's nfnetlink_queue proc file, for Stats; nil if it did not open
}

// Buffer sizes: a datagram holds one packet of up to MaxPayload bytes and
// its attributes; a batch of verdicts is sent once it would pass wbufMax.
const (
	maxDatagram = MaxPayload + 4<<10
	rbufLen     = 4 * maxDatagram
	wbufMax     = 256 << 10
)

// Open binds queue cfg.Num in the network namespace of the calling thread.
// It fails with an error wrapping syscall.EPERM without CAP_NET_ADMIN or
// when another socket holds the queue.
//
// The socket is its own, not a netlink.Conn's: a socket in the runtime's
// network poller wakes one of its threads for every packet, though only
// the reader's poll(2) waits for them.
func Open(cfg Config) (*Queue, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, unix.NETLINK_NETFILTER)
	if err != nil {
		return nil, fmt.Errorf("nfqueue: socket: %w", err)
	}
	q := &Queue{fd: fd, num: cfg.Num, efd: -1,
		rbuf: make([]byte, rbufLen), wbuf: make([]byte, 0, wbufMax+maxDatagram)}
	if err := q.setup(cfg); err != nil {
		unix.Close(fd)
		if q.efd >= 0 {
			unix.Close(q.efd)
		}
		if q.stats != nil {
			q.stats.Close()
		}
		return nil, err
	}
	return q, nil
}

func (q *Queue) setup(cfg Config) error {
	if err := unix.Bind(q.fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return fmt.Errorf("nfqueue: bind: %w", err)
	}
	maxLen := cfg.MaxLen
	if maxLen == 0 {
		maxLen = 1024
	}
	// A full socket buffer loses packets (the kernel drops them, as a full
	// queue does) instead of failing the next read with ENOBUFS. The
	// socket holds what the queue holds: maxLen packets of about a page
	// each (an MTU-sized packet's message and its sk_buff); the kernel
	// counts the drops of both.
	for _, o := range [][3]int{
		{unix.SOL_NETLINK, unix.NETLINK_NO_ENOBUFS, 1},
		{unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, int(maxLen) * 4096},
		{unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, 2 * (wbufMax + maxDatagram)},
	} {
		if err := unix.SetsockoptInt(q.fd, o[0], o[1], o[2]); err != nil {
			return fmt.Errorf("nfqueue: socket option %d: %w", o[1], err)
		}
	}
	var err error
	if q.efd, err = unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK); err != nil {
		return fmt.Errorf("nfqueue: eventfd: %w", err)
	}
	q.pfd = [2]unix.PollFd{{Fd: int32(q.fd), Events: unix.POLLIN}, {Fd: int32(q.efd), Events: unix.POLLIN}}
	// Opened now, on the namespace's thread: the file keeps showing this
	// namespace's queues whichever thread reads it later.
	q.stats, _ = os.Open(statsPath)
	var flags uint32
	if cfg.FailOpen {
		flags |= flagFailOpen
	}
	var params [5]byte
	binary.BigEndian.PutUint32(params[:], 0xffff) // copy whole packets
	params[4] = copyPacket
	steps := []struct {
		what  string
		attrs []netlink.Attribute
	}{
		{"bind", []netlink.Attribute{{Type: cfgCmd, Data: []byte{cmdBind, 0, 0, 0}}}},
		{"set copy mode", []netlink.Attribute{{Type: cfgParams, Data: params[:]}}},
		{"set queue length", []netlink.Attribute{{Type: cfgQueueMaxLen, Data: be32(maxLen)}}},
		// GSO off: the kernel segments super-packets and completes
		// partial checksums before queueing.
		{"set flags", []netlink.Attribute{
			{Type: cfgFlags, Data: be32(flags)},
			{Type: cfgMask, Data: be32(flagFailOpen | flagGSO)},
		}},
	}
	for _, s := range steps {
		if err := q.execute(s.attrs); err != nil {
			return fmt.Errorf("nfqueue: queue %d: %s: %w", q.num, s.what, err)
		}
	}
	return nil
}

// execute sends a config request and waits for its acknowledgement; a
// packet queued meanwhile (rules were there before the reader) is dropped,
// its retransmission comes once the queue is set up.
func (q *Queue) execute(attrs []netlink.Attribute) error {
	ad, err := netlink.MarshalAttributes(attrs)
	if err != nil {
		return err
	}
	q.seq++
	m := binary.NativeEndian.AppendUint32(nil, uint32(nlHdrLen+nfgenLen+len(ad)))
	m = binary.NativeEndian.AppendUint16(m, msgConfig)
	m = binary.NativeEndian.AppendUint16(m, unix.NLM_F_REQUEST|unix.NLM_F_ACK)
	m = binary.NativeEndian.AppendUint32(m, q.seq)
	m = binary.NativeEndian.AppendUint32(m, 0)
	m = append(append(m, q.nfgen()...), ad...)
	if _, err := unix.Write(q.fd, m); err != nil {
		return err
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		n, err := unix.Read(q.fd, q.rbuf)
		if err == unix.EAGAIN || err == unix.EINTR {
			left := time.Until(deadline)
			if left <= 0 {
				return unix.ETIMEDOUT
			}
			pfd := q.pfd[:1]
			if _, err := unix.Poll(pfd, int(left/time.Millisecond)+1); err != nil && err != unix.EINTR {
				return err
			}
			continue
		}
		if err != nil {
			return err
		}
		for b := q.rbuf[:n]; len(b) >= nlHdrLen; {
			l := int(binary.NativeEndian.Uint32(b))
			if l < nlHdrLen || l > len(b) {
				return ErrMalformed
			}
			typ, body := binary.NativeEndian.Uint16(b[4:]), b[nlHdrLen:l]
			b = b[min(nlAlign(l), len(b)):]
			switch typ {
			case unix.NLMSG_ERROR:
				// struct nlmsgerr: the error, then the request's header.
				if len(body) < 4+nlHdrLen {
					return ErrMalformed
				}
				if binary.NativeEndian.Uint32(body[4+8:]) != q.seq {
					continue
				}
				if code := int32(binary.NativeEndian.Uint32(body)); code != 0 {
					return syscall.Errno(-code)
				}
				return nil
			case msgPacket:
				var p Packet
				if err := parsePacket(body, &p); err == nil || errors.Is(err, ErrTruncated) {
					_ = q.Verdict(p.ID, Drop, nil)
				}
			}
		}
	}
}

// Num returns the queue's number.
func (q *Queue) Num() uint16 { return q.num }

func (q *Queue) nfgen() []byte {
	return []byte{unix.AF_UNSPEC, 0, byte(q.num >> 8), byte(q.num)}
}

func be32(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }

// Close unbinds the queue (the kernel drops packets still waiting for a
// verdict) and makes a blocked Read return ErrClosed.
func (q *Queue) Close() error {
	if q.closed.Swap(true) {
		return nil
	}
	var one [8]byte
	one[0] = 1
	_, _ = unix.Write(q.efd, one[:]) // wakes a read sleeping in poll
	q.mu.Lock()
	defer q.mu.Unlock()
	err := unix.Close(q.fd)
	unix.Close(q.efd)
	if q.stats != nil {
		q.stats.Close()
	}
	return err
}

// Read waits for the next queued packet and fills p. It returns ErrClosed
// after Close, ErrTruncated for a packet the kernel did not copy whole (p.ID
// is set: drop it), ErrMalformed for a message it cannot parse.
func (q *Queue) Read(p *Packet) error {
	if _, err := q.ReadBatch(q.one[:]); err != nil {
		return err
	}
	*p = q.one[0]
	return p.Err
}

// ReadBatch waits for queued packets and fills ps[:n] with all that are
// there, up to len(ps), without waiting for more: one wake-up, however
// many packets. The payloads alias the queue's buffer and are valid until
// the next read. A packet's Err says it cannot be accepted as it is; the
// error is ErrClosed after Close, or the socket's or the kernel's.
func (q *Queue) ReadBatch(ps []Packet) (int, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed.Load() {
		return 0, ErrClosed
	}
	if err := q.pending; err != nil {
		q.pending = nil
		return 0, err
	}
	if len(ps) == 0 {
		return 0, nil
	}
	// Messages left by the last batch move to the front; its packets are
	// no longer valid.
	off := copy(q.rbuf, q.rest)
	q.rest = q.rbuf[:off]
	n := 0
	for n < len(ps) {
		if len(q.rest) >= nlHdrLen {
			var err error
			if n, err = q.parse(ps, n); err != nil {
				return q.deliver(n, err)
			}
			continue
		}
		q.rest = nil
		if len(q.rbuf)-off < maxDatagram {
			break
		}
		m, err := q.recv(q.rbuf[off:], n == 0)
		if err == unix.EAGAIN {
			q.drained = true
			break // n > 0: the queue is drained
		}
		if err != nil {
			return q.deliver(n, err)
		}
		q.rest = q.rbuf[off : off+m]
		off += m
	}
	return n, nil
}

// deliver returns the n packets read so far, keeping err for the next read
// if there are any.
func (q *Queue) deliver(n int, err error) (int, error) {
	if n == 0 {
		return 0, err
	}
	q.pending = err
	return n, nil
}

// parse turns the messages of q.rest into packets of ps from ps[n], until
// q.rest or ps runs out; it returns the new count.
func (q *Queue) parse(ps []Packet, n int) (int, error) {
	for len(q.rest) >= nlHdrLen && n < len(ps) {
		l := int(binary.NativeEndian.Uint32(q.rest))
		if l < nlHdrLen || l > len(q.rest) {
			q.rest = nil
			ps[n] = Packet{Err: ErrMalformed}
			return n + 1, nil
		}
		typ := binary.NativeEndian.Uint16(q.rest[4:])
		m := q.rest[nlHdrLen:l]
		q.rest = q.rest[min(nlAlign(l), len(q.rest)):]
		switch typ {
		case msgPacket:
			ps[n].Err = parsePacket(m, &ps[n])
			n++
		case unix.NLMSG_ERROR:
			// The answer to a failed verdict. ENOENT: the kernel had
			// already dropped the packet (its rule's hook went away, as
			// when rules are replaced); nothing to do.
			if len(m) >= 4 {
				if code := int32(binary.NativeEndian.Uint32(m)); code != 0 && syscall.Errno(-code) != syscall.ENOENT {
					return n, fmt.Errorf("nfqueue: kernel: %w", syscall.Errno(-code))
				}
			}
		}
	}
	return n, nil
}

// recv reads one datagram into b. With wait it sleeps in poll(2) until
// there is one or Close wakes it (a blocking system call on this thread,
// not the runtime's network poller and a goroutine switch); without, it
// returns EAGAIN when there is none.
func (q *Queue) recv(b []byte, wait bool) (int, error) {
	for {
		if wait && q.drained {
			// Empty a moment ago: poll (which returns at once if a
			// packet came since) rather than a read that would fail.
			if _, err := unix.Poll(q.pfd[:], -1); err != nil && err != unix.EINTR {
				return 0, q.closedErr(err)
			}
			if q.closed.Load() {
				return 0, ErrClosed
			}
		}
		// read(2), not recvfrom(2): Recvfrom allocates the sender's
		// address.
		m, err := unix.Read(q.fd, b)
		q.drained = err == unix.EAGAIN
		switch {
		case err == nil:
			return m, nil
		case err == unix.EINTR:
			continue
		case err != unix.EAGAIN:
			return 0, q.closedErr(err)
		case !wait:
			return 0, unix.EAGAIN
		case q.closed.Load():
			return 0, ErrClosed
		}
	}
}

func (q *Queue) closedErr(err error) error {
	if q.closed.Load() || errors.Is(err, os.ErrClosed) || errors.Is(err, net.ErrClosed) || errors.Is(err, unix.EBADF) {
		return ErrClosed
	}
	return fmt.Errorf("nfqueue: %w", err)
}

func nlAlign(n int) int { return (n + 3) &^ 3 }

// parsePacket reads the attributes of an NFQNL_MSG_PACKET (after the
// nlmsghdr).
func parsePacket(m []byte, p *Packet) error {
	if len(m) < nfgenLen {
		return ErrMalformed
	}
	*p = Packet{}
	b := m[nfgenLen:]
	var haveHdr, truncated bool
	for len(b) >= 4 {
		l := int(binary.NativeEndian.Uint16(b))
		typ := binary.NativeEndian.Uint16(b[2:]) & 0x3fff // strip NLA_F_NESTED / NET_BYTEORDER
		if l < 4 || l > len(b) {
			return ErrMalformed
		}
		d := b[4:l]
		switch typ {
		case aPacketHdr:
			if len(d) < 7 {
				return ErrMalformed
			}
			p.ID = binary.BigEndian.Uint32(d)
			p.Proto = binary.BigEndian.Uint16(d[4:])
			p.Hook = d[6]
			haveHdr = true
		case aPayload:
			p.Payload = d
		case aMark, aInDev, aOutDev, aCapLen:
			if len(d) < 4 {
				return ErrMalformed
			}
			v := binary.BigEndian.Uint32(d)
			switch typ {
			case aMark:
				p.Mark = v
			case aInDev:
				p.InDev = v
			case aOutDev:
				p.OutDev = v
			case aCapLen:
				truncated = true
			}
		}
		b = b[min(nlAlign(l), len(b)):]
	}
	if !haveHdr {
		return ErrMalformed
	}
	if truncated {
		return ErrTruncated
	}
	return nil
}

// Verdict answers the packet with the given id at once: AddVerdict and
// Flush.
func (q *Queue) Verdict(id uint32, v Verdict, payload []byte) error {
	if err := q.AddVerdict(id, v, payload); err != nil {
		return err
	}
	return q.Flush()
}

// AddVerdict adds the verdict for the packet with the given id to those
// the next Flush sends, in order, in one write(2) (sending those already
// added first if there is no room). A non-nil payload replaces the packet
// (Accept only): it must be a whole IP packet with correct lengths and
// checksums, at most MaxPayload bytes; it is copied.
func (q *Queue) AddVerdict(id uint32, v Verdict, payload []byte) error {
	if len(payload) > maxPayload {
		return fmt.Errorf("nfqueue: verdict payload of %d bytes: %w", len(payload), syscall.EMSGSIZE)
	}
	if len(q.wbuf)+len(payload) > wbufMax {
		if err := q.Flush(); err != nil {
			return err
		}
	}
	w := q.wbuf
	at := len(w)
	w = binary.NativeEndian.AppendUint32(w, 0) // length, below
	w = binary.NativeEndian.AppendUint16(w, msgVerdict)
	w = binary.NativeEndian.AppendUint16(w, unix.NLM_F_REQUEST)
	w = binary.NativeEndian.AppendUint32(w, 0) // seq
	w = binary.NativeEndian.AppendUint32(w, 0) // pid: the kernel
	w = append(w, unix.AF_UNSPEC, 0, byte(q.num>>8), byte(q.num))
	w = binary.NativeEndian.AppendUint16(w, 12)
	w = binary.NativeEndian.AppendUint16(w, aVerdictHdr)
	w = binary.BigEndian.AppendUint32(w, uint32(v))
	w = binary.BigEndian.AppendUint32(w, id)
	if payload != nil {
		w = binary.NativeEndian.AppendUint16(w, uint16(4+len(payload)))
		w = binary.NativeEndian.AppendUint16(w, aPayload)
		w = append(w, payload...)
		for len(w)%4 != 0 {
			w = append(w, 0)
		}
	}
	binary.NativeEndian.PutUint32(w[at:], uint32(len(w)-at))
	q.wbuf = w
	return nil
}

// Flush sends the verdicts added since the last Flush. The kernel takes
// them in order, reinjecting each accepted packet as it goes.
func (q *Queue) Flush() error {
	if len(q.wbuf) == 0 {
		return nil
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	w := q.wbuf
	q.wbuf = q.wbuf[:0]
	if q.closed.Load() {
		return ErrClosed
	}
	for {
		// write(2): an unconnected netlink socket's destination is the
		// kernel (and Sendto would write its address into shared memory).
		_, err := unix.Write(q.fd, w)
		switch err {
		case nil:
			return nil
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			out := [1]unix.PollFd{{Fd: int32(q.fd), Events: unix.POLLOUT}}
			if _, err := unix.Poll(out[:], 100); err != nil && err != unix.EINTR {
				return q.closedErr(err)
			}
			continue
		}
		return q.closedErr(err)
	}
}

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
