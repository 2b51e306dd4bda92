//go:build linux

package shim

import (
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"github.com/tcpsig/tcpsig/ao"
	"github.com/tcpsig/tcpsig/keyfile"
	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/md5sig"
	"github.com/tcpsig/tcpsig/packetauth"
	"github.com/tcpsig/tcpsig/segment"
)

// The reload tests drive the shim's layer directly, as its queue readers
// do, with packets from a peer layer (the other end) or forged by an
// on-path host: no netfilter needed. The shim's host is 203.0.113.1.
var shimAddr = netip.MustParseAddr("203.0.113.1")

// keysFile writes body as a 0600 keys file and returns a function that
// rewrites it and loads it as a reload does.
func keysFile(t *testing.T, body string) (string, func(string) *keySet) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "keys.json")
	write := func(body string) *keySet {
		t.Helper()
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		k, err := loadKeys(path)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	write(body)
	return path, write
}

// packet builds a segment from peer:179 to the shim's host:40000.
func packet(t *testing.T, peer netip.Addr, flags segment.Flags, seq, ack uint32, payload string) []byte {
	t.Helper()
	pkt, err := segment.AppendPacket(nil, segment.IP{Src: peer, Dst: shimAddr},
		segment.Fields{SrcPort: 179, DstPort: 40000, Seq: seq, Ack: ack, Flags: flags, Window: 65535}, []byte(payload))
	if err != nil {
		t.Fatal(err)
	}
	return pkt
}

// TestReloadAddsKind (finding 2): a shim started with TCP-MD5 keys only,
// reloaded with a TCP-AO MKT for another peer, enforces TCP-AO for that
// peer at once: its unsigned SYN and data are dropped, not passed.
func TestReloadAddsKind(t *testing.T) {
	path, write := keysFile(t, `{"md5": [{"peer": "192.0.2.1/32", "key": "text:md5-secret"}]}`)
	s, err := New(Config{Keys: path})
	if err != nil {
		t.Fatal(err)
	}
	k := write(`{"md5": [{"peer": "192.0.2.1/32", "key": "text:md5-secret"}],
		"ao": [{"alg": "hmac(sha1)", "key": "text:ao-secret", "sndid": 1, "rcvid": 1, "peer": "198.51.100.7/32"}]}`)
	if err := s.apply(k); err != nil {
		t.Fatal(err)
	}
	peer := netip.MustParseAddr("198.51.100.7")
	for _, f := range []segment.Flags{segment.SYN, segment.ACK | segment.PSH} {
		if _, err := s.layer.Inbound(nil, packet(t, peer, f, 1000, 1, "injected")); !errors.Is(err, packetauth.ErrUnsigned) && !errors.Is(err, packetauth.ErrNoConn) {
			t.Errorf("unsigned %v from the peer the reload covered with TCP-AO: %v, want it dropped", f, err)
		}
	}
	if c := s.layer.Counters(); c.Passed != 0 || c.Dropped.Total() != 2 {
		t.Errorf("layer counters %+v: want nothing passed, 2 dropped", c)
	}
}

