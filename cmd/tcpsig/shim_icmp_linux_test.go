//go:build linux

package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestShimICMP: RFC 5925 §7.8 under the shim. A TCP-AO session runs from a
// plain socket in B to one in A, each behind its shim; B's socket has
// IP_RECVERR, so its kernel reports on it any ICMP error it takes for the
// session. An on-path attacker in A's namespace sends B hard errors (ICMPv4
// protocol and port unreachable, ICMPv6 administratively prohibited and port
// unreachable) from a router's address, quoting B's segment at its next
// sequence number: B's shim drops them (its icmp count rises), B's kernel
// never counts them, the socket holds no error and data move after. Then a
// host (address) unreachable, not a §7.8 error, quoting the same segment
// reaches B's kernel and sets the socket's error: the forgeries were good
// enough to act on.
func TestShimICMP(t *testing.T) {
	needQueue(t)
	nsA, nsB := newPair(t)
	dirA, dirB := shortDir(t), shortDir(t)
	mkts := func(peers ...netip.Addr) string {
		var es []string
		for _, p := range peers {
			es = append(es, fmt.Sprintf(`{"alg": "hmac(sha256)", "key": "hex:%x", "sndid": 7, "rcvid": 7, "peer": "%v"}`,
				bytes.Repeat([]byte{0x7e}, 20), netip.PrefixFrom(p, p.BitLen())))
		}
		return `{"ao": [` + strings.Join(es, ", ") + `]}`
	}
	keysA := writeKeys(t, dirA, "keys.json", mkts(addrB4, addrB6))
	keysB := writeKeys(t, dirB, "keys.json", mkts(addrA4, addrA6))
	startShim(t, nsA, dirA, "-keys", keysA, "-queue", "48")
	_, sockB := startShim(t, nsB, dirB, "-keys", keysB, "-queue", "48")
	for _, c := range []struct {
		name       string
		a, b       netip.Addr
		router     netip.Addr
		hard       []uint8 // §7.8 codes: the shim drops them
		soft       uint8   // not §7.8: B's kernel takes it
		softErrno  syscall.Errno
		unreachCtr string
	}{
		{"IPv4", addrA4, addrB4, netip.MustParseAddr("192.0.2.254"), []uint8{3, 2}, 1, syscall.EHOSTUNREACH, "Icmp InDestUnreachs"},
		{"IPv6", addrA6, addrB6, netip.MustParseAddr("2001:db8::fe"), []uint8{4, 1}, 3, syscall.EHOSTUNREACH, "Icmp6InDestUnreachs"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := dialSession(t, nsA, nsB, c.a, c.b)
			s.move(t, 64<<10)
			st, err := shimStatusOf(sockB)
			if err != nil {
				t.Fatal(err)
			}
			isn, ok := uint32(0), false
			for _, cs := range st.Conns {
				if cs.Local == s.local && cs.Remote == s.remote {
					isn, ok = cs.LocalISN, true
				}
			}
			if !ok {
				t.Fatalf("B's shim does not track %v-%v: %+v", s.local, s.remote, st.Conns)
			}
			icmp0, unreach0 := st.Counters.Dropped.ICMP, destUnreachs(t, nsB, c.unreachCtr)
			// All B sent is acknowledged or in flight: snd_una <= seq <=
			// snd_nxt, the window tcp_v4_err and tcp_v6_err act in.
			seq := isn + 1 + uint32(s.sent)
			quoted := quotedSegment(s.local, s.remote, seq)
			for _, code := range c.hard {
				sendRaw(t, nsA, icmpError(c.router, c.b, code, quoted))
			}
			want := icmp0 + uint64(len(c.hard))
			var icmp, unreach uint64
			// Each forgery ends in one of two places, both counted: B's
			// shim (dropped) or B's kernel.
			if !waitFor(20*time.Second, func() bool {
				st, err := shimStatusOf(sockB)
				if err != nil {
					return false
				}
				icmp, unreach = st.Counters.Dropped.ICMP, destUnreachs(t, nsB, c.unreachCtr)
				return icmp-icmp0+unreach-unreach0 >= uint64(len(c.hard))
			}) {
				t.Fatalf("the %d hard errors reached neither B's shim (icmp %d -> %d) nor B's kernel (%s %d -> %d)",
					len(c.hard), icmp0, icmp, c.unreachCtr, unreach0, unreach)
			}
			if icmp != want || unreach != unreach0 {
				t.Errorf("hard errors (codes %v): B's shim icmp %d -> %d, want %d; B's kernel %s %d -> %d, want no change",
					c.hard, icmp0, icmp, want, c.unreachCtr, unreach0, unreach)
			}
			if e := s.soErr(t); e != 0 {
				t.Errorf("B's socket error after the hard errors: %v, want none", e)
			}
			s.move(t, 64<<10)

			// The control: a host unreachable reaches B's kernel, which
			// takes it for the session (only the forgeries' code differs).
			seq = isn + 1 + uint32(s.sent)
			sendRaw(t, nsA, icmpError(c.router, c.b, c.soft, quotedSegment(s.local, s.remote, seq)))
			if !waitFor(20*time.Second, func() bool { return destUnreachs(t, nsB, c.unreachCtr) > unreach0 }) {
				t.Fatalf("code %d did not reach B's kernel (%s stays %d)", c.soft, c.unreachCtr, unreach0)
			}
			if n := destUnreachs(t, nsB, c.unreachCtr); n != unreach0+1 {
				t.Errorf("B's kernel %s %d -> %d, want one more (the control only)", c.unreachCtr, unreach0, n)
			}
			var e syscall.Errno
			// The kernel counts the message before it hands it to TCP.
			if !waitFor(10*time.Second, func() bool { e = s.soErr(t); return e != 0 }) || e != c.softErrno {
				t.Errorf("B's socket error after code %d: %v, want %v", c.soft, e, c.softErrno)
			}
			st, err = shimStatusOf(sockB)
			if err != nil {
				t.Fatal(err)
			}
			if st.Counters.Dropped.ICMP != want {
				t.Errorf("B's shim icmp %d after the control, want %d", st.Counters.Dropped.ICMP, want)
			}
			if d := st.Counters.Dropped; d.Total() != d.ICMP {
				t.Errorf("B's shim dropped more than ICMP: %+v", d)
			}
		})
	}
}

