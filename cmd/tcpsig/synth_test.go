package main

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/netip"
	"reflect"
	"slices"
	"testing"

	"github.com/tcpsig/tcpsig/ao"
	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/md5sig"
	"github.com/tcpsig/tcpsig/segment"
)

// Engine-generated conversations: two endpoints signing with package ao
// (or md5sig), every segment checked by the other end's Verify as it is
// made. They exercise what the kernel captures do not (SNE wraps with a
// handshake, rotation on loopback with clashing keys, one-sided keys
// files, link types) and are not a substitute for them.

// mktSpec is one MKT of the client; the server's copy swaps the IDs.
type mktSpec struct {
	alg          string
	key          []byte
	sndID, rcvID uint8
	maclen       int
	exclude      bool
}

// convoConfig describes a synthetic connection.
type convoConfig struct {
	client, server netip.AddrPort
	clientISN      uint32
	serverISN      uint32
	mkts           []mktSpec // TCP-AO, the first is current; none: TCP-MD5
	md5Key         []byte
}

// end is one endpoint of a synthetic connection.
type end struct {
	ap      netip.AddrPort
	seq     uint32 // next sequence number to send
	conn    ao.Conn
	md5     *md5sig.Keyring
	entries []map[string]any // its keys, in keys-file form
}

// convo is a synthetic connection and the IP packets it produced.
type convo struct {
	t    testing.TB
	cfg  convoConfig
	c, s *end
	pkts [][]byte
}

func host(a netip.Addr) netip.Prefix { return netip.PrefixFrom(a, a.BitLen()) }

func newConvo(t testing.TB, cfg convoConfig) *convo {
	t.Helper()
	cv := &convo{t: t, cfg: cfg,
		c: &end{ap: cfg.client, seq: cfg.clientISN},
		s: &end{ap: cfg.server, seq: cfg.serverISN}}
	if len(cfg.mkts) == 0 {
		for _, e := range []*end{cv.c, cv.s} {
			peer := cv.other(e).ap.Addr()
			e.md5 = md5sig.NewKeyring(nil)
			if _, err := e.md5.Add(keys.MD5{Peer: host(peer), Key: cfg.md5Key}); err != nil {
				t.Fatal(err)
			}
			e.entries = append(e.entries, map[string]any{"peer": host(peer).String(), "key": "hex:" + hex.EncodeToString(cfg.md5Key)})
		}
		return cv
	}
	for _, e := range []*end{cv.c, cv.s} {
		ring := ao.NewKeyring(nil)
		peer := cv.other(e).ap.Addr()
		for _, m := range cfg.mkts {
			snd, rcv := m.sndID, m.rcvID
			if e == cv.s {
				snd, rcv = rcv, snd
			}
			if _, err := ring.Add(keys.AO{Peer: host(peer), SendID: snd, RecvID: rcv, Algorithm: m.alg, Key: m.key,
				MACLen: m.maclen, ExcludeOptions: m.exclude}); err != nil {
				t.Fatal(err)
			}
			ent := map[string]any{"alg": m.alg, "key": "hex:" + hex.EncodeToString(m.key), "sndid": snd, "rcvid": rcv,
				"peer": host(peer).String()}
			if m.maclen != 0 {
				ent["maclen"] = m.maclen
			}
			if m.exclude {
				ent["exclude_options"] = true
			}
			e.entries = append(e.entries, ent)
		}
		o := cv.other(e)
		first := cfg.mkts[0]
		cur, next := first.sndID, first.rcvID
		if e == cv.s {
			cur, next = next, cur
		}
		if err := e.conn.Init(ring, ao.Endpoint{Local: e.ap, Remote: o.ap, LocalISN: e.seq, Established: true,
			RemoteISN: o.seq, CurrentSendID: cur, RNextRecvID: next}, ao.Policy{}); err != nil {
			t.Fatal(err)
		}
	}
	return cv
}

func (cv *convo) other(e *end) *end {
	if e == cv.c {
		return cv.s
	}
	return cv.c
}

