//go:build linux

package tcprepair

import (
	"errors"
	"os"
	"syscall"
	"testing"
)

// A fresh socket put in repair mode takes a send sequence number and
// reads it back; without CAP_NET_ADMIN the kernel refuses repair mode.
func TestQueueSeq(t *testing.T) {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	err = SetMode(fd, On)
	if os.Geteuid() != 0 {
		if !errors.Is(err, syscall.EPERM) {
			t.Errorf("repair mode without root: %v, want EPERM", err)
		}
		t.Skip("not root: TCP_REPAIR needs CAP_NET_ADMIN")
	}
	if err != nil {
		t.Fatal(err)
	}
	const seq = 0xfffffff0
	if err := SetQueueSeq(fd, SendQueue, seq); err != nil {
		t.Fatal(err)
	}
	if got, err := QueueSeq(fd, SendQueue); err != nil || got != seq {
		t.Errorf("send queue seq %#x, %v; want %#x", got, err, uint32(seq))
	}
	if err := SetMode(fd, OffNoWP); err != nil {
		t.Error(err)
	}
}
