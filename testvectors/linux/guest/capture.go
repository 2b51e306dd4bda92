//go:build linux

package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

// A small AF_PACKET capture on lo. Every loopback packet passes the tap
// twice (PACKET_OUTGOING on transmit, PACKET_HOST on receive); only the
// outgoing copy is kept, so each segment is recorded once. Frames on lo carry
// an Ethernet header with zero MACs, so the pcaps are LINKTYPE_ETHERNET.

const (
	ethPAll         = 0x0003
	packetOutgoing  = 4
	solPacket       = 263
	packetStatistic = 6
	linkTypeEther   = 1
	snapLen         = 262144
)

type packet struct {
	ts   time.Time
	data []byte
}

type capturer struct {
	fd    int
	ports map[uint16]bool

	mu   sync.Mutex
	pkts []packet
	last time.Time

	stopc chan struct{}
	done  chan error
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// startCapture records, on lo, every outgoing TCP packet from or to one of
// ports.
func startCapture(ports ...uint16) (*capturer, error) {
	fd, err := syscall.Socket(syscall.AF_PACKET, syscall.SOCK_RAW|syscall.SOCK_CLOEXEC, int(htons(ethPAll)))
	if err != nil {
		return nil, fmt.Errorf("AF_PACKET socket: %w", err)
	}
	lo, err := net.InterfaceByName("lo")
	if err != nil {
		syscall.Close(fd)
		return nil, err
	}
	if err := syscall.Bind(fd, &syscall.SockaddrLinklayer{Protocol: htons(ethPAll), Ifindex: lo.Index}); err != nil {
		syscall.Close(fd)
		return nil, fmt.Errorf("bind AF_PACKET to lo: %w", err)
	}
	_ = syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_RCVBUF, 8<<20)
	tv := syscall.NsecToTimeval(int64(20 * time.Millisecond))
	if err := syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_RCVTIMEO, &tv); err != nil {
		syscall.Close(fd)
		return nil, err
	}
	// Drain what arrived between socket() and bind() (other interfaces, or
	// packets of earlier cases): nothing is counted before this point.
	readStats(fd)
	c := &capturer{fd: fd, ports: map[uint16]bool{}, stopc: make(chan struct{}), done: make(chan error, 1), last: time.Now()}
	for _, p := range ports {
		c.ports[p] = true
	}
	go c.loop()
	return c, nil
}

func (c *capturer) loop() {
	buf := make([]byte, snapLen)
	stopping := false
	for {
		if !stopping {
			select {
			case <-c.stopc:
				stopping = true // drain what is queued, then end
			default:
			}
		}
		n, from, err := syscall.Recvfrom(c.fd, buf, 0)
		if err != nil {
			if err == syscall.EAGAIN && stopping {
				c.done <- nil
				return
			}
			if err == syscall.EAGAIN || err == syscall.EINTR {
				continue
			}
			c.done <- fmt.Errorf("recvfrom: %w", err)
			return
		}
		ll, ok := from.(*syscall.SockaddrLinklayer)
		if !ok || ll.Pkttype != packetOutgoing {
			continue
		}
		now := time.Now()
		d := buf[:n]
		if !c.wanted(d) {
			continue
		}
		c.mu.Lock()
		c.pkts = append(c.pkts, packet{ts: now, data: bytes.Clone(d)})
		c.last = now
		c.mu.Unlock()
	}
}

func (c *capturer) wanted(frame []byte) bool {
	p, err := parseFrame(frame)
	if err != nil || !p.isTCP {
		return false
	}
	return c.ports[p.sport] || c.ports[p.dport]
}