// TestShimICMPEvasions (issue 38, finding 3): the §7.8 hard errors dressed
// so that the kernel still acts on them but a layer stricter than the
// kernel, or a rule that reads a fixed offset, would let them through: a
// quoted IPv4 header whose version nibble is not 4 (port unreachable, and
// fragmentation needed with an MTU of 600); a quoted IPv6 chain of
// destination options then hop-by-hop, or of 17 extension headers; an
// ICMPv6 error in two
// fragments, the first carrying only the 8-byte ICMPv6 header, or a chain
// of destination options that stops before it. Each is sent from a
// router's address to B, quoting B's segment at its next sequence number,
// for the TCP-AO session B's shim tracks. Each ends in B's shim (its icmp
// count rises by one) and never in B's kernel (Icmp InDestUnreachs or
// Icmp6InDestUnreachs stay), the socket holds no error, its path MTU does
// not drop, and data move after. TestShimICMP's control shows such
// forgeries are good enough for the kernel to act on.
func TestShimICMPEvasions(t *testing.T) {
	needQueue(t)
	nsA, nsB := newPair(t)
	dirA, dirB := shortDir(t), shortDir(t)
	mkts := func(peers ...netip.Addr) string {
		var es []string
		for _, p := range peers {
			es = append(es, fmt.Sprintf(`{"alg": "hmac(sha256)", "key": "hex:%x", "sndid": 7, "rcvid": 7, "peer": "%v"}`,
				bytes.Repeat([]byte{0x7e}, 20), netip.PrefixFrom(p, p.BitLen())))
		}
		return `{"ao": [` + strings.Join(es, ", ") + `]}`
	}
	startShim(t, nsA, dirA, "-keys", writeKeys(t, dirA, "keys.json", mkts(addrB4, addrB6)), "-queue", "49")
	_, sockB := startShim(t, nsB, dirB, "-keys", writeKeys(t, dirB, "keys.json", mkts(addrA4, addrA6)), "-queue", "49")
	r4, r6 := netip.MustParseAddr("192.0.2.254"), netip.MustParseAddr("2001:db8::fe")
	seventeen := slices.Repeat([]byte{60}, 17)
	// Each variant makes its packets from B's next sequence number.
	type variant struct {
		name string
		pkts func(local, remote netip.AddrPort, seq uint32) [][]byte
	}
	one := func(p []byte) [][]byte { return [][]byte{p} }
	version := func(q []byte, nibble byte) []byte { q[0] = nibble<<4 | q[0]&0x0f; return q }
	for _, c := range []struct {
		name       string
		a, b       netip.Addr
		unreachCtr string
		variants   []variant
	}{
		{"IPv4", addrA4, addrB4, "Icmp InDestUnreachs", []variant{
			{"quoting version 0, port unreachable", func(l, r netip.AddrPort, seq uint32) [][]byte {
				return one(icmpError(r4, l.Addr(), 3, version(quotedSegment(l, r, seq), 0)))
			}},
			{"quoting version 6, fragmentation needed (MTU 600)", func(l, r netip.AddrPort, seq uint32) [][]byte {
				return one(withMTU(icmpError(r4, l.Addr(), 4, version(quotedSegment(l, r, seq), 6)), 600))
			}},
		}},
		{"IPv6", addrA6, addrB6, "Icmp6InDestUnreachs", []variant{
			{"quoting destination options then hop-by-hop", func(l, r netip.AddrPort, seq uint32) [][]byte {
				return one(icmpError(r6, l.Addr(), 4, extHeaders(quotedSegment(l, r, seq), 60, 0)))
			}},
			{"quoting 17 extension headers", func(l, r netip.AddrPort, seq uint32) [][]byte {
				return one(icmpError(r6, l.Addr(), 1, extHeaders(quotedSegment(l, r, seq), seventeen...)))
			}},
			{"in fragments, 8 bytes in the first", func(l, r netip.AddrPort, seq uint32) [][]byte {
				return fragmented(icmpError(r6, l.Addr(), 4, quotedSegment(l, r, seq)), 0x7e01, nil, 8)
			}},
			{"in fragments, the first's chain stopping short", func(l, r netip.AddrPort, seq uint32) [][]byte {
				return fragmented(icmpError(r6, l.Addr(), 1, quotedSegment(l, r, seq)), 0x7e02, []byte{60, 60}, -8)
			}},
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := dialSession(t, nsA, nsB, c.a, c.b)
			s.move(t, 64<<10)
			isn := trackedISN(t, sockB, s)
			mtu := s.pathMTU(t)
			for _, v := range c.variants {
				st, err := shimStatusOf(sockB)
				if err != nil {
					t.Fatal(err)
				}
				icmp0, unreach0 := st.Counters.Dropped.ICMP, destUnreachs(t, nsB, c.unreachCtr)
				// snd_una <= seq <= snd_nxt: the window the kernel acts in.
				for _, p := range v.pkts(s.local, s.remote, isn+1+uint32(s.sent)) {
					sendRaw(t, nsA, p)
				}
				var icmp, unreach uint64
				// The forgery ends in one of two places, both counted: B's
				// shim (dropped) or B's kernel.
				if !waitFor(20*time.Second, func() bool {
					st, err := shimStatusOf(sockB)
					if err != nil {
						return false
					}
					icmp, unreach = st.Counters.Dropped.ICMP, destUnreachs(t, nsB, c.unreachCtr)
					return icmp != icmp0 || unreach != unreach0
				}) {
					t.Fatalf("%s: reached neither B's shim (icmp %d) nor B's kernel (%s %d)", v.name, icmp0, c.unreachCtr, unreach0)
				}
				if icmp != icmp0+1 || unreach != unreach0 {
					t.Errorf("%s: B's shim icmp %d -> %d, want one more; B's kernel %s %d -> %d, want no change",
						v.name, icmp0, icmp, c.unreachCtr, unreach0, unreach)
				}
				if e := s.soErr(t); e != 0 {
					t.Errorf("%s: B's socket error %v, want none", v.name, e)
				}
				if m := s.pathMTU(t); m != mtu {
					t.Errorf("%s: B's path MTU %d -> %d, want no change", v.name, mtu, m)
				}
				s.move(t, 16<<10)
			}
			st, err := shimStatusOf(sockB)
			if err != nil {
				t.Fatal(err)
			}
			if d := st.Counters.Dropped; d.Total() != d.ICMP {
				t.Errorf("B's shim dropped more than ICMP: %+v", d)
			}
		})
	}
}

