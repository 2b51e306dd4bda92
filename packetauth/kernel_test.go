package packetauth

import (
	"bytes"
	"encoding/json"
	"net/netip"
	"os"
	"slices"
	"testing"

	"github.com/tcpsig/tcpsig/ao"
	"github.com/tcpsig/tcpsig/harness/capture"
	"github.com/tcpsig/tcpsig/keyfile"
	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/md5sig"
	"github.com/tcpsig/tcpsig/segment"
	md5vectors "github.com/tcpsig/tcpsig/testvectors/md5"
)

// aoCaptures is what these tests read of testvectors/linux/manifest.json.
type aoCaptures struct {
	Captures []struct {
		Name, File string
		Features   []string
		Keys       json.RawMessage   // a keys file (package keyfile)
		ISN        map[string]uint32 `json:"isn"`
		SNE        map[string]uint32 `json:"sne"`
	}
}

// wirePacket is one captured packet: its IP bytes and parsed segment.
type wirePacket struct {
	ip       []byte
	seg      segment.Segment
	src, dst netip.AddrPort
}

func readCapture(t *testing.T, path string) []wirePacket {
	t.Helper()
	lt, pkts, err := capture.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []wirePacket
	for i, p := range pkts {
		ip := slices.Clone(lt.IP(p.Data))
		// Captured on lo, the TCP checksum is partial (CHECKSUM_PARTIAL);
		// the wire would carry the whole one, which Inbound keeps right.
		if err := segment.SetTCPChecksum(ip); err != nil {
			t.Fatalf("%s packet %d: %v", path, i, err)
		}
		s, err := segment.ParsePacket(ip)
		if err != nil {
			t.Fatalf("%s packet %d: %v", path, i, err)
		}
		h := s.Header()
		out = append(out, wirePacket{ip: ip, seg: s,
			src: netip.AddrPortFrom(s.Src(), h.SrcPort()), dst: netip.AddrPortFrom(s.Dst(), h.DstPort())})
	}
	return out
}

// withoutAuth returns p as the sender's stack handed it over before the
// kernel's TCP-AO/MD5 code added its option: the option and its NOP
// padding (first among the options, as Linux's full sockets lay it out)
// removed, data offset and IP lengths reduced. ok is false if the option is
// not first.
func withoutAuth(t *testing.T, p wirePacket) (out []byte, ok bool) {
	t.Helper()
	a := p.seg.Auth()
	var space int
	switch {
	case a.AO == segment.TCPMinimumSize:
		space = ao.OptionSpace(a.AOLen - 4) // kind, length, KeyID, RNextKeyID
	case a.MD5 == segment.TCPMinimumSize+2:
		space = md5sig.OptionSpace
	default:
		return nil, false
	}
	off, end := segment.TCPOffset(p.ip, &p.seg)
	out = slices.Concat(p.ip[:off+segment.TCPMinimumSize], p.ip[off+segment.TCPMinimumSize+space:end])
	segment.TCP(out[off:]).SetDataOffset(p.seg.Header().DataOffset() - space)
	if err := segment.Lengths(out); err != nil {
		t.Fatal(err)
	}
	return out, true
}

// sameButChecksum reports whether two packets are equal but for their TCP
// checksum, which the captures leave unset (CHECKSUM_PARTIAL on lo).
func sameButChecksum(t *testing.T, got, want []byte) bool {
	t.Helper()
	s, err := segment.ParsePacket(want)
	if err != nil {
		t.Fatal(err)
	}
	off, _ := segment.TCPOffset(want, &s)
	if len(got) != len(want) {
		return false
	}
	g, w := slices.Clone(got), slices.Clone(want)
	segment.TCP(g[off:]).SetChecksum(0)
	segment.TCP(w[off:]).SetChecksum(0)
	return bytes.Equal(g, w)
}

