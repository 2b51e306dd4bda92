//go:build linux

package nfrules_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tcpsig/tcpsig/harness/netns"
	"github.com/tcpsig/tcpsig/shim/nfqueue"
	"github.com/tcpsig/tcpsig/shim/nfrules"
)

// probe is one ICMP message sent to the host, and whether the rules must
// queue it.
type probe struct {
	name   string
	v6     bool
	typ    uint8
	code   uint8
	quoted netip.Addr // the quoted header's destination
	proto  uint8      // the quoted header's protocol
	ihl    int        // the quoted IPv4 header's length in words; 0: 5
	queue  bool
}

// TestICMPQueued sends ICMP messages to the host in a namespace (through
// lo, from a router's address) and finds each either in a queue or at a
// raw ICMP socket, which the kernel hands what the input hook let through:
// exactly the hard errors of RFC 5925 §7.8 quoting a TCP packet to a
// covered peer are queued, to the first queue, with one queue or three.
func TestICMPQueued(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: network namespaces and netfilter rules")
	}
	var (
		covered4, inPrefix4, other4 = netip.MustParseAddr("192.0.2.2"), netip.MustParseAddr("198.51.100.77"), netip.MustParseAddr("203.0.113.9")
		covered6, inPrefix6, other6 = netip.MustParseAddr("2001:db8::2"), netip.MustParseAddr("2001:db8:1:2::5"), netip.MustParseAddr("2001:db8:2::9")
	)
	const tcp, udp = syscall.IPPROTO_TCP, syscall.IPPROTO_UDP
	probes := []probe{
		{"port unreachable, covered peer", false, 3, 3, covered4, tcp, 0, true},
		{"protocol unreachable, covered peer", false, 3, 2, covered4, tcp, 0, true},
		{"fragmentation needed, covered peer", false, 3, 4, covered4, tcp, 0, true},
		{"port unreachable, quoted header with options", false, 3, 3, covered4, tcp, 6, true},
		{"port unreachable, address in a covered /24", false, 3, 3, inPrefix4, tcp, 0, true},
		{"port unreachable, uncovered peer", false, 3, 3, other4, tcp, 0, false},
		{"port unreachable, quoted UDP", false, 3, 3, covered4, udp, 0, false},
		{"network unreachable", false, 3, 0, covered4, tcp, 0, false},
		{"host unreachable", false, 3, 1, covered4, tcp, 0, false},
		{"source route failed", false, 3, 5, covered4, tcp, 0, false},
		{"communication administratively prohibited", false, 3, 13, covered4, tcp, 0, false},
		{"time exceeded", false, 11, 0, covered4, tcp, 0, false},
		{"echo request", false, 8, 0, covered4, tcp, 0, false},
		{"v6 port unreachable, covered peer", true, 1, 4, covered6, tcp, 0, true},
		{"v6 administratively prohibited, covered peer", true, 1, 1, covered6, tcp, 0, true},
		{"v6 port unreachable, address in a covered /48", true, 1, 4, inPrefix6, tcp, 0, true},
		{"v6 port unreachable, uncovered peer", true, 1, 4, other6, tcp, 0, false},
		// The quoted IPv6 header's next header may be an extension header
		// before TCP (Linux skips them): every quoted protocol is queued,
		// and the layer passes what is not TCP.
		{"v6 port unreachable, quoted UDP", true, 1, 4, covered6, udp, 0, true},
		{"v6 port unreachable, quoted destination options", true, 1, 4, covered6, 60, 0, true},
		{"v6 no route", true, 1, 0, covered6, tcp, 0, false},
		{"v6 beyond scope", true, 1, 2, covered6, tcp, 0, false},
		{"v6 address unreachable", true, 1, 3, covered6, tcp, 0, false},
		{"v6 source address failed policy", true, 1, 5, covered6, tcp, 0, false},
		{"v6 packet too big", true, 2, 0, covered6, tcp, 0, false},
		{"v6 echo request", true, 128, 0, covered6, tcp, 0, false},
	}
	local4, local6 := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("2001:db8::1")
	router4, router6 := netip.MustParseAddr("192.0.2.254"), netip.MustParseAddr("2001:db8::fe")
	peers := peers("192.0.2.2/32", "198.51.100.0/24", "2001:db8::2/128", "2001:db8:1::/48")
	var unsupported error
	err := netns.Run(func() error {
		for _, a := range []netip.Prefix{netip.PrefixFrom(local4, 32), netip.PrefixFrom(local6, 128)} {
			if err := netns.AddAddr("lo", a); err != nil {
				return err
			}
		}
		seen := newSightings()
		for i := range 3 {
			q, err := nfqueue.Open(nfqueue.Config{Num: uint16(20 + i)})
			if err != nil {
				unsupported = err
				return nil
			}
			defer seen.drain(q)()
		}
		for _, network := range []string{"ip4:icmp", "ip6:ipv6-icmp"} {
			c, err := net.ListenIP(network, nil)
			if err != nil {
				return err
			}
			defer seen.receive(c)()
		}
		for _, queues := range []uint16{1, 3} {
			m, err := nfrules.Install(nfrules.Spec{Table: "shtest", Queue: 20, Queues: queues, Peers: peers})
			if err != nil {
				unsupported = err
				return nil
			}
			t.Logf("%d queues: rules by %s", queues, m)
			msgs := make([][]byte, len(probes))
			for i, p := range probes {
				src, dst := router4, local4
				if p.v6 {
					src, dst = router6, local6
				}
				msgs[i] = p.message(src, dst, uint16(40000+100*int(queues)+i))
				if err := sendRaw(icmpPacket(src, dst, msgs[i])); err != nil {
					return err
				}
			}
			// Each message ends in one of two places: a queue, or the
			// kernel's ICMP receive (the raw sockets).
			where, ok := seen.wait(msgs, 10*time.Second)
			for i, p := range probes {
				want := "kernel"
				if p.queue {
					want = "queue 20"
				}
				if !ok && where[i] == "" {
					t.Errorf("%d queues: %s (type %d code %d): seen nowhere, want %s", queues, p.name, p.typ, p.code, want)
				} else if where[i] != want {
					t.Errorf("%d queues: %s (type %d code %d): %s, want %s", queues, p.name, p.typ, p.code, where[i], want)
				}
			}
		}
		return nfrules.Remove("shtest")
	})
	if err != nil {
		t.Fatal(err)
	}
	if unsupported != nil {
		for _, e := range []error{syscall.ENOENT, syscall.EOPNOTSUPP, syscall.EPROTONOSUPPORT, syscall.EAFNOSUPPORT} {
			if errors.Is(unsupported, e) {
				t.Skipf("needs a kernel with nf_tables and a netfilter queue (nfnetlink_queue, nft_queue or xt NFQUEUE): %v", unsupported)
			}
		}
		t.Fatal(unsupported)
	}
}