// trackedISN returns B's ISN for s as B's shim tracks it.
func trackedISN(t *testing.T, sockB string, s *icmpSession) uint32 {
	t.Helper()
	st, err := shimStatusOf(sockB)
	if err != nil {
		t.Fatal(err)
	}
	for _, cs := range st.Conns {
		if cs.Local == s.local && cs.Remote == s.remote {
			return cs.LocalISN
		}
	}
	t.Fatalf("B's shim does not track %v-%v: %+v", s.local, s.remote, st.Conns)
	return 0
}

// pathMTU is B's socket's path MTU (IP_MTU or IPV6_MTU).
func (s *icmpSession) pathMTU(t *testing.T) int {
	t.Helper()
	rc, err := s.b.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	level, opt := syscall.IPPROTO_IP, syscall.IP_MTU
	if s.local.Addr().Is6() {
		level, opt = syscall.IPPROTO_IPV6, syscall.IPV6_MTU
	}
	var v int
	var serr error
	if err := rc.Control(func(fd uintptr) { v, serr = syscall.GetsockoptInt(int(fd), level, opt) }); err != nil {
		t.Fatal(err)
	}
	if serr != nil {
		t.Fatal(serr)
	}
	return v
}

// withMTU sets the next-hop MTU of pkt, an IPv4 fragmentation needed
// message, and its checksum.
func withMTU(pkt []byte, mtu uint16) []byte {
	msg := pkt[20:]
	binary.BigEndian.PutUint16(msg[6:], mtu)
	binary.BigEndian.PutUint16(msg[2:], 0)
	binary.BigEndian.PutUint16(msg[2:], checksum(msg))
	return pkt
}