// TestReloadRemovesMD5Key (finding 3): a TCP-MD5 session whose key the
// reload removes, or replaces by TCP-AO — one the shim saw open, or one
// it met mid-stream after a restart — is revoked at the reload: its peer
// stays queued, its unsigned segments (data and RST at the next sequence
// number) are dropped and the host sends nothing unsigned on it.
func TestReloadRemovesMD5Key(t *testing.T) {
	for _, c := range []struct {
		name, after string
		handshake   bool
	}{
		{"removed", `{"md5": [{"peer": "192.0.2.9/32", "key": "text:other"}]}`, true},
		{"removed, session met mid-stream", `{"md5": [{"peer": "192.0.2.9/32", "key": "text:other"}]}`, false},
		{"replaced by TCP-AO", `{"ao": [{"alg": "hmac(sha1)", "key": "text:ao-secret", "sndid": 1, "rcvid": 1, "peer": "192.0.2.1/32"}]}`, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			path, write := keysFile(t, `{"md5": [{"peer": "192.0.2.1/32", "key": "text:md5-secret"}]}`)
			s, err := New(Config{Keys: path})
			if err != nil {
				t.Fatal(err)
			}
			peer := netip.MustParseAddr("192.0.2.1")
			// The peer's kernel signs with the same key.
			ring := md5sig.NewKeyring(nil)
			if _, err := ring.Add(keys.MD5{Peer: netip.PrefixFrom(shimAddr, 32), Key: []byte("md5-secret")}); err != nil {
				t.Fatal(err)
			}
			peerLayer, err := packetauth.New(packetauth.Config{MD5: ring})
			if err != nil {
				t.Fatal(err)
			}
			signed := func(f segment.Flags, seq uint32) []byte {
				out, err := peerLayer.Outbound(nil, packet(t, peer, f, seq, 1, ""))
				if err != nil {
					t.Fatal(err)
				}
				return out
			}
			if c.handshake {
				if _, err := s.layer.Inbound(nil, signed(segment.SYN, 1000)); err != nil {
					t.Fatalf("the peer's signed SYN: %v", err)
				}
			}
			// Without the handshake: a session a restarted shim met
			// mid-stream, tracked from its first verified segment.
			if _, err := s.layer.Inbound(nil, signed(segment.ACK, 1001)); err != nil {
				t.Fatalf("the peer's signed ACK: %v", err)
			}
			if err := s.update(write(c.after)); err != nil {
				t.Fatal(err)
			}
			// Revoked at the reload, before any packet: the rules keep
			// queueing the peer, or its packets would never reach the
			// layer to be dropped.
			if c.name != "replaced by TCP-AO" && !slicesContainsHost(s.rulePeers(), peer) {
				t.Errorf("rule peers %v right after the reload: the revoked session's peer %v must stay queued", s.rulePeers(), peer)
			}
			for _, f := range []segment.Flags{segment.ACK | segment.PSH, segment.RST} {
				if _, err := s.layer.Inbound(nil, packet(t, peer, f, 1001, 1, "injected")); !errors.Is(err, packetauth.ErrRevoked) {
					t.Errorf("unsigned %v on the session after the reload: %v, want ErrRevoked", f, err)
				}
			}
			out, err := segment.AppendPacket(nil, segment.IP{Src: shimAddr, Dst: peer},
				segment.Fields{SrcPort: 40000, DstPort: 179, Seq: 1, Ack: 1001, Flags: segment.ACK, Window: 100}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.layer.Outbound(nil, out); !errors.Is(err, packetauth.ErrRevoked) {
				t.Errorf("the host's own segment after the reload: %v, want ErrRevoked (never sent unsigned)", err)
			}
		})
	}
}

