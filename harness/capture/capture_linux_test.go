package capture

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tcpsig/tcpsig/harness/netns"
)

// TestCaptureLoopback captures a small TCP exchange on the host's lo and
// checks that each segment is kept exactly once and survives a pcap round
// trip.
func TestCaptureLoopback(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("not root: AF_PACKET capture needs CAP_NET_RAW")
	}
	// In a fresh namespace: proves the capture follows the thread's
	// namespace, and keeps other tests' loopback traffic away.
	if err := netns.Run(func() error { return captureLoopback(t) }); err != nil {
		t.Fatal(err)
	}
}

func captureLoopback(t *testing.T) error {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer ln.Close()
	port := uint16(ln.Addr().(*net.TCPAddr).Port)
	c, err := Start(Options{Filter: TCPPorts(port)})
	if err != nil {
		return err
	}
	defer c.Stop()
	if c.LinkType() != LinkTypeEthernet {
		return fmt.Errorf("lo link type %v", c.LinkType())
	}

	greeting := []byte("unique-greeting-7f3a")
	errc := make(chan error, 1)
	go func() {
		s, err := ln.Accept()
		if err != nil {
			errc <- err
			return
		}
		defer s.Close()
		_, err = s.Write(greeting)
		errc <- err
	}()
	cl, err := net.Dial("tcp4", ln.Addr().String())
	if err != nil {
		return err
	}
	got, err := io.ReadAll(cl)
	cl.Close()
	if err != nil || !bytes.Equal(got, greeting) {
		return fmt.Errorf("read %q, %v", got, err)
	}
	if err := <-errc; err != nil {
		return err
	}
	c.WaitIdle(200*time.Millisecond, 5*time.Second)
	if err := c.Stop(); err != nil {
		return err
	}

	pkts := c.Packets()
	var syn, synack, fins, withGreeting int
	for _, p := range pkts {
		ip := c.LinkType().IP(p.Data)
		tcp := tcpOf(ip)
		if len(tcp) < 20 {
			return fmt.Errorf("not TCP: %x", p.Data)
		}
		if binary.BigEndian.Uint16(tcp[0:]) != port && binary.BigEndian.Uint16(tcp[2:]) != port {
			t.Errorf("filter let through %x", tcp[:4])
		}
		flags := tcp[13]
		switch {
		case flags&0x12 == 0x02:
			syn++
		case flags&0x12 == 0x12:
			synack++
		}
		if flags&0x01 != 0 {
			fins++
		}
		if bytes.Contains(p.Data, greeting) {
			withGreeting++
		}
		if p.Time.IsZero() || p.Length != len(p.Data) {
			t.Errorf("packet time %v length %d/%d", p.Time, p.Length, len(p.Data))
		}
	}
	// Loopback packets are seen leaving and arriving; one copy is kept.
	if syn != 1 || synack != 1 || fins != 2 || withGreeting != 1 {
		t.Errorf("SYN %d, SYN-ACK %d, FIN %d, greeting %d; want 1, 1, 2, 1 (of %d packets)",
			syn, synack, fins, withGreeting, len(pkts))
	}

	path := filepath.Join(t.TempDir(), "lo.pcap")
	if err := c.WriteFile(path); err != nil {
		return err
	}
	lt, back, err := ReadFile(path)
	if err != nil || lt != LinkTypeEthernet || len(back) != len(pkts) {
		return fmt.Errorf("read back: %v %v %d packets, want %d", err, lt, len(back), len(pkts))
	}
	for i := range back {
		if !bytes.Equal(back[i].Data, pkts[i].Data) {
			t.Errorf("packet %d differs after round trip", i)
		}
	}
	return nil
}

func TestStartErrors(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("not root: AF_PACKET capture needs CAP_NET_RAW")
	}
	if _, err := Start(Options{Interface: "no-such-if0"}); err == nil {
		t.Error("Start on a missing interface succeeded")
	}
}

// Stop is idempotent and a capture with no traffic stops cleanly.
func TestStopTwice(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("not root: AF_PACKET capture needs CAP_NET_RAW")
	}
	c, err := Start(Options{Filter: TCPPorts(1)})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
}