// waitQuiet returns once no packet has been captured for quiet, or after max.
func (c *capturer) waitQuiet(quiet, max time.Duration) {
	deadline := time.Now().Add(max)
	for time.Now().Before(deadline) {
		c.mu.Lock()
		idle := time.Since(c.last)
		c.mu.Unlock()
		if idle >= quiet {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// stop ends the capture; it fails if the kernel dropped packets.
func (c *capturer) stop() ([]packet, error) {
	close(c.stopc)
	err := <-c.done
	_, drops := readStats(c.fd)
	syscall.Close(c.fd)
	if err == nil && drops > 0 {
		err = fmt.Errorf("AF_PACKET dropped %d packets", drops)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pkts, err
}

// readStats reads (and so resets) PACKET_STATISTICS.
func readStats(fd int) (packets, drops uint32) {
	var st [2]uint32
	l := uint32(8)
	syscall.Syscall6(syscall.SYS_GETSOCKOPT, uintptr(fd), solPacket, packetStatistic,
		uintptr(unsafe.Pointer(&st[0])), uintptr(unsafe.Pointer(&l)), 0)
	return st[0], st[1]
}

// writePcap writes pkts as a classic little-endian pcap (microseconds).
func writePcap(w io.Writer, pkts []packet) error {
	hdr := make([]byte, 24)
	binary.LittleEndian.PutUint32(hdr[0:], 0xa1b2c3d4)
	binary.LittleEndian.PutUint16(hdr[4:], 2)
	binary.LittleEndian.PutUint16(hdr[6:], 4)
	binary.LittleEndian.PutUint32(hdr[16:], snapLen)
	binary.LittleEndian.PutUint32(hdr[20:], linkTypeEther)
	if _, err := w.Write(hdr); err != nil {
		return err
	}
	for _, p := range pkts {
		rec := make([]byte, 16)
		binary.LittleEndian.PutUint32(rec[0:], uint32(p.ts.Unix()))
		binary.LittleEndian.PutUint32(rec[4:], uint32(p.ts.Nanosecond()/1000))
		binary.LittleEndian.PutUint32(rec[8:], uint32(len(p.data)))
		binary.LittleEndian.PutUint32(rec[12:], uint32(len(p.data)))
		if _, err := w.Write(rec); err != nil {
			return err
		}
		if _, err := w.Write(p.data); err != nil {
			return err
		}
	}
	return nil
}

// readPcap reads a classic pcap written by writePcap (or any little-endian
// microsecond pcap with Ethernet link type).
func readPcap(b []byte) ([]packet, error) {
	if len(b) < 24 || binary.LittleEndian.Uint32(b) != 0xa1b2c3d4 {
		return nil, fmt.Errorf("not a little-endian microsecond pcap")
	}
	if lt := binary.LittleEndian.Uint32(b[20:]); lt != linkTypeEther {
		return nil, fmt.Errorf("link type %d, want %d (Ethernet)", lt, linkTypeEther)
	}
	var out []packet
	b = b[24:]
	for len(b) > 0 {
		if len(b) < 16 {
			return nil, fmt.Errorf("truncated record header")
		}
		sec, usec := binary.LittleEndian.Uint32(b), binary.LittleEndian.Uint32(b[4:])
		incl := int(binary.LittleEndian.Uint32(b[8:]))
		if len(b) < 16+incl {
			return nil, fmt.Errorf("truncated record")
		}
		out = append(out, packet{ts: time.Unix(int64(sec), int64(usec)*1000), data: b[16 : 16+incl]})
		b = b[16+incl:]
	}
	return out, nil
}

// seg is the little the guest needs to know about a captured TCP segment.
type seg struct {
	isTCP            bool
	v6               bool
	src, dst         netip.Addr
	sport, dport     uint16
	seq, ack         uint32
	flags            uint8
	payload          int
	opts             []uint8 // option kinds in order (NOPs included)
	hasAO            bool
	aoLen            int
	keyID, rnextID   uint8
	hasTS            bool
	tsVal, tsEcr     uint32
	hasMD5, hasSACKp bool
}

const (
	flFIN = 0x01
	flSYN = 0x02
	flRST = 0x04
	flPSH = 0x08
	flACK = 0x10
)

func (s seg) srcAP() netip.AddrPort { return netip.AddrPortFrom(s.src, s.sport) }
func (s seg) dstAP() netip.AddrPort { return netip.AddrPortFrom(s.dst, s.dport) }

func (s seg) String() string {
	f := ""
	for i, n := range "FSRPA" {
		if s.flags&(1<<i) != 0 {
			f += string(n)
		}
	}
	ao := ""
	if s.hasAO {
		ao = fmt.Sprintf(" AO(len %d, %d/%d)", s.aoLen, s.keyID, s.rnextID)
	}
	return fmt.Sprintf("%v > %v [%s] seq %d ack %d len %d%s", s.srcAP(), s.dstAP(), f, s.seq, s.ack, s.payload, ao)
}

func parseFrame(b []byte) (seg, error) {
	var s seg
	if len(b) < 14 {
		return s, fmt.Errorf("short frame")
	}
	et := binary.BigEndian.Uint16(b[12:])
	b = b[14:]
	var tcp []byte
	switch et {
	case 0x0800:
		if len(b) < 20 || b[0]>>4 != 4 {
			return s, fmt.Errorf("bad IPv4 header")
		}
		ihl := int(b[0]&15) * 4
		tot := int(binary.BigEndian.Uint16(b[2:]))
		if b[9] != 6 {
			return s, nil
		}
		if tot > len(b) || ihl > tot {
			return s, fmt.Errorf("bad IPv4 length")
		}
		s.src = netip.AddrFrom4([4]byte(b[12:16]))
		s.dst = netip.AddrFrom4([4]byte(b[16:20]))
		tcp = b[ihl:tot]
	case 0x86dd:
		if len(b) < 40 {
			return s, fmt.Errorf("bad IPv6 header")
		}
		if b[6] != 6 {
			return s, nil
		}
		pl := int(binary.BigEndian.Uint16(b[4:]))
		if 40+pl > len(b) {
			return s, fmt.Errorf("bad IPv6 length")
		}
		s.v6 = true
		s.src = netip.AddrFrom16([16]byte(b[8:24]))
		s.dst = netip.AddrFrom16([16]byte(b[24:40]))
		tcp = b[40 : 40+pl]
	default:
		return s, nil
	}
	if len(tcp) < 20 {
		return s, fmt.Errorf("short TCP header")
	}
	s.isTCP = true
	s.sport, s.dport = binary.BigEndian.Uint16(tcp), binary.BigEndian.Uint16(tcp[2:])
	s.seq, s.ack = binary.BigEndian.Uint32(tcp[4:]), binary.BigEndian.Uint32(tcp[8:])
	doff := int(tcp[12]>>4) * 4
	s.flags = tcp[13]
	if doff < 20 || doff > len(tcp) {
		return s, fmt.Errorf("bad data offset")
	}
	s.payload = len(tcp) - doff
	o := tcp[20:doff]
	for len(o) > 0 {
		k := o[0]
		s.opts = append(s.opts, k)
		if k == 0 {
			break
		}
		if k == 1 {
			o = o[1:]
			continue
		}
		if len(o) < 2 || int(o[1]) < 2 || int(o[1]) > len(o) {
			return s, fmt.Errorf("bad option %d", k)
		}
		l := int(o[1])
		switch k {
		case 29:
			if l < 4 {
				return s, fmt.Errorf("bad AO option length %d", l)
			}
			s.hasAO, s.aoLen, s.keyID, s.rnextID = true, l, o[2], o[3]
		case 8:
			if l == 10 {
				s.hasTS = true
				s.tsVal, s.tsEcr = binary.BigEndian.Uint32(o[2:]), binary.BigEndian.Uint32(o[6:])
			}
		case 19:
			s.hasMD5 = true
		case 4:
			s.hasSACKp = true
		}
		o = o[l:]
	}
	return s, nil
}
