package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"time"

	"github.com/mdlayher/packet"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// afPacket is a packet socket (SOCK_DGRAM: the kernel strips the link
// header) bound to one interface.
type afPacket struct{ c *packet.Conn }

func (p afPacket) Read(b []byte) (int, error) {
	n, _, err := p.c.ReadFrom(b)
	return n, err
}

func (p afPacket) SetDeadline(t time.Time) error { return p.c.SetReadDeadline(t) }
func (p afPacket) Close() error                  { return p.c.Close() }

// openInterface opens a packet socket on the interface. A loopback
// device hands a packet socket every packet twice, leaving and arriving:
// a filter keeps the leaving copy, so each segment is judged once.
func openInterface(name string) (packetSource, error) {
	ifi, err := net.InterfaceByName(name)
	if err != nil {
		return nil, fmt.Errorf("no such interface (have: %s)", interfaceNames())
	}
	var cfg packet.Config
	if ifi.Flags&net.FlagLoopback != 0 {
		prog, err := bpf.Assemble([]bpf.Instruction{
			bpf.LoadExtension{Num: bpf.ExtType},
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.PACKET_OUTGOING, SkipFalse: 1},
			bpf.RetConstant{Val: liveSnapLen},
			bpf.RetConstant{Val: 0},
		})
		if err != nil {
			return nil, err
		}
		cfg.Filter = prog
	}
	c, err := packet.Listen(ifi, packet.Datagram, unix.ETH_P_ALL, &cfg)
	if errors.Is(err, os.ErrPermission) || errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EACCES) {
		return nil, errors.New("reading packets needs CAP_NET_RAW: run as root, or give the binary the capability (sudo setcap cap_net_raw+ep $(command -v tcpsig))")
	}
	if err != nil {
		return nil, err
	}
	return afPacket{c}, nil
}