// extHeaders puts IPv6 extension headers of the kinds given (8 bytes
// each: PadN options) between pkt's IPv6 header and what followed it.
// The upper-layer checksum does not cover them.
func extHeaders(pkt []byte, kinds ...byte) []byte {
	out := slices.Clone(pkt[:40])
	for i := range kinds {
		next := pkt[6]
		if i+1 < len(kinds) {
			next = kinds[i+1]
		}
		out = append(out, next, 0, 1, 4, 0, 0, 0, 0)
	}
	out = append(out, pkt[40:]...)
	out[6] = kinds[0]
	binary.BigEndian.PutUint16(out[4:], uint16(len(out)-40))
	return out
}

// fragmented splits pkt, an IPv6 packet without extension headers, in two
// fragments (identification id) whose fragmentable part is destination
// options headers of the kinds pre (8 bytes each) then pkt's payload: the
// first carries pre and the first cut bytes of the payload (cut may be
// negative: the first's chain stops short), the second the rest.
func fragmented(pkt []byte, id uint32, pre []byte, cut int) [][]byte {
	part := pkt
	if len(pre) > 0 {
		part = extHeaders(pkt, pre...)
	}
	next, body := part[6], part[40:]
	n := 8*len(pre) + cut
	frag := func(off int, more bool, data []byte) []byte {
		v := uint16(off/8) << 3
		if more {
			v |= 1
		}
		fh := binary.BigEndian.AppendUint16([]byte{next, 0}, v)
		fh = binary.BigEndian.AppendUint32(fh, id)
		out := slices.Concat(pkt[:40], fh, data)
		out[6] = syscall.IPPROTO_FRAGMENT
		binary.BigEndian.PutUint16(out[4:], uint16(len(out)-40))
		return out
	}
	return [][]byte{frag(0, true, body[:n]), frag(n, false, body[n:])}
}