// checkDelivered checks what Inbound handed the stack for wire packet p:
// no authentication option left, the checksum right, and every byte
// but the option's, the MSS's and the checksum's as on the wire.
func checkDelivered(t *testing.T, name string, i int, p wirePacket, got []byte, overhead int) {
	t.Helper()
	s, err := segment.ParsePacket(got)
	if err != nil {
		t.Fatalf("%s packet %d: delivered packet does not parse: %v", name, i, err)
	}
	if s.Auth().AO > 0 || s.Auth().MD5 > 0 {
		t.Fatalf("%s packet %d: option still there: %+v", name, i, s.Auth())
	}
	off, end := segment.TCPOffset(got, &s)
	tcp := segment.TCP(got[off:end])
	if segment.TCPChecksum(s.Src(), s.Dst(), tcp) != tcp.Checksum() {
		t.Fatalf("%s packet %d: delivered with a wrong TCP checksum", name, i)
	}
	_, wend := segment.TCPOffset(p.ip, &p.seg)
	want := slices.Clone(p.ip[:wend])
	wt := segment.TCP(want[off:])
	a := p.seg.Auth()
	if a.AO > 0 {
		copy(wt[a.AO:a.AO+a.AOLen], bytes.Repeat([]byte{segment.OptionKindNOP}, a.AOLen))
	} else {
		copy(wt[a.MD5:a.MD5+segment.MD5OptionLen], bytes.Repeat([]byte{segment.OptionKindNOP}, segment.MD5OptionLen))
	}
	if wt.Flags().Has(segment.SYN) {
		if !clampMSS(wt[segment.TCPMinimumSize:wt.DataOffset()], overhead) {
			t.Fatalf("%s packet %d: SYN without MSS", name, i)
		}
	}
	if !sameButChecksum(t, got, want) {
		t.Fatalf("%s packet %d: delivered\n%x\nwant\n%x", name, i, got, want)
	}
}

// TestLinuxAOReplay replays every Linux 6.12 TCP-AO capture through two
// layers, one per endpoint, keyed as the kernel's sockets were: each
// packet goes through its receiver's Inbound (it must verify) and, with
// the kernel's option taken out, through its sender's Outbound, which must
// put the kernel's bytes back exactly: option, KeyIDs and MAC (the TCP
// checksum aside, which the captures leave unset). Connections are learnt
// from the handshakes, or seeded (captures restored with TCP_REPAIR below
// 2^32, whose SNEs go 0 → 1 and 3 → 4). Key rotations the kernel sockets
// were told to make (TCP_AO_INFO set_current / set_rnext) are made through
// Layer.Conn; those the peer's RNextKeyID makes must happen by themselves.
func TestLinuxAOReplay(t *testing.T) {
	var man aoCaptures
	b, err := os.ReadFile("../testvectors/linux/manifest.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &man); err != nil {
		t.Fatal(err)
	}
	var total, exact, skipped, told, followed, seeded int
	for _, c := range man.Captures {
		pkts := readCapture(t, "../testvectors/linux/"+c.File)
		first := pkts[0]
		client, server := first.src, first.dst
		if f := first.seg.Header().Flags(); f.Has(segment.SYN) && f.Has(segment.ACK) {
			client, server = server, client
		}
		layers := map[netip.AddrPort]*Layer{}
		for _, ep := range []netip.AddrPort{client, server} {
			ring := ao.NewKeyring(nil)
			kf, err := keyfile.Parse(c.Keys)
			if err != nil {
				t.Fatalf("%s: %v", c.Name, err)
			}
			keys := kf.AO
			n := len(keys) / 2
			mine := func(i int) bool {
				if client.Addr() == server.Addr() {
					return (i < n) == (ep == client) // the client's MKTs are listed first
				}
				return !keys[i].Config.Peer.Contains(ep.Addr())
			}
			// Newest first, as Linux picks a connection's default key: add
			// them in reverse so that the first listed (the SYN's) is newest.
			for i := len(keys) - 1; i >= 0; i-- {
				if !mine(i) {
					continue
				}
				if _, err := ring.Add(keys[i].Config); err != nil {
					t.Fatalf("%s: %v", c.Name, err)
				}
			}
			l, err := New(Config{AO: ring})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			layers[ep] = l
		}
		if len(c.ISN) > 0 { // restored pair: no handshake on the wire
			for _, ep := range []netip.AddrPort{client, server} {
				peer := client
				if ep == client {
					peer = server
				}
				st := ao.Endpoint{Local: ep, Remote: peer, LocalISN: c.ISN[ep.String()], RemoteISN: c.ISN[peer.String()],
					SendSNE: c.SNE[ep.String()], RecvSNE: c.SNE[peer.String()]}
				for _, p := range pkts { // the first segment each way: basis and keys
					if p.src == ep && st.SendSeq == 0 {
						st.SendSeq = p.seg.Header().Seq()
						st.CurrentSendID, st.RNextRecvID = p.seg.Header()[p.seg.Auth().AO+2], p.seg.Header()[p.seg.Auth().AO+3]
					}
					if p.src == peer && st.RecvSeq == 0 {
						st.RecvSeq = p.seg.Header().Seq()
					}
				}
				if err := layers[ep].Seed(st); err != nil {
					t.Fatalf("%s: Seed: %v", c.Name, err)
				}
				seeded++
			}
		}
		lastKeyID := map[netip.AddrPort]uint8{}
		for i, p := range pkts {
			total++
			snd, rcv := layers[p.src], layers[p.dst]
			h := p.seg.Header()
			a := p.seg.Auth().AO
			if a <= 0 {
				t.Fatalf("%s packet %d: unsigned", c.Name, i)
			}
			keyID, rnext := h[a+2], h[a+3]
			if conn, ok := snd.Conn(p.src, p.dst); ok {
				if conn.Current().SendID() != keyID {
					if err := conn.SetCurrent(keyID); err != nil {
						t.Fatalf("%s packet %d: SetCurrent(%d): %v", c.Name, i, keyID, err)
					}
					told++
				} else if last, ok := lastKeyID[p.src]; ok && last != keyID {
					followed++ // the peer's RNextKeyID moved it
				}
				if conn.RNext().RecvID() != rnext {
					if err := conn.SetRNext(rnext); err != nil {
						t.Fatalf("%s packet %d: SetRNext(%d): %v", c.Name, i, rnext, err)
					}
					told++
				}
			}
			lastKeyID[p.src] = keyID
			in, ok := withoutAuth(t, p)
			var out []byte
			if ok {
				out, err = snd.Outbound(nil, in)
			}
			switch {
			case !ok:
				skipped++ // a TIME-WAIT ACK: Linux puts AO after TS there
			case err != nil:
				t.Fatalf("%s packet %d (%v): Outbound: %v", c.Name, i, h.Flags(), err)
			case !sameButChecksum(t, out, p.ip):
				t.Fatalf("%s packet %d (%v): Outbound gave\n%x\nthe kernel sent\n%x", c.Name, i, h.Flags(), out, p.ip)
			default:
				exact++
			}
			got, err := rcv.Inbound(nil, p.ip)
			if err != nil {
				t.Fatalf("%s packet %d (%v): Inbound: %v", c.Name, i, h.Flags(), err)
			}
			checkDelivered(t, c.Name, i, p, got, rcv.Overhead())
		}
		for ep, l := range layers {
			cs := l.Counters()
			if cs.Dropped.Total() != 0 || cs.Passed != 0 {
				t.Fatalf("%s at %v: %+v", c.Name, ep, cs)
			}
		}
	}
	if total < 2000 || exact < total-10 || followed == 0 {
		t.Fatalf("%d packets, %d reproduced", total, exact)
	}
	t.Logf("%d captures, %d kernel packets verified by Inbound; %d reproduced byte for byte by Outbound, %d TIME-WAIT replies (AO after TS) verified only; %d connections seeded; %d key changes made through Conn, %d RNext-driven ones followed", len(man.Captures), total, exact, skipped, seeded, told, followed)
}

