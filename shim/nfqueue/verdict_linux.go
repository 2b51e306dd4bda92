//go:build linux

package nfqueue

import (
	"encoding/binary"
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"
)

// Answering: verdicts collected in one buffer and sent in one write.

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