// message is p's ICMP message (checksummed for src to dst); tag, the
// quoted source port or the echo identifier, makes it unique.
func (p probe) message(src, dst netip.Addr, tag uint16) []byte {
	var quoted []byte
	if p.typ == 8 || p.typ == 128 {
		quoted = binary.BigEndian.AppendUint16(nil, 1) // echo: tag is the identifier, then a sequence number
	} else {
		l4 := make([]byte, 8)
		binary.BigEndian.PutUint16(l4[0:], tag)
		binary.BigEndian.PutUint16(l4[2:], 179)
		var hdr []byte
		if p.v6 {
			hdr = make([]byte, 40)
			hdr[0], hdr[6], hdr[7] = 0x60, p.proto, 64
			binary.BigEndian.PutUint16(hdr[4:], 20)
			s, d := dst.As16(), p.quoted.As16() // the quoted packet is one the host sent
			copy(hdr[8:], s[:])
			copy(hdr[24:], d[:])
		} else {
			ihl := max(p.ihl, 5)
			hdr = make([]byte, 4*ihl)
			hdr[0], hdr[8], hdr[9] = 0x40|byte(ihl), 64, p.proto
			binary.BigEndian.PutUint16(hdr[2:], uint16(len(hdr)+20))
			for i := 20; i < len(hdr); i++ {
				hdr[i] = 1 // NOP options
			}
			s, d := dst.As4(), p.quoted.As4()
			copy(hdr[12:], s[:])
			copy(hdr[16:], d[:])
			binary.BigEndian.PutUint16(hdr[10:], checksum(hdr, 0))
		}
		quoted = append(hdr, l4...)
		tag = 0
	}
	msg := append([]byte{p.typ, p.code, 0, 0}, binary.BigEndian.AppendUint16(nil, tag)...)
	msg = append(append(msg, 0, 0), quoted...)
	var sum uint32
	if p.v6 {
		s, d := src.As16(), dst.As16()
		ph := append(append(s[:], d[:]...), binary.BigEndian.AppendUint32(nil, uint32(len(msg)))...)
		sum = sum16(append(ph, 0, 0, 0, syscall.IPPROTO_ICMPV6))
	}
	binary.BigEndian.PutUint16(msg[2:], checksum(msg, sum))
	return msg
}

