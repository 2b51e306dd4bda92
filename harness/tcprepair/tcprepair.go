//go:build linux

// Package tcprepair drives Linux's TCP_REPAIR socket options on a file
// descriptor: repair mode, the queues' sequence numbers, the negotiated
// options and the window. Tests use it to restore kernel sockets at
// chosen sequence numbers (just below 2^32, so that the SNE wraps) and
// to read a socket's state; the TCP-AO part of a repair (TCP_AO_REPAIR)
// is package linuxsock's. All of it needs CAP_NET_ADMIN.
package tcprepair

import (
	"encoding/binary"
	"fmt"
	"syscall"
	"unsafe"
)

// Socket options (level IPPROTO_TCP), include/uapi/linux/tcp.h.
const (
	optRepair        = 19 // TCP_REPAIR
	optRepairQueue   = 20 // TCP_REPAIR_QUEUE
	optQueueSeq      = 21 // TCP_QUEUE_SEQ
	optRepairOptions = 22 // TCP_REPAIR_OPTIONS
	optRepairWindow  = 29 // TCP_REPAIR_WINDOW
)

// Repair modes (TCP_REPAIR values).
const (
	On      = 1  // TCP_REPAIR_ON
	Off     = 0  // TCP_REPAIR_OFF: leaving sends a window probe
	OffNoWP = -1 // TCP_REPAIR_OFF_NO_WP: leaving sends nothing
)

// Queues (TCP_REPAIR_QUEUE values).
const (
	RecvQueue = 1 // TCP_RECV_QUEUE
	SendQueue = 2 // TCP_SEND_QUEUE
)

// TCP option kinds TCP_REPAIR_OPTIONS takes.
const (
	OptMSS       = 2
	OptWindow    = 3
	OptSACKPerm  = 4
	OptTimestamp = 8
)

// Opt is struct tcp_repair_opt, one negotiated option.
type Opt struct {
	Code uint32 // Opt*
	Val  uint32 // the MSS; snd_wscale | rcv_wscale<<16; 0 for SACK-permitted and timestamps
}

// Window is struct tcp_repair_window.
type Window struct {
	SndWL1, SndWnd, MaxWindow, RcvWnd, RcvWup uint32
}

var optNames = map[int]string{optRepair: "TCP_REPAIR", optRepairQueue: "TCP_REPAIR_QUEUE",
	optQueueSeq: "TCP_QUEUE_SEQ", optRepairOptions: "TCP_REPAIR_OPTIONS", optRepairWindow: "TCP_REPAIR_WINDOW"}

func setInt(fd, opt, v int) error {
	if err := syscall.SetsockoptInt(fd, syscall.IPPROTO_TCP, opt, v); err != nil {
		return fmt.Errorf("tcprepair: %s %d: %w", optNames[opt], v, err)
	}
	return nil
}

func setBytes(fd, opt int, b []byte) error {
	if err := syscall.SetsockoptString(fd, syscall.IPPROTO_TCP, opt, string(b)); err != nil {
		return fmt.Errorf("tcprepair: %s: %w", optNames[opt], err)
	}
	return nil
}

// SetMode sets TCP_REPAIR to On, Off or OffNoWP.
func SetMode(fd, mode int) error { return setInt(fd, optRepair, mode) }

// SetQueueSeq selects a queue (RecvQueue or SendQueue) and sets its
// sequence number; the socket must be in repair mode and not connected.
func SetQueueSeq(fd, queue int, seq uint32) error {
	if err := setInt(fd, optRepairQueue, queue); err != nil {
		return err
	}
	return setInt(fd, optQueueSeq, int(int32(seq)))
}

// QueueSeq reads a queue's sequence number: write_seq for SendQueue,
// rcv_nxt for RecvQueue. The socket must be in repair mode.
func QueueSeq(fd, queue int) (uint32, error) {
	if err := setInt(fd, optRepairQueue, queue); err != nil {
		return 0, err
	}
	var b [4]byte
	l := uint32(len(b))
	_, _, e := syscall.Syscall6(syscall.SYS_GETSOCKOPT, uintptr(fd), syscall.IPPROTO_TCP, optQueueSeq,
		uintptr(unsafe.Pointer(&b[0])), uintptr(unsafe.Pointer(&l)), 0)
	if e != 0 {
		return 0, fmt.Errorf("tcprepair: TCP_QUEUE_SEQ: %w", e)
	}
	return binary.NativeEndian.Uint32(b[:]), nil
}

// SetOptions sets TCP_REPAIR_OPTIONS on a repaired, connected socket.
func SetOptions(fd int, opts []Opt) error {
	b := make([]byte, 0, 8*len(opts))
	for _, o := range opts {
		b = binary.NativeEndian.AppendUint32(b, o.Code)
		b = binary.NativeEndian.AppendUint32(b, o.Val)
	}
	return setBytes(fd, optRepairOptions, b)
}

// SetWindow sets TCP_REPAIR_WINDOW.
func SetWindow(fd int, w Window) error {
	b := make([]byte, 0, 20)
	for _, v := range [...]uint32{w.SndWL1, w.SndWnd, w.MaxWindow, w.RcvWnd, w.RcvWup} {
		b = binary.NativeEndian.AppendUint32(b, v)
	}
	return setBytes(fd, optRepairWindow, b)
}