// keys returns the keys file of both ends (or of the given ends).
func (cv *convo) keys(ends ...*end) []byte {
	if len(ends) == 0 {
		ends = []*end{cv.c, cv.s}
	}
	kind := "ao"
	if len(cv.cfg.mkts) == 0 {
		kind = "md5"
	}
	var all []map[string]any
	for _, e := range ends {
		for _, x := range e.entries {
			// Both ends on one address with mirrored IDs: one entry
			// serves both, and the file refuses an exact duplicate.
			if !slices.ContainsFunc(all, func(y map[string]any) bool { return reflect.DeepEqual(x, y) }) {
				all = append(all, x)
			}
		}
	}
	b, err := json.Marshal(map[string]any{kind: all})
	if err != nil {
		cv.t.Fatal(err)
	}
	return b
}

// send makes, signs and records a segment from e; the peer verifies it.
func (cv *convo) send(e *end, flags segment.Flags, payload []byte) []byte {
	cv.t.Helper()
	o := cv.other(e)
	var opts []byte
	if flags&segment.SYN != 0 {
		opts = append(opts, 2, 4, 0x05, 0xb4) // MSS 1460
	}
	opts = append(opts, segment.OptionKindNOP, segment.OptionKindNOP, 8, 10)
	opts = binary.BigEndian.AppendUint32(opts, 0x1000+uint32(len(cv.pkts)))
	opts = binary.BigEndian.AppendUint32(opts, 0x2000)
	if e.md5 != nil {
		opts = md5sig.AppendOption(opts)
	} else {
		cur := e.conn.Current()
		opts = ao.AppendOption(opts, cur.MACLen())
	}
	for len(opts)%4 != 0 {
		opts = append(opts, segment.OptionKindNOP)
	}
	tcp := make([]byte, 20+len(opts)+len(payload))
	binary.BigEndian.PutUint16(tcp[0:], e.ap.Port())
	binary.BigEndian.PutUint16(tcp[2:], o.ap.Port())
	binary.BigEndian.PutUint32(tcp[4:], e.seq)
	if flags&segment.ACK != 0 {
		binary.BigEndian.PutUint32(tcp[8:], o.seq)
	}
	tcp[12] = byte((20 + len(opts)) / 4 << 4)
	tcp[13] = byte(flags)
	binary.BigEndian.PutUint16(tcp[14:], 502)
	copy(tcp[20:], opts)
	copy(tcp[20+len(opts):], payload)
	seg, err := segment.FromTCP(e.ap.Addr(), o.ap.Addr(), tcp)
	if err != nil {
		cv.t.Fatal(err)
	}
	if e.md5 != nil {
		err = e.md5.Sign(&seg, 0)
		if err == nil {
			err = o.md5.Verify(&seg, 0)
		}
	} else if err = e.conn.Sign(&seg); err == nil {
		err = o.conn.Verify(&seg)
	}
	if err != nil {
		cv.t.Fatalf("synthetic segment %d [%v]: %v", len(cv.pkts)+1, flags, err)
	}
	e.seq += uint32(len(payload))
	if flags&(segment.SYN|segment.FIN) != 0 {
		e.seq++
	}
	pkt := ipPacket(e.ap.Addr(), o.ap.Addr(), tcp)
	cv.pkts = append(cv.pkts, pkt)
	return pkt
}

// plain records an unsigned segment from e (a stack that lost its keys).
func (cv *convo) plain(e *end, flags segment.Flags, payload []byte) {
	o := cv.other(e)
	tcp := make([]byte, 20+len(payload))
	binary.BigEndian.PutUint16(tcp[0:], e.ap.Port())
	binary.BigEndian.PutUint16(tcp[2:], o.ap.Port())
	binary.BigEndian.PutUint32(tcp[4:], e.seq)
	binary.BigEndian.PutUint32(tcp[8:], o.seq)
	tcp[12] = 5 << 4
	tcp[13] = byte(flags)
	copy(tcp[20:], payload)
	e.seq += uint32(len(payload))
	cv.pkts = append(cv.pkts, ipPacket(e.ap.Addr(), o.ap.Addr(), tcp))
}

