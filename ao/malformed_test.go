package ao

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net/netip"
	"testing"

	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/segment"
	"github.com/tcpsig/tcpsig/testvectors"
)

// TestParseOption is the option codec on malformed input: every length
// Linux refuses (≤ 4: no MAC; past the buffer) and a wrong kind.
func TestParseOption(t *testing.T) {
	for _, c := range []struct {
		name string
		opt  []byte
		ok   bool
		mac  []byte
	}{
		{"empty", nil, false, nil},
		{"kind only", []byte{29}, false, nil},
		{"wrong kind", []byte{19, 5, 1, 2, 3}, false, nil},
		{"length 0", []byte{29, 0, 1, 2, 3}, false, nil},
		{"length 1", []byte{29, 1, 1, 2, 3}, false, nil},
		{"length 2", []byte{29, 2, 1, 2, 3}, false, nil},
		{"length 4: no MAC", []byte{29, 4, 1, 2, 3}, false, nil},
		{"length past the buffer", []byte{29, 6, 1, 2, 3}, false, nil},
		{"length 255", append([]byte{29, 255, 1, 2}, make([]byte, 36)...), false, nil},
		{"1-byte MAC", []byte{29, 5, 1, 2, 0xaa}, true, []byte{0xaa}},
		{"1-byte MAC, NOPs after", []byte{29, 5, 1, 2, 0xaa, 1, 1, 1}, true, []byte{0xaa}},
	} {
		o, err := ParseOption(c.opt)
		if c.ok != (err == nil) {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if err != nil {
			if !errors.Is(err, ErrOption) {
				t.Errorf("%s: %v is not ErrOption", c.name, err)
			}
			continue
		}
		if o.KeyID != 1 || o.RNextKeyID != 2 || !bytes.Equal(o.MAC, c.mac) || cap(o.MAC) != len(o.MAC) {
			t.Errorf("%s: %+v", c.name, o)
		}
	}
	// AppendOption and OptionLen/OptionSpace agree with what ParseOption
	// reads back, for every MAC length Linux allows.
	for maclen := 1; maclen <= keys.MaxMACLen; maclen++ {
		b := testOption(nil, 7, 9, maclen)
		if len(b) != OptionSpace(maclen) || len(b)%4 != 0 || int(b[1]) != optionLen(maclen) {
			t.Fatalf("maclen %d: option %x", maclen, b)
		}
		o, err := ParseOption(b)
		if err != nil || o.KeyID != 7 || o.RNextKeyID != 9 || len(o.MAC) != maclen {
			t.Fatalf("maclen %d: %+v %v", maclen, o, err)
		}
	}
}

// rawTCP builds a TCP header with the given option bytes (padded with
// NOPs to a word) and payload.
func rawTCP(opts []byte, payload string) []byte {
	for len(opts)%4 != 0 {
		opts = append(opts, 1)
	}
	h := testHeader(cli4, srv4, 1000, 2000, segment.ACK, 0, 0, 0, opts)
	return append(h, payload...)
}

// md5Option is a TCP-MD5 option with a made-up digest.
var md5Option = append([]byte{19, 18}, bytes.Repeat([]byte{0x55}, 16)...)

// TestMalformed is the AO part of issue 7's malformed-input table: each
// input maps to its typed error, from the parser or from the connection.
func TestMalformed(t *testing.T) {
	key := testKey(1)
	cring, sring := NewKeyring(nil), NewKeyring(nil)
	mustAdd(t, cring, keys.AO{Peer: host(srv4.Addr()), SendID: 1, RecvID: 2, Algorithm: "hmac(sha1)", Key: key})
	sm := mustAdd(t, sring, keys.AO{Peer: host(cli4.Addr()), SendID: 2, RecvID: 1, Algorithm: "hmac(sha1)", Key: key})
	p := newPair(t, cring, sring, cli4, srv4, 999, 1999, 0, 1000, 0, 2000, 1, 2, 2, 1)
	ao := func(keyID uint8, maclen int) []byte { return testOption(nil, keyID, 2, maclen) }

	t.Run("parse", func(t *testing.T) {
		for _, c := range []struct {
			name string
			opts []byte
			want error
		}{
			{"AO length 4 (no MAC)", []byte{29, 4, 1, 2, 1, 1, 1, 1}, segment.ErrAuthOption},
			{"AO length 3", []byte{29, 3, 1, 1, 1, 1, 1, 1}, segment.ErrAuthOption},
			{"AO length 2", []byte{29, 2, 1, 1, 1, 1, 1, 1}, segment.ErrAuthOption},
			{"AO length 1", []byte{29, 1, 1, 1, 1, 1, 1, 1}, segment.ErrOptionLength},
			{"AO length 0", []byte{29, 0, 1, 1, 1, 1, 1, 1}, segment.ErrOptionLength},
			{"AO length past the header", []byte{29, 40, 1, 2, 0, 0, 0, 0}, segment.ErrOptionLength},
			{"MD5 then AO", append(append([]byte{}, md5Option...), ao(1, 12)...), segment.ErrBothAuth},
			{"AO then MD5", append(ao(1, 12), md5Option...), segment.ErrBothAuth},
			{"two AO options", append(ao(1, 12), ao(1, 12)...), segment.ErrDuplicateAuth},
		} {
			_, err := segment.FromTCP(cli4.Addr(), srv4.Addr(), rawTCP(c.opts, "x"))
			if !errors.Is(err, c.want) {
				t.Errorf("%s: %v, want %v", c.name, err, c.want)
			}
		}
	})

	t.Run("truncated packets", func(t *testing.T) {
		set, err := testvectors.RFC9235()
		if err != nil {
			t.Fatal(err)
		}
		for i := range set.Vectors {
			v := &set.Vectors[i]
			ipHdr := 20
			if v.IPVersion == 6 {
				ipHdr = 40
			}
			for n := 0; n < len(v.Packet); n++ {
				// Cut on the wire: the IP length field still says more.
				if _, err := segment.ParsePacket(bytes.Clone(v.Packet[:n])); !errors.Is(err, segment.ErrShortPacket) {
					t.Errorf("%s cut to %d bytes: %v, want ErrShortPacket", v.Title, n, err)
				}
				if n < ipHdr {
					continue
				}
				// Cut with the IP length field made to agree: the TCP
				// header or the payload is short.
				pkt := bytes.Clone(v.Packet[:n])
				if v.IPVersion == 4 {
					binary.BigEndian.PutUint16(pkt[2:], uint16(n))
				} else {
					binary.BigEndian.PutUint16(pkt[4:], uint16(n-ipHdr))
				}
				tcpLen := n - ipHdr
				doff := int(v.Packet[ipHdr+12]>>4) * 4
				seg, err := segment.ParsePacket(pkt)
				switch {
				case tcpLen < 20:
					if !errors.Is(err, segment.ErrShortTCP) {
						t.Errorf("%s with %d TCP bytes: %v, want ErrShortTCP", v.Title, tcpLen, err)
					}
				case tcpLen < doff:
					if !errors.Is(err, segment.ErrDataOffset) {
						t.Errorf("%s with %d TCP bytes: %v, want ErrDataOffset", v.Title, tcpLen, err)
					}
				default: // payload cut: the MAC does not verify
					if err != nil {
						t.Fatalf("%s with %d TCP bytes: %v", v.Title, tcpLen, err)
					}
					_, rc := rfc9235Side(t, &set, v, &seg, false)
					var verr error
					if seg.Header().Flags()&(segment.SYN|segment.ACK) == segment.SYN {
						_, verr = NewListener(rc.ring, Policy{}, 0).Accept(&seg, new(Conn))
					} else {
						verr = rc.Verify(&seg)
					}
					if !errors.Is(verr, ErrBadMAC) {
						t.Errorf("%s with its payload cut to %d bytes: %v, want ErrBadMAC", v.Title, len(seg.Payload()), verr)
					}
				}
			}
		}
	})

	t.Run("verify", func(t *testing.T) {
		good := func() *segment.Segment {
			s := testSeg(t, cli4, srv4, 1000, 2000, segment.ACK, 12, []byte("payload"))
			if err := p.c.Sign(s); err != nil {
				t.Fatal(err)
			}
			return s
		}
		byHand := func() *segment.Segment {
			// A Segment made by hand, not by the parser: its fields
			// cannot be set from outside, so it holds nothing.
			h := rawTCP(append(append([]byte{}, md5Option...), ao(1, 12)...), "")
			_ = h
			return &segment.Segment{} // its fields are the parser's to set
		}
		changed := func() *segment.Segment {
			// A parsed segment whose AO option was overwritten after the
			// parse: its noted offset no longer holds the option.
			s := good()
			s.Header()[s.Auth().AO] = segment.OptionKindNOP
			return s
		}
		mk := func(opts []byte) func() *segment.Segment {
			return func() *segment.Segment {
				s, err := segment.FromTCP(cli4.Addr(), srv4.Addr(), rawTCP(opts, "payload"))
				if err != nil {
					t.Fatal(err)
				}
				return &s
			}
		}
		for _, c := range []struct {
			name      string
			seg       func() *segment.Segment
			want      error
			also      error
			bad, kbad uint64 // connection and key pkt_bad increments
		}{
			{"genuine", good, nil, nil, 0, 0},
			{"MAC length 4 (key has 12)", mk(ao(1, 4)), ErrMACLength, ErrBadMAC, 1, 1},
			{"MAC length 16 (key has 12)", mk(ao(1, 16)), ErrMACLength, ErrBadMAC, 1, 1},
			{"MAC length 1", mk(ao(1, 1)), ErrMACLength, ErrBadMAC, 1, 1},
			{"zero MAC", mk(ao(1, 12)), ErrBadMAC, nil, 1, 1},
			{"MD5-signed segment", mk(md5Option), ErrUnexpected, nil, 0, 0},
			{"made by hand", byHand, segment.ErrUnparsed, nil, 0, 0},
			{"changed after the parse", changed, segment.ErrUnparsed, nil, 0, 0},
			// Linux's walk stops with fewer than 5 option bytes left, so
			// an AO option cut by the end of the header is no option: the
			// segment is unsigned.
			{"AO option in the last 4 bytes", mk([]byte{1, 1, 1, 1, 29, 5, 1, 2}), ErrAORequired, nil, 0, 0},
			{"no options", mk(nil), ErrAORequired, nil, 0, 0},
		} {
			cb, kb := p.s.Counters().Bad, func() uint64 { _, b := sm.Counters(); return b }()
			err := p.s.Verify(c.seg())
			if !errors.Is(err, c.want) || (c.want == nil && err != nil) || (c.also != nil && !errors.Is(err, c.also)) {
				t.Errorf("%s: %v, want %v", c.name, err, c.want)
			}
			_, kb2 := sm.Counters()
			if p.s.Counters().Bad-cb != c.bad || kb2-kb != c.kbad {
				t.Errorf("%s: bad counters +%d/+%d, want +%d/+%d", c.name, p.s.Counters().Bad-cb, kb2-kb, c.bad, c.kbad)
			}
		}
	})

	t.Run("listener", func(t *testing.T) {
		l := NewListener(sring, Policy{}, 0)
		md5syn, err := segment.FromTCP(cli4.Addr(), srv4.Addr(), testHeader(cli4, srv4, 5, 0, segment.SYN, 0, 0, 0, md5Option))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Accept(&md5syn, new(Conn)); !errors.Is(err, ErrUnexpected) {
			t.Errorf("MD5 SYN: %v", err)
		}
		short := testSeg(t, cli4, srv4, 5, 0, segment.SYN, 4, nil)
		short.Header()[short.Auth().AO+2] = 1
		if ok, err := l.Accept(short, new(Conn)); !ok || !errors.Is(err, ErrMACLength) || !errors.Is(err, ErrBadMAC) {
			t.Errorf("SYN with a 4-byte MAC: %v %v", ok, err)
		}
	})

	t.Run("sign", func(t *testing.T) {
		plain := testSeg(t, cli4, srv4, 1000, 2000, segment.ACK, 0, []byte("x"))
		if err := p.c.Sign(plain); !errors.Is(err, ErrNoOption) {
			t.Errorf("Sign without an AO option: %v", err)
		}
		short := testSeg(t, cli4, srv4, 1000, 2000, segment.ACK, 8, []byte("x"))
		if err := p.c.Sign(short); !errors.Is(err, ErrNoRoom) {
			t.Errorf("Sign with an 8-byte MAC slot for a 12-byte key: %v", err)
		}
		long := testSeg(t, cli4, srv4, 1000, 2000, segment.ACK, 16, []byte("x"))
		if err := p.c.Sign(long); err != nil {
			t.Errorf("Sign with a 16-byte MAC slot for a 12-byte key: %v", err)
		} else if o := long.Header()[long.Auth().AO:]; o[1] != 16 || long.Auth().AOLen != 16 || string(o[16:20]) != "\x01\x01\x01\x01" {
			t.Errorf("16-byte slot not shortened to the 12-byte MAC and NOPs: % x", o[:20])
		}
		// A client before the SYN-ACK knows no peer ISN: only SYNs.
		var c Conn
		defer c.Close()
		if err := c.Init(cring, Endpoint{Local: cli4, Remote: srv4, LocalISN: 5}, Policy{}); err != nil {
			t.Fatal(err)
		}
		if err := c.Sign(testSeg(t, cli4, srv4, 6, 1, segment.ACK, 12, nil)); !errors.Is(err, ErrNoISN) {
			t.Errorf("Sign of data before the SYN-ACK: %v", err)
		}
		early := testSeg(t, srv4, cli4, 6, 1, segment.ACK, 12, nil)
		early.Header()[early.Auth().AO+2] = 2 // the client's RecvID
		if err := c.Verify(early); !errors.Is(err, ErrNoISN) {
			t.Errorf("Verify of data before the SYN-ACK: %v", err)
		}
		if _, err := NewListener(sring, Policy{}, 0).Accept(testSeg(t, cli4, srv4, 1, 0, segment.ACK, 12, nil), new(Conn)); !errors.Is(err, ErrNotSYN) {
			t.Errorf("Accept of an ACK: %v", err)
		}
	})

	t.Run("TrafficKey without a key", func(t *testing.T) {
		rst := testSeg(t, srv4, netip.MustParseAddrPort("198.51.100.1:1"), 0, 2, segment.RST, 12, nil)
		var k TrafficKey
		if err := k.Derive(sring.LookupSend(netip.MustParseAddr("198.51.100.1"), 1, 0), ISNs{Src: 1, Dst: 2}, rst); !errors.Is(err, ErrKeyNotFound) {
			t.Errorf("Derive for an uncovered peer's (nil) MKT: %v", err)
		}
		if err := k.Sign(rst, 0, 0); !errors.Is(err, ErrNotInitialized) {
			t.Errorf("Sign with no key: %v, want ErrNotInitialized", err)
		}
	})
}