// TestReloadReplacementPeer (finding 4): deleting a /24 MKT shared by
// sessions with .5 and .7, where the new file has a key for .5 alone,
// moves .5's session to it and revokes .7's — .7's session never signs
// or verifies with .5's key, and a segment from .7 MACed with it (.5
// forging .7) is dropped.
func TestReloadReplacementPeer(t *testing.T) {
	path, write := keysFile(t, `{"ao": [{"alg": "hmac(sha1)", "key": "text:shared", "sndid": 1, "rcvid": 1, "peer": "192.0.2.0/24"}]}`)
	s, err := New(Config{Keys: path})
	if err != nil {
		t.Fatal(err)
	}
	p5, p7 := netip.MustParseAddr("192.0.2.5"), netip.MustParseAddr("192.0.2.7")
	local := netip.AddrPortFrom(shimAddr, 40000)
	for _, p := range []netip.Addr{p5, p7} {
		ep := ao.Endpoint{Local: local, Remote: netip.AddrPortFrom(p, 179), LocalISN: 1, RemoteISN: 1000,
			SendSeq: 2, RecvSeq: 1001, CurrentSendID: 1, RNextRecvID: 1}
		if err := s.layer.Seed(ep); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.apply(write(`{"ao": [{"alg": "hmac(sha1)", "key": "text:only-five", "sndid": 2, "rcvid": 2, "peer": "192.0.2.5/32"}]}`)); err != nil {
		t.Fatal(err)
	}
	for c := range s.layer.Conns {
		switch c.Remote.Addr() {
		case p5:
			if c.Revoked || c.CurrentKeyID != 2 || c.RNextKeyID != 2 {
				t.Errorf(".5's session %+v: want it moved to .5's key 2/2", c)
			}
		case p7:
			if !c.Revoked {
				t.Errorf(".7's session %+v: want it revoked (no key of the file covers .7)", c)
			}
		}
	}
	if s.aoRing.Len() != 1 {
		t.Errorf("%d MKTs, want 1: the shared one must be gone", s.aoRing.Len())
	}
	// .5 forges a segment from .7 with its own key.
	ring := ao.NewKeyring(nil)
	if _, err := ring.Add(keys.AO{Peer: netip.PrefixFrom(shimAddr, 32), SendID: 2, RecvID: 2, Algorithm: "hmac(sha1)", Key: []byte("only-five")}); err != nil {
		t.Fatal(err)
	}
	var forger ao.Conn
	if err := forger.Init(ring, ao.Endpoint{Local: netip.AddrPortFrom(p7, 179), Remote: local, LocalISN: 1000, RemoteISN: 1,
		Established: true, SendSeq: 1001, RecvSeq: 2, CurrentSendID: 2, RNextRecvID: 2}, ao.Policy{}); err != nil {
		t.Fatal(err)
	}
	defer forger.Close()
	var opt [20]byte
	pkt, err := segment.AppendPacket(nil, segment.IP{Src: p7, Dst: shimAddr},
		segment.Fields{SrcPort: 179, DstPort: 40000, Seq: 1001, Ack: 2, Flags: segment.ACK | segment.PSH, Window: 65535,
			Options: [][]byte{ao.AppendOption(opt[:0], 12)}},
		[]byte("injected"))
	if err != nil {
		t.Fatal(err)
	}
	seg, err := segment.ParsePacket(pkt)
	if err != nil {
		t.Fatal(err)
	}
	if err := forger.Sign(&seg); err != nil {
		t.Fatal(err)
	}
	if _, err := s.layer.Inbound(nil, pkt); err == nil {
		t.Error("a segment from .7 MACed with .5's key was accepted")
	}
}

// TestReloadRefusedWhole: a reload whose file a keyring would refuse (two
// overlapping peers with one SendID) or that others may read changes
// nothing.
func TestReloadRefusedWhole(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "keys.json")
	if err := os.WriteFile(path, []byte(`{"ao": [{"alg": "hmac(sha1)", "key": "text:a", "sndid": 1, "rcvid": 1, "peer": "192.0.2.0/24"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Keys: path})
	if err != nil {
		t.Fatal(err)
	}
	before := s.aoRing.Find(netip.MustParsePrefix("192.0.2.0/24"), 1, 1)
	if err := os.WriteFile(path, []byte(`{"ao": [
		{"alg": "hmac(sha1)", "key": "text:a", "sndid": 1, "rcvid": 1, "peer": "192.0.2.0/24"},
		{"alg": "hmac(sha1)", "key": "text:b", "sndid": 2, "rcvid": 2, "peer": "198.51.100.0/24"},
		{"alg": "hmac(sha1)", "key": "text:c", "sndid": 1, "rcvid": 3, "peer": "192.0.2.5/32"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := loadKeys(path); !errors.Is(err, keyfile.ErrDuplicate) {
		t.Errorf("overlapping peers with one SendID: %v, want ErrDuplicate", err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := loadKeys(path); !errors.Is(err, keyfile.ErrMode) {
		t.Errorf("a keys file others may read: %v, want keyfile.ErrMode", err)
	}
	if _, err := New(Config{Keys: path}); !errors.Is(err, keyfile.ErrMode) {
		t.Errorf("New with a keys file others may read: %v, want keyfile.ErrMode", err)
	}
	if s.aoRing.Len() != 1 || s.aoRing.Find(netip.MustParsePrefix("192.0.2.0/24"), 1, 1) != before {
		t.Error("a refused file changed the keys")
	}
}

// TestNoKeyCopies: once applied, the shim keeps no key bytes of its own.
func TestNoKeyCopies(t *testing.T) {
	path, _ := keysFile(t, `{"ao": [{"alg": "hmac(sha1)", "key": "text:ao-secret-bytes", "sndid": 1, "rcvid": 1, "peer": "192.0.2.0/24"}],
		"md5": [{"peer": "198.51.100.1/32", "key": "text:md5-secret-bytes"}]}`)
	s, err := New(Config{Keys: path})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range s.keys.AO {
		if string(c.Key) == "ao-secret-bytes" || len(c.Key) > 0 && c.Key[0] != 0 {
			t.Errorf("the shim still holds an MKT's key bytes")
		}
	}
	for _, c := range s.keys.MD5 {
		if len(c.Key) > 0 && c.Key[0] != 0 {
			t.Errorf("the shim still holds a TCP-MD5 key's bytes")
		}
	}
}

func slicesContainsHost(ps []netip.Prefix, a netip.Addr) bool {
	for _, p := range ps {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