// icmpSession is a TCP connection from B (IP_RECVERR or IPV6_RECVERR set)
// to A.
type icmpSession struct {
	a, b          *net.TCPConn
	local, remote netip.AddrPort // B's end, A's end
	sent          int
}

func dialSession(t *testing.T, nsA, nsB *ns, a, b netip.Addr) *icmpSession {
	t.Helper()
	var ln *net.TCPListener
	if err := nsA.Do(func() (err error) {
		ln, err = net.ListenTCP("tcp", net.TCPAddrFromAddrPort(netip.AddrPortFrom(a, 0)))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	s := &icmpSession{}
	d := net.Dialer{Timeout: 10 * time.Second, LocalAddr: net.TCPAddrFromAddrPort(netip.AddrPortFrom(b, 0)),
		Control: func(_, _ string, rc syscall.RawConn) error {
			var serr error
			err := rc.Control(func(fd uintptr) {
				if b.Is4() {
					serr = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_IP, syscall.IP_RECVERR, 1)
				} else {
					serr = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_IPV6, syscall.IPV6_RECVERR, 1)
				}
			})
			if err != nil {
				return err
			}
			return serr
		}}
	if err := nsB.Do(func() error {
		c, err := d.Dial("tcp", ln.Addr().String())
		if err != nil {
			return err
		}
		s.b = c.(*net.TCPConn)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.b.Close() })
	_ = ln.SetDeadline(time.Now().Add(10 * time.Second))
	c, err := ln.AcceptTCP()
	if err != nil {
		t.Fatal(err)
	}
	s.a = c
	t.Cleanup(func() { s.a.Close() })
	s.local = unmapped(s.b.LocalAddr().(*net.TCPAddr).AddrPort())
	s.remote = unmapped(s.b.RemoteAddr().(*net.TCPAddr).AddrPort())
	return s
}

func unmapped(ap netip.AddrPort) netip.AddrPort {
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}

// move sends n bytes from B and waits until A has read them.
func (s *icmpSession) move(t *testing.T, n int) {
	t.Helper()
	data := make([]byte, n)
	for i := range data {
		data[i] = byte(s.sent + i*13)
	}
	errc := make(chan error, 1)
	go func() {
		_ = s.b.SetWriteDeadline(time.Now().Add(30 * time.Second))
		_, err := s.b.Write(data)
		errc <- err
	}()
	_ = s.a.SetReadDeadline(time.Now().Add(30 * time.Second))
	got := make([]byte, n)
	_, rerr := io.ReadFull(s.a, got)
	if err := <-errc; err != nil {
		t.Fatalf("B wrote after %d bytes: %v", s.sent, err)
	}
	if rerr != nil || !bytes.Equal(got, data) {
		t.Fatalf("A read after %d bytes: %v (intact: %v)", s.sent, rerr, bytes.Equal(got, data))
	}
	s.sent += n
}

// soErr reads (and so clears) B's socket's pending error (SO_ERROR).
func (s *icmpSession) soErr(t *testing.T) syscall.Errno {
	t.Helper()
	rc, err := s.b.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var v int
	var serr error
	if err := rc.Control(func(fd uintptr) { v, serr = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_ERROR) }); err != nil {
		t.Fatal(err)
	}
	if serr != nil {
		t.Fatal(serr)
	}
	return syscall.Errno(v)
}