// handshake, exchange and close: a typical session. rounds data
// exchanges; rotateAt > 0 makes the client switch to the second MKT
// before that round (the server follows through RNextKeyID).
func (cv *convo) session(rounds, rotateAt int) {
	cv.t.Helper()
	c, s := cv.c, cv.s
	cv.send(c, segment.SYN, nil)
	cv.send(s, segment.SYN|segment.ACK, nil)
	cv.send(c, segment.ACK, nil)
	for r := 0; r < rounds; r++ {
		if rotateAt > 0 && r == rotateAt {
			m := cv.cfg.mkts[1]
			if err := c.conn.SetCurrent(m.sndID); err != nil {
				cv.t.Fatal(err)
			}
			if err := c.conn.SetRNext(m.rcvID); err != nil {
				cv.t.Fatal(err)
			}
		}
		cv.send(c, segment.PSH|segment.ACK, payloadOf(r, 100+r*300))
		cv.send(s, segment.ACK, nil)
		cv.send(s, segment.PSH|segment.ACK, payloadOf(r+1000, 19+r))
		cv.send(c, segment.ACK, nil)
	}
	cv.send(c, segment.FIN|segment.ACK, nil)
	cv.send(s, segment.FIN|segment.ACK, nil)
	cv.send(c, segment.ACK, nil)
}

func payloadOf(seed, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(seed*7 + i*13)
	}
	return b
}

// ipPacket wraps a TCP segment in an IPv4 or IPv6 header, with correct
// checksums (the MACs do not cover them, Wireshark checks them).
func ipPacket(src, dst netip.Addr, tcp []byte) []byte {
	tcp[16], tcp[17] = 0, 0
	ph := segment.AppendPseudoHeader(nil, src, dst, len(tcp))
	binary.BigEndian.PutUint16(tcp[16:], checksum(append(ph, tcp...)))
	if src.Is4() {
		h := make([]byte, 20, 20+len(tcp))
		h[0], h[8], h[9] = 0x45, 64, 6
		binary.BigEndian.PutUint16(h[2:], uint16(20+len(tcp)))
		binary.BigEndian.PutUint16(h[6:], 0x4000) // DF
		s, d := src.As4(), dst.As4()
		copy(h[12:], s[:])
		copy(h[16:], d[:])
		binary.BigEndian.PutUint16(h[10:], checksum(h))
		return append(h, tcp...)
	}
	h := make([]byte, 40, 40+len(tcp))
	h[0], h[6], h[7] = 0x60, 6, 64
	binary.BigEndian.PutUint16(h[4:], uint16(len(tcp)))
	s, d := src.As16(), dst.As16()
	copy(h[8:], s[:])
	copy(h[24:], d[:])
	return append(h, tcp...)
}

func checksum(b []byte) uint16 {
	var sum uint32
	for i := 0; i+1 < len(b); i += 2 {
		sum += uint32(binary.BigEndian.Uint16(b[i:]))
	}
	if len(b)%2 == 1 {
		sum += uint32(b[len(b)-1]) << 8
	}
	for sum > 0xffff {
		sum = sum>>16 + sum&0xffff
	}
	return ^uint16(sum)
}

// The pcap and pcapng numbers the test captures are written with
// (libpcap's pcap-savefile(5), draft-ietf-opsawg-pcapng).
const (
	pcapMagicMicro = 0xa1b2c3d4
	pcapMagicNano  = 0xa1b23c4d
	pcapngSHB      = 0x0a0d0d0a
	pcapngBOM      = 0x1a2b3c4d
	pcapngIDB      = 1
	pcapngSPB      = 3
	pcapngEPB      = 6
)

// Link-layer framings of an IP packet, by LINKTYPE.
const (
	ltNull     = 0
	ltEthernet = 1
	ltRaw      = 101
	ltLoop     = 108
	ltSLL      = 113
	ltSLL2     = 276
)

