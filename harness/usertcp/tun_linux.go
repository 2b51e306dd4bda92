package usertcp

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
	"unsafe"
)

// ErrNoTUN is returned (wrapped) by OpenTUN when the system has no
// /dev/net/tun.
var ErrNoTUN = errors.New("usertcp: no /dev/net/tun")

// TUN is a Linux TUN device in IFF_TUN|IFF_NO_PI mode: each read returns
// and each write takes one raw IPv4 or IPv6 packet. It implements [Link].
type TUN struct {
	f    *os.File
	name string
}

// OpenTUN creates a TUN device named name ("" lets the kernel pick tunN)
// in the network namespace of the calling OS thread. The device starts
// down and without addresses; the caller configures it (see the netns
// package). It needs CAP_NET_ADMIN.
func OpenTUN(name string) (*TUN, error) {
	fd, err := syscall.Open("/dev/net/tun", syscall.O_RDWR|syscall.O_CLOEXEC|syscall.O_NONBLOCK, 0)
	if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ENODEV) {
		return nil, fmt.Errorf("%w: %v", ErrNoTUN, err)
	}
	if err != nil {
		return nil, fmt.Errorf("usertcp: open /dev/net/tun: %w", err)
	}
	var ifr struct {
		name  [syscall.IFNAMSIZ]byte
		flags uint16
		_     [22]byte
	}
	if len(name) >= len(ifr.name) {
		syscall.Close(fd)
		return nil, fmt.Errorf("usertcp: interface name %q too long", name)
	}
	copy(ifr.name[:], name)
	ifr.flags = syscall.IFF_TUN | syscall.IFF_NO_PI
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), syscall.TUNSETIFF, uintptr(unsafe.Pointer(&ifr))); e != 0 {
		syscall.Close(fd)
		return nil, fmt.Errorf("usertcp: TUNSETIFF %q: %w", name, e)
	}
	n := 0
	for n < len(ifr.name) && ifr.name[n] != 0 {
		n++
	}
	// Non-blocking, so os.File uses the runtime poller and deadlines work.
	return &TUN{f: os.NewFile(uintptr(fd), "/dev/net/tun"), name: string(ifr.name[:n])}, nil
}

// Name returns the device's interface name.
func (t *TUN) Name() string { return t.name }

// ReadPacket reads one packet, waiting until deadline at most.
func (t *TUN) ReadPacket(b []byte, deadline time.Time) (int, error) {
	if err := t.f.SetReadDeadline(deadline); err != nil {
		return 0, err
	}
	return t.f.Read(b)
}

// WritePacket sends one packet into the kernel, as if it had arrived on
// the device.
func (t *TUN) WritePacket(pkt []byte) error {
	_, err := t.f.Write(pkt)
	return err
}

// Close closes the device; the kernel removes the interface.
func (t *TUN) Close() error { return t.f.Close() }