// icmpPacket puts msg in an IPv4 or IPv6 header from src to dst.
func icmpPacket(src, dst netip.Addr, msg []byte) []byte {
	if src.Is4() {
		h := make([]byte, 20, 20+len(msg))
		h[0], h[8], h[9] = 0x45, 64, syscall.IPPROTO_ICMP
		binary.BigEndian.PutUint16(h[2:], uint16(20+len(msg)))
		s, d := src.As4(), dst.As4()
		copy(h[12:], s[:])
		copy(h[16:], d[:])
		binary.BigEndian.PutUint16(h[10:], checksum(h, 0))
		return append(h, msg...)
	}
	h := make([]byte, 40, 40+len(msg))
	h[0], h[6], h[7] = 0x60, syscall.IPPROTO_ICMPV6, 64
	binary.BigEndian.PutUint16(h[4:], uint16(len(msg)))
	s, d := src.As16(), dst.As16()
	copy(h[8:], s[:])
	copy(h[24:], d[:])
	return append(h, msg...)
}

func sum16(b []byte) uint32 {
	var s uint32
	for i := 0; i+1 < len(b); i += 2 {
		s += uint32(binary.BigEndian.Uint16(b[i:]))
	}
	if len(b)%2 == 1 {
		s += uint32(b[len(b)-1]) << 8
	}
	return s
}

// checksum is the Internet checksum (RFC 1071) of b, from the partial sum
// initial.
func checksum(b []byte, initial uint32) uint16 {
	s := initial + sum16(b)
	for s > 0xffff {
		s = s>>16 + s&0xffff
	}
	return ^uint16(s)
}

// sendRaw sends an IP packet, header included (IPPROTO_RAW), to its
// destination in the calling thread's namespace.
func sendRaw(pkt []byte) error {
	var sa syscall.Sockaddr
	fam := syscall.AF_INET
	if pkt[0]>>4 == 6 {
		fam, sa = syscall.AF_INET6, &syscall.SockaddrInet6{Addr: [16]byte(pkt[24:40])}
	} else {
		sa = &syscall.SockaddrInet4{Addr: [4]byte(pkt[16:20])}
	}
	fd, err := syscall.Socket(fam, syscall.SOCK_RAW|syscall.SOCK_CLOEXEC, syscall.IPPROTO_RAW)
	if err != nil {
		return err
	}
	defer syscall.Close(fd)
	if err := syscall.Sendto(fd, pkt, 0, sa); err != nil {
		return fmt.Errorf("raw send: %w", err)
	}
	return nil
}

// sightings records where ICMP messages turned up: "queue N" or "kernel".
type sightings struct {
	mu    sync.Mutex
	seen  []sighting
	moved chan struct{} // a message was seen
}

type sighting struct {
	where string
	msg   []byte
}

func newSightings() *sightings { return &sightings{moved: make(chan struct{}, 1)} }

