//go:build linux

package nfqueue

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"sync/atomic"
	"syscall"

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

// Queue is a bound netfilter queue. Read and Verdict are for one goroutine;
// Close may be called from any.
type Queue struct {
	c   *netlink.Conn
	raw syscall.RawConn
	num uint16

	rbuf []byte // receive buffer
	rest []byte // unread messages of the last receive
	wbuf []byte // verdict being sent
	n    int    // result of the last recv
	err  error  // error of the last recv/send

	readFn, writeFn func(fd uintptr) bool // made once: no allocation per call
	closed          atomic.Bool
}

// Open binds queue cfg.Num in the network namespace of the calling thread.
// It fails with an error wrapping syscall.EPERM without CAP_NET_ADMIN or
// when another socket holds the queue.
func Open(cfg Config) (*Queue, error) {
	c, err := netlink.Dial(unix.NETLINK_NETFILTER, nil)
	if err != nil {
		return nil, fmt.Errorf("nfqueue: dial: %w", err)
	}
	q := &Queue{c: c, num: cfg.Num, rbuf: make([]byte, 1<<17), wbuf: make([]byte, 0, 1<<16+64)}
	q.readFn, q.writeFn = q.recv, q.send
	if err := q.setup(cfg); err != nil {
		c.Close()
		return nil, err
	}
	return q, nil
}

func (q *Queue) setup(cfg Config) error {
	// A full socket buffer loses packets (the kernel drops them, as a full
	// queue does) instead of failing the next read with ENOBUFS.
	if err := q.c.SetOption(netlink.NoENOBUFS, true); err != nil {
		return fmt.Errorf("nfqueue: %w", err)
	}
	_ = q.c.SetReadBuffer(4 << 20)
	maxLen := cfg.MaxLen
	if maxLen == 0 {
		maxLen = 1024
	}
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
		ad, err := netlink.MarshalAttributes(s.attrs)
		if err != nil {
			return fmt.Errorf("nfqueue: %s: %w", s.what, err)
		}
		m := netlink.Message{
			Header: netlink.Header{Type: msgConfig, Flags: netlink.Request | netlink.Acknowledge},
			Data:   append(q.nfgen(), ad...),
		}
		if _, err := q.c.Execute(m); err != nil {
			return fmt.Errorf("nfqueue: queue %d: %s: %w", q.num, s.what, unwrapNL(err))
		}
	}
	raw, err := q.c.SyscallConn()
	if err != nil {
		return fmt.Errorf("nfqueue: %w", err)
	}
	q.raw = raw
	return nil
}

// unwrapNL turns a netlink.OpError into its errno so callers can test
// errors.Is(err, syscall.EBUSY) and the like.
func unwrapNL(err error) error {
	var oe *netlink.OpError
	if errors.As(err, &oe) && oe.Err != nil {
		return fmt.Errorf("%w (%v)", oe.Err, err)
	}
	return err
}

func (q *Queue) nfgen() []byte {
	return []byte{unix.AF_UNSPEC, 0, byte(q.num >> 8), byte(q.num)}
}

func be32(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }

// Close unbinds the queue (the kernel drops packets still waiting for a
// verdict) and makes a blocked Read return ErrClosed.
func (q *Queue) Close() error {
	q.closed.Store(true)
	return q.c.Close()
}

func (q *Queue) recv(fd uintptr) bool {
	// read(2), not recvfrom(2): Recvfrom allocates the sender's address.
	// The socket is non-blocking.
	q.n, q.err = unix.Read(int(fd), q.rbuf)
	return q.err != unix.EAGAIN && q.err != unix.EINTR
}

var kernelAddr = &unix.SockaddrNetlink{Family: unix.AF_NETLINK}

func (q *Queue) send(fd uintptr) bool {
	q.err = unix.Sendto(int(fd), q.wbuf, unix.MSG_DONTWAIT, kernelAddr)
	return q.err != unix.EAGAIN && q.err != unix.EINTR
}

// Read waits for the next queued packet and fills p. It returns ErrClosed
// after Close, ErrTruncated for a packet the kernel did not copy whole (p.ID
// is set: drop it), ErrMalformed for a message it cannot parse.
func (q *Queue) Read(p *Packet) error {
	for {
		for len(q.rest) >= nlHdrLen {
			l := int(binary.NativeEndian.Uint32(q.rest))
			if l < nlHdrLen || l > len(q.rest) {
				q.rest = nil
				return ErrMalformed
			}
			typ := binary.NativeEndian.Uint16(q.rest[4:])
			m := q.rest[nlHdrLen:l]
			q.rest = q.rest[min(nlAlign(l), len(q.rest)):]
			switch typ {
			case msgPacket:
				return parsePacket(m, p)
			case unix.NLMSG_ERROR:
				// The answer to a failed verdict. ENOENT: the kernel
				// had already dropped the packet (its rule's hook went
				// away, as when rules are replaced); nothing to do.
				if len(m) >= 4 {
					if code := int32(binary.NativeEndian.Uint32(m)); code != 0 && syscall.Errno(-code) != syscall.ENOENT {
						return fmt.Errorf("nfqueue: kernel: %w", syscall.Errno(-code))
					}
				}
			}
		}
		if err := q.raw.Read(q.readFn); err != nil {
			return q.closedErr(err)
		}
		if q.err != nil {
			return q.closedErr(q.err)
		}
		q.rest = q.rbuf[:q.n]
	}
}

func (q *Queue) closedErr(err error) error {
	if q.closed.Load() || errors.Is(err, os.ErrClosed) || errors.Is(err, net.ErrClosed) {
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

// Verdict answers the packet with the given id. A non-nil payload replaces
// the packet (Accept only): it must be a whole IP packet with correct
// lengths and checksums, at most MaxPayload bytes.
func (q *Queue) Verdict(id uint32, v Verdict, payload []byte) error {
	if len(payload) > maxPayload {
		return fmt.Errorf("nfqueue: verdict payload of %d bytes: %w", len(payload), syscall.EMSGSIZE)
	}
	w := q.wbuf[:0]
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
	binary.NativeEndian.PutUint32(w, uint32(len(w)))
	q.wbuf = w
	if err := q.raw.Write(q.writeFn); err != nil {
		return q.closedErr(err)
	}
	if q.err != nil {
		return q.closedErr(q.err)
	}
	return nil
}