// TestHostMD5Replay does the same with the host kernel's TCP-MD5 captures
// (testvectors/md5): one layer per endpoint address, keyed as the
// kernel's sockets were (longest prefix wins).
func TestHostMD5Replay(t *testing.T) {
	man, err := md5vectors.Load()
	if err != nil {
		t.Fatal(err)
	}
	var total int
	for _, c := range man.Captures {
		pkts := readCapture(t, "../testvectors/md5/"+c.File)
		layers := map[netip.Addr]*Layer{}
		for _, p := range pkts {
			for _, a := range []netip.Addr{p.src.Addr(), p.dst.Addr()} {
				if layers[a] != nil {
					continue
				}
				ring := md5sig.NewKeyring(nil)
				for _, k := range c.Keys.MD5 {
					pfx, _ := k.Prefix()
					key, _ := k.Bytes()
					if _, err := ring.Add(keys.MD5{Peer: pfx, Key: key}); err != nil {
						t.Fatal(err)
					}
				}
				l, err := New(Config{MD5: ring})
				if err != nil {
					t.Fatal(err)
				}
				defer l.Close()
				layers[a] = l
			}
		}
		for i, p := range pkts {
			total++
			in, ok := withoutAuth(t, p)
			if !ok {
				t.Fatalf("%s packet %d: MD5 option not first", c.Name, i)
			}
			out, err := layers[p.src.Addr()].Outbound(nil, in)
			if err != nil {
				t.Fatalf("%s packet %d: Outbound: %v", c.Name, i, err)
			}
			if !sameButChecksum(t, out, p.ip) {
				t.Fatalf("%s packet %d: Outbound gave\n%x\nthe kernel sent\n%x", c.Name, i, out, p.ip)
			}
			got, err := layers[p.dst.Addr()].Inbound(nil, p.ip)
			if err != nil {
				t.Fatalf("%s packet %d: Inbound: %v", c.Name, i, err)
			}
			checkDelivered(t, c.Name, i, p, got, 20)
		}
	}
	if total < 100 {
		t.Fatalf("only %d packets", total)
	}
	t.Logf("%d captures, %d kernel packets: every one verified by Inbound and reproduced by Outbound", len(man.Captures), total)
}
