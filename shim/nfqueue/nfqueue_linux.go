//go:build linux

package nfqueue

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
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

// nfgen is the nfgenmsg header of a message about this queue.
func (q *Queue) nfgen() []byte {
	return []byte{unix.AF_UNSPEC, 0, byte(q.num >> 8), byte(q.num)}
}

// be32 is v as a big-endian attribute value.
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

// closedErr is ErrClosed for an error of a closed socket, err wrapped
// otherwise.
func (q *Queue) closedErr(err error) error {
	if q.closed.Load() || errors.Is(err, os.ErrClosed) || errors.Is(err, net.ErrClosed) || errors.Is(err, unix.EBADF) {
		return ErrClosed
	}
	return fmt.Errorf("nfqueue: %w", err)
}