func (s *sightings) add(where string, msg []byte) {
	s.mu.Lock()
	s.seen = append(s.seen, sighting{where, bytes.Clone(msg)})
	s.mu.Unlock()
	select {
	case s.moved <- struct{}{}:
	default:
	}
}

// drain reads q, recording each packet's ICMP message and dropping it,
// until the returned stop closes q.
func (s *sightings) drain(q *nfqueue.Queue) (stop func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		var p nfqueue.Packet
		for q.Read(&p) == nil {
			if b := p.Payload; len(b) > 0 {
				hl := 40
				if b[0]>>4 == 4 {
					hl = int(b[0]&0x0f) * 4
				}
				if hl <= len(b) {
					s.add(fmt.Sprintf("queue %d", q.Num()), b[hl:])
				}
			}
			if q.Verdict(p.ID, nfqueue.Drop, nil) != nil {
				return
			}
		}
	}()
	return func() { q.Close(); <-done }
}

// receive records the ICMP messages the kernel receives on c until the
// returned stop closes it.
func (s *sightings) receive(c *net.IPConn) (stop func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		b := make([]byte, 1500)
		for {
			n, _, err := c.ReadFrom(b) // an IPv4 header is stripped
			if err != nil {
				return
			}
			s.add("kernel", b[:n])
		}
	}()
	return func() { c.Close(); <-done }
}

// wait waits until each of msgs was seen once, and says where; ok is
// false if some were not seen within limit. A message seen twice is
// reported as both places.
func (s *sightings) wait(msgs [][]byte, limit time.Duration) (where []string, ok bool) {
	deadline := time.After(limit)
	for {
		where, ok = make([]string, len(msgs)), true
		s.mu.Lock()
		for i, m := range msgs {
			for _, x := range s.seen {
				if bytes.Equal(x.msg, m) {
					if where[i] != "" {
						where[i] += " and "
					}
					where[i] += x.where
				}
			}
			ok = ok && where[i] != ""
		}
		s.mu.Unlock()
		if ok {
			return where, true
		}
		select {
		case <-s.moved:
		case <-deadline:
			return where, false
		}
	}
}

// fragments splits an ICMPv6 message from src to dst into IPv6 fragments
// (identification id): the first carries the fragment header, then the
// extension headers pre (each 8 bytes, their next-header bytes set here)
// and the first cut bytes of msg, the second the rest at its offset.
// With cut 0 the first fragment's chain stops after pre, short of the
// ICMPv6 header.
func fragments(src, dst netip.Addr, id uint32, msg []byte, pre [][]byte, cut int) (first, second []byte) {
	var part []byte // the fragmentable part: pre, then msg
	for i, h := range pre {
		h = bytes.Clone(h)
		h[0] = syscall.IPPROTO_ICMPV6
		if i+1 < len(pre) {
			h[0] = 60
		}
		part = append(part, h...)
	}
	part = append(part, msg...)
	n := 8*len(pre) + cut
	frag := func(off int, more bool, data []byte) []byte {
		next := byte(syscall.IPPROTO_ICMPV6)
		if len(pre) > 0 {
			next = 60
		}
		fh := []byte{next, 0, 0, 0}
		v := uint16(off/8) << 3
		if more {
			v |= 1
		}
		fh = binary.BigEndian.AppendUint16(fh[:2], v)
		fh = binary.BigEndian.AppendUint32(fh, id)
		p := icmpPacket(src, dst, append(fh, data...))
		p[6] = syscall.IPPROTO_FRAGMENT
		return p
	}
	return frag(0, true, part[:n]), frag(n, false, part[n:])
}