// destUnreachs reads one ICMP counter of n's namespace: "Icmp
// InDestUnreachs" from /proc/thread-self/net/snmp, or "Icmp6InDestUnreachs"
// from snmp6.
func destUnreachs(t *testing.T, n *ns, name string) uint64 {
	t.Helper()
	var v uint64
	err := n.Do(func() error {
		if section, field, ok := strings.Cut(name, " "); ok {
			b, err := os.ReadFile("/proc/thread-self/net/snmp")
			if err != nil {
				return err
			}
			var names []string
			for _, line := range strings.Split(string(b), "\n") {
				f := strings.Fields(line)
				if len(f) == 0 || f[0] != section+":" {
					continue
				}
				if names == nil {
					names = f[1:]
					continue
				}
				for i, nm := range names {
					if nm == field && i+1 < len(f) {
						v, err = strconv.ParseUint(f[i+1], 10, 64)
						return err
					}
				}
			}
			return fmt.Errorf("no %s in /proc/net/snmp", name)
		}
		f, err := os.Open("/proc/thread-self/net/snmp6")
		if err != nil {
			return err
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if fs := strings.Fields(sc.Text()); len(fs) == 2 && fs[0] == name {
				v, err = strconv.ParseUint(fs[1], 10, 64)
				return err
			}
		}
		return fmt.Errorf("no %s in /proc/net/snmp6", name)
	})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// quotedSegment is what an ICMP error quotes of B's segment to A: its IP
// header and TCP header (ACK, at seq).
func quotedSegment(local, remote netip.AddrPort, seq uint32) []byte {
	tcp := make([]byte, 20)
	binary.BigEndian.PutUint16(tcp[0:], local.Port())
	binary.BigEndian.PutUint16(tcp[2:], remote.Port())
	binary.BigEndian.PutUint32(tcp[4:], seq)
	tcp[12], tcp[13] = 5<<4, 0x10
	binary.BigEndian.PutUint16(tcp[14:], 64240)
	return ipPacket(local.Addr(), remote.Addr(), tcp)
}

// icmpError is an ICMPv4 destination unreachable (type 3) or ICMPv6 one
// (type 1) with code, from src to dst, quoting quoted.
func icmpError(src, dst netip.Addr, code uint8, quoted []byte) []byte {
	typ, proto := uint8(3), uint8(syscall.IPPROTO_ICMP)
	if dst.Is6() {
		typ, proto = 1, syscall.IPPROTO_ICMPV6
	}
	msg := append([]byte{typ, code, 0, 0, 0, 0, 0, 0}, quoted...)
	if dst.Is6() {
		s, d := src.As16(), dst.As16()
		pseudo := append(append(s[:], d[:]...), binary.BigEndian.AppendUint32(nil, uint32(len(msg)))...)
		pseudo = append(pseudo, 0, 0, 0, proto)
		binary.BigEndian.PutUint16(msg[2:], checksum(append(pseudo, msg...)))
	} else {
		binary.BigEndian.PutUint16(msg[2:], checksum(msg))
	}
	return icmpPacket(src, dst, proto, msg)
}

// icmpPacket is an IPv4 or IPv6 header from src to dst carrying payload.
func icmpPacket(src, dst netip.Addr, proto uint8, payload []byte) []byte {
	if src.Is4() {
		h := make([]byte, 20, 20+len(payload))
		h[0], h[8], h[9] = 0x45, 64, proto
		binary.BigEndian.PutUint16(h[2:], uint16(20+len(payload)))
		s, d := src.As4(), dst.As4()
		copy(h[12:], s[:])
		copy(h[16:], d[:])
		binary.BigEndian.PutUint16(h[10:], checksum(h))
		return append(h, payload...)
	}
	h := make([]byte, 40, 40+len(payload))
	h[0], h[6], h[7] = 0x60, proto, 64
	binary.BigEndian.PutUint16(h[4:], uint16(len(payload)))
	s, d := src.As16(), dst.As16()
	copy(h[8:], s[:])
	copy(h[24:], d[:])
	return append(h, payload...)
}

// sendRaw sends an IP packet, header included, from n's namespace through
// a raw socket (IPPROTO_RAW: the header is the caller's).
func sendRaw(t *testing.T, n *ns, pkt []byte) {
	t.Helper()
	err := n.Do(func() error {
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
		return syscall.Sendto(fd, pkt, 0, sa)
	})
	if err != nil {
		t.Fatalf("raw send: %v", err)
	}
}
