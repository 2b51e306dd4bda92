package capture

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/tcpsig/tcpsig/harness/netns"
	"github.com/tcpsig/tcpsig/harness/usertcp"
)

// On a TUN device (no link-layer header) packets are raw IP, and both
// directions are kept: what the kernel sends into the device and what is
// written into it.
func TestCaptureTUN(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("not root: AF_PACKET capture and TUN devices need CAP_NET_ADMIN")
	}
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		t.Skip("no /dev/net/tun: ", err)
	}
	err := netns.Run(func() error {
		tun, err := usertcp.OpenTUN("cap0")
		if err != nil {
			return err
		}
		defer tun.Close()
		if err := netns.LinkUp(tun.Name()); err != nil {
			return err
		}
		if err := netns.AddAddr(tun.Name(), netip.MustParsePrefix("10.98.0.1/24")); err != nil {
			return err
		}
		udp4 := func(ip []byte) bool { return len(ip) >= 20 && ip[0]>>4 == 4 && ip[9] == 17 }
		c, err := Start(Options{Interface: tun.Name(), Filter: udp4})
		if err != nil {
			return err
		}
		defer c.Stop()
		if c.LinkType() != LinkTypeRaw {
			return fmt.Errorf("TUN link type %v", c.LinkType())
		}
		// Kernel → device.
		u, err := net.Dial("udp4", "10.98.0.2:9")
		if err != nil {
			return err
		}
		defer u.Close()
		if _, err := u.Write([]byte("out")); err != nil {
			return err
		}
		// Device → kernel: an IPv4/UDP packet from 10.98.0.2 to 10.98.0.1.
		in := make([]byte, 20+8+2)
		in[0], in[8], in[9] = 0x45, 64, 17
		binary.BigEndian.PutUint16(in[2:], uint16(len(in)))
		copy(in[12:], []byte{10, 98, 0, 2})
		copy(in[16:], []byte{10, 98, 0, 1})
		binary.BigEndian.PutUint16(in[10:], ipChecksum(in[:20]))
		binary.BigEndian.PutUint16(in[20:], 9)
		binary.BigEndian.PutUint16(in[22:], 9)
		binary.BigEndian.PutUint16(in[24:], 10)
		copy(in[28:], "in")
		if err := tun.WritePacket(in); err != nil {
			return err
		}
		c.WaitIdle(100*time.Millisecond, 5*time.Second)
		if err := c.Stop(); err != nil {
			return err
		}
		pkts := c.Packets()
		if len(pkts) != 2 {
			return fmt.Errorf("%d packets, want 2", len(pkts))
		}
		if string(pkts[0].Data[28:]) != "out" || string(pkts[1].Data) != string(in) {
			return fmt.Errorf("captured %x and %x", pkts[0].Data, pkts[1].Data)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func ipChecksum(b []byte) uint16 {
	var sum uint32
	for i := 0; i+1 < len(b); i += 2 {
		sum += uint32(b[i])<<8 | uint32(b[i+1])
	}
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}
