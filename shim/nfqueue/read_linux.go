//go:build linux

package nfqueue

import (
	"encoding/binary"
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"
)

// Reading: datagrams of queued packets, parsed in place into Packets.

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

// nlAlign rounds n up to netlink's 4-byte alignment.
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