func frameOf(lt uint32, ip []byte) []byte {
	v6 := ip[0]>>4 == 6
	etype := []byte{0x08, 0x00}
	if v6 {
		etype = []byte{0x86, 0xdd}
	}
	var hdr []byte
	switch lt {
	case ltEthernet:
		hdr = append(make([]byte, 12), etype...)
	case ltSLL:
		hdr = append([]byte{0, 4, 0, 1, 0, 6, 2, 0, 0, 0, 0, 1, 0, 0}, etype...)
	case ltSLL2:
		hdr = append(etype, 0, 0, 0, 0, 0, 1, 0, 1, 4, 6, 2, 0, 0, 0, 0, 1, 0, 0)
	case ltNull: // host byte order (little-endian here), AF_INET6 as on Linux
		hdr = []byte{2, 0, 0, 0}
		if v6 {
			hdr = []byte{10, 0, 0, 0}
		}
	case ltLoop: // network byte order, AF_INET6 as on the BSDs
		hdr = []byte{0, 0, 0, 2}
		if v6 {
			hdr = []byte{0, 0, 0, 24}
		}
	case ltRaw:
	default:
		panic(fmt.Sprint("frameOf: link type ", lt))
	}
	return append(hdr, ip...)
}

// pcapFile is a classic pcap (microsecond, little- or big-endian).
func pcapFile(lt uint32, bigEndian bool, frames [][]byte) []byte {
	var o binary.AppendByteOrder = binary.LittleEndian
	if bigEndian {
		o = binary.BigEndian
	}
	b := o.AppendUint32(nil, pcapMagicMicro)
	b = o.AppendUint16(b, 2)
	b = o.AppendUint16(b, 4)
	b = append(b, make([]byte, 8)...)
	b = o.AppendUint32(b, 262144)
	b = o.AppendUint32(b, lt)
	for i, f := range frames {
		b = o.AppendUint32(b, 1700000000+uint32(i))
		b = o.AppendUint32(b, 0)
		b = o.AppendUint32(b, uint32(len(f)))
		b = o.AppendUint32(b, uint32(len(f)))
		b = append(b, f...)
	}
	return b
}

// pcapngFile is a pcapng with one section and one interface, its frames in
// enhanced packet blocks, with a name-resolution block to skip in between.
func pcapngFile(lt uint32, frames [][]byte) []byte {
	return pcapngSection(binary.LittleEndian, []uint32{lt}, frames)
}

// pcapngSection is a pcapng section in byte order o with an interface per
// link type in lts, frames[i] on interface i%len(lts).
func pcapngSection(o binary.AppendByteOrder, lts []uint32, frames [][]byte) []byte {
	block := func(b []byte, typ uint32, body []byte) []byte {
		for len(body)%4 != 0 {
			body = append(body, 0)
		}
		n := uint32(12 + len(body))
		b = o.AppendUint32(b, typ)
		b = o.AppendUint32(b, n)
		b = append(b, body...)
		return o.AppendUint32(b, n)
	}
	shb := o.AppendUint32(nil, pcapngBOM)
	shb = o.AppendUint16(shb, 1)
	shb = o.AppendUint16(shb, 0)
	shb = o.AppendUint64(shb, ^uint64(0))
	b := block(nil, pcapngSHB, shb)
	for _, lt := range lts {
		idb := o.AppendUint16(nil, uint16(lt))
		idb = o.AppendUint16(idb, 0)
		idb = o.AppendUint32(idb, 262144)
		b = block(b, pcapngIDB, idb)
	}
	b = block(b, 4, []byte{0, 0, 0, 0}) // NRB: end of records only
	for i, f := range frames {
		epb := o.AppendUint32(nil, uint32(i%len(lts)))
		epb = o.AppendUint32(epb, 0)
		epb = o.AppendUint32(epb, uint32(i))
		epb = o.AppendUint32(epb, uint32(len(f)))
		epb = o.AppendUint32(epb, uint32(len(f)))
		b = block(b, pcapngEPB, append(epb, f...))
	}
	return b
}

// framed wraps every packet for a link type.
func framed(lt uint32, pkts [][]byte) [][]byte {
	out := make([][]byte, len(pkts))
	for i, p := range pkts {
		out[i] = frameOf(lt, p)
	}
	return out
}
