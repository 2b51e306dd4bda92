//go:build linux

package linuxao

import (
	"fmt"
	"syscall"
	"unsafe"
)

func setsockopt(fd, opt int, b []byte) error {
	if err := syscall.SetsockoptString(fd, syscall.IPPROTO_TCP, opt, string(b)); err != nil {
		return fmt.Errorf("setsockopt(%s): %w", optName(opt), err)
	}
	return nil
}

// getsockopt reads option opt into b (in: b's initial contents, as some
// options take input) and returns the length the kernel reported.
func getsockopt(fd, opt int, b []byte) (int, error) {
	l := uint32(len(b))
	_, _, e := syscall.Syscall6(syscall.SYS_GETSOCKOPT, uintptr(fd), syscall.IPPROTO_TCP, uintptr(opt),
		uintptr(unsafe.Pointer(&b[0])), uintptr(unsafe.Pointer(&l)), 0)
	if e != 0 {
		return 0, fmt.Errorf("getsockopt(%s): %w", optName(opt), e)
	}
	return int(l), nil
}

func optName(opt int) string {
	switch opt {
	case TCP_REPAIR:
		return "TCP_REPAIR"
	case TCP_REPAIR_QUEUE:
		return "TCP_REPAIR_QUEUE"
	case TCP_QUEUE_SEQ:
		return "TCP_QUEUE_SEQ"
	case TCP_REPAIR_OPTIONS:
		return "TCP_REPAIR_OPTIONS"
	case TCP_REPAIR_WINDOW:
		return "TCP_REPAIR_WINDOW"
	case TCP_AO_ADD_KEY:
		return "TCP_AO_ADD_KEY"
	case TCP_AO_DEL_KEY:
		return "TCP_AO_DEL_KEY"
	case TCP_AO_INFO:
		return "TCP_AO_INFO"
	case TCP_AO_GET_KEYS:
		return "TCP_AO_GET_KEYS"
	case TCP_AO_REPAIR:
		return "TCP_AO_REPAIR"
	}
	return fmt.Sprintf("TCP option %d", opt)
}

// AddKeyFD adds an MKT to socket fd (TCP_AO_ADD_KEY).
func AddKeyFD(fd int, k AddKey) error {
	b, err := k.Marshal()
	if err != nil {
		return err
	}
	return setsockopt(fd, TCP_AO_ADD_KEY, b)
}

// DelKeyFD deletes an MKT from socket fd (TCP_AO_DEL_KEY).
func DelKeyFD(fd int, d DelKey) error {
	b, err := d.Marshal()
	if err != nil {
		return err
	}
	return setsockopt(fd, TCP_AO_DEL_KEY, b)
}

// SetInfoFD sets TCP_AO_INFO (current/rnext key, flags, counters).
func SetInfoFD(fd int, i Info) error { return setsockopt(fd, TCP_AO_INFO, i.Marshal()) }

// InfoFD reads TCP_AO_INFO: current/rnext KeyIDs and the socket's counters.
func InfoFD(fd int) (Info, error) {
	b := make([]byte, SizeofAOInfo)
	if _, err := getsockopt(fd, TCP_AO_INFO, b); err != nil {
		return Info{}, err
	}
	return UnmarshalInfo(b)
}

// SetRepairFD sets TCP_AO_REPAIR (the socket must be in TCP_REPAIR mode).
func SetRepairFD(fd int, r Repair) error { return setsockopt(fd, TCP_AO_REPAIR, r.Marshal()) }

// RepairFD reads TCP_AO_REPAIR (the socket must be in TCP_REPAIR mode).
func RepairFD(fd int) (Repair, error) {
	b := make([]byte, SizeofAORepair)
	if _, err := getsockopt(fd, TCP_AO_REPAIR, b); err != nil {
		return Repair{}, err
	}
	return UnmarshalRepair(b)
}

// KeysFD returns every MKT of socket fd (TCP_AO_GET_KEYS with get_all),
// key material included, as the kernel stores it.
func KeysFD(fd int) ([]KeyInfo, error) {
	n := uint32(8)
	for {
		b := MarshalGetKeysRequest(true, n)
		if _, err := getsockopt(fd, TCP_AO_GET_KEYS, b); err != nil {
			return nil, err
		}
		first, err := UnmarshalKeyInfo(b)
		if err != nil {
			return nil, err
		}
		if first.NKeys > n {
			n = first.NKeys
			continue
		}
		out := make([]KeyInfo, 0, first.NKeys)
		for i := 0; i < int(first.NKeys); i++ {
			k, err := UnmarshalKeyInfo(b[i*SizeofAOGetsockopt:])
			if err != nil {
				return nil, err
			}
			out = append(out, k)
		}
		return out, nil
	}
}

func setInt(fd, opt, v int) error {
	if err := syscall.SetsockoptInt(fd, syscall.IPPROTO_TCP, opt, v); err != nil {
		return fmt.Errorf("setsockopt(%s, %d): %w", optName(opt), v, err)
	}
	return nil
}

// SetRepairModeFD sets TCP_REPAIR (TCP_REPAIR_ON, _OFF or _OFF_NO_WP).
func SetRepairModeFD(fd, mode int) error { return setInt(fd, TCP_REPAIR, mode) }

// SetQueueSeqFD selects a repair queue (TCP_RECV_QUEUE or TCP_SEND_QUEUE)
// and sets its sequence number (TCP_REPAIR_QUEUE + TCP_QUEUE_SEQ); the
// socket must be in repair mode and not yet connected.
func SetQueueSeqFD(fd, queue int, seq uint32) error {
	if err := setInt(fd, TCP_REPAIR_QUEUE, queue); err != nil {
		return err
	}
	return setInt(fd, TCP_QUEUE_SEQ, int(int32(seq)))
}

// SetRepairOptionsFD sets TCP_REPAIR_OPTIONS on a repaired, connected socket.
func SetRepairOptionsFD(fd int, opts []RepairOpt) error {
	return setsockopt(fd, TCP_REPAIR_OPTIONS, MarshalRepairOpts(opts))
}

// SetRepairWindowFD sets TCP_REPAIR_WINDOW.
func SetRepairWindowFD(fd int, w RepairWindow) error {
	return setsockopt(fd, TCP_REPAIR_WINDOW, w.Marshal())
}

// QueueSeqFD reads a repair queue's sequence number (TCP_REPAIR_QUEUE +
// getsockopt TCP_QUEUE_SEQ): write_seq for TCP_SEND_QUEUE, rcv_nxt for
// TCP_RECV_QUEUE. The socket must be in repair mode.
func QueueSeqFD(fd, queue int) (uint32, error) {
	if err := setInt(fd, TCP_REPAIR_QUEUE, queue); err != nil {
		return 0, err
	}
	b := make([]byte, 4)
	if _, err := getsockopt(fd, TCP_QUEUE_SEQ, b); err != nil {
		return 0, err
	}
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24, nil
}