// TestICMPv6FragmentsQueued (issue 38, finding 3): an ICMPv6 hard error in
// fragments passes the input hook in pieces and the kernel reassembles it
// past the hook, so the rules send its first fragment to the first queue
// however short it is — the 8-byte ICMPv6 header alone, or a chain of
// destination options that stops before it — and the layer drops it.
// Here the queue drops what it reads: the kernel never sees the message.
// An unfragmented echo request after them is not queued (it reaches the
// kernel's ICMPv6 socket), and shows the fragments' messages did not.
func TestICMPv6FragmentsQueued(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: network namespaces and netfilter rules")
	}
	local, router, covered := netip.MustParseAddr("2001:db8::1"), netip.MustParseAddr("2001:db8::fe"), netip.MustParseAddr("2001:db8::2")
	dstOpts := []byte{0, 0, 1, 4, 0, 0, 0, 0}
	type case_ struct {
		name   string
		msg    []byte
		pre    [][]byte
		cut    int
		first  []byte
		second []byte
	}
	cases := []*case_{
		{name: "port unreachable, 8 bytes in the first fragment",
			msg: probe{v6: true, typ: 1, code: 4, quoted: covered, proto: syscall.IPPROTO_TCP}.message(router, local, 40001), cut: 8},
		{name: "administratively prohibited, 8 bytes after destination options",
			msg: probe{v6: true, typ: 1, code: 1, quoted: covered, proto: syscall.IPPROTO_TCP}.message(router, local, 40002), pre: [][]byte{dstOpts}, cut: 8},
		{name: "port unreachable, the first fragment's chain stopping short",
			msg: probe{v6: true, typ: 1, code: 4, quoted: covered, proto: syscall.IPPROTO_TCP}.message(router, local, 40003), pre: [][]byte{dstOpts, dstOpts}, cut: -8},
		{name: "echo request, 8 bytes in the first fragment",
			msg: probe{v6: true, typ: 128, quoted: covered}.message(router, local, 40004), cut: 8},
	}
	var want [][]byte
	for i, c := range cases {
		c.first, c.second = fragments(router, local, uint32(0x5e00+i), c.msg, c.pre, c.cut)
		want = append(want, c.first[40:]) // what the queue reader records
	}
	control := probe{v6: true, typ: 128, quoted: covered}.message(router, local, 40099)
	var unsupported error
	err := netns.Run(func() error {
		if err := netns.AddAddr("lo", netip.PrefixFrom(local, 128)); err != nil {
			return err
		}
		seen := newSightings()
		q, err := nfqueue.Open(nfqueue.Config{Num: 20})
		if err != nil {
			unsupported = err
			return nil
		}
		defer seen.drain(q)()
		c, err := net.ListenIP("ip6:ipv6-icmp", nil)
		if err != nil {
			return err
		}
		defer seen.receive(c)()
		if _, err := nfrules.Install(nfrules.Spec{Table: "shfrag", Queue: 20, Peers: peers("2001:db8::2/128")}); err != nil {
			unsupported = err
			return nil
		}
		for _, c := range cases {
			for _, p := range [][]byte{c.first, c.second} {
				if err := sendRaw(p); err != nil {
					return err
				}
			}
		}
		where, _ := seen.wait(want, 10*time.Second)
		for i, c := range cases {
			if where[i] != "queue 20" {
				t.Errorf("%s: first fragment seen %q, want queue 20", c.name, where[i])
			}
		}
		if err := sendRaw(icmpPacket(router, local, control)); err != nil {
			return err
		}
		if where, ok := seen.wait([][]byte{control}, 10*time.Second); !ok || where[0] != "kernel" {
			t.Errorf("the control echo request: seen %q, want kernel", where[0])
		}
		for _, c := range cases {
			if where, _ := seen.wait([][]byte{c.msg}, 0); where[0] != "" {
				t.Errorf("%s: the reassembled message seen at %s, want nowhere", c.name, where[0])
			}
		}
		return nfrules.Remove("shfrag")
	})
	if err != nil {
		t.Fatal(err)
	}
	if unsupported != nil {
		for _, e := range []error{syscall.ENOENT, syscall.EOPNOTSUPP, syscall.EPROTONOSUPPORT, syscall.EAFNOSUPPORT} {
			if errors.Is(unsupported, e) {
				t.Skipf("needs a kernel with nf_tables and a netfilter queue (nfnetlink_queue, nft_queue or xt NFQUEUE): %v", unsupported)
			}
		}
		t.Fatal(unsupported)
	}
}
