package ao

import (
	"bytes"
	"errors"
	"testing"

	"github.com/tcpsig/tcpsig/segment"
	"github.com/tcpsig/tcpsig/testvectors"
)

// TestDraftVectors signs and verifies the 64 segments of the
// draft-ietf-tcpm-tcp-ao-algs-07 vectors (RFC 9235's packets re-signed
// with HMAC-SHA256-128 and KMAC256-128, expected values from OpenSSL):
// through a Conn (a SYN the receiver verifies through a Listener), through
// the connection-less calls and through a TrafficKey, the signed packet
// byte-exact; then a flipped byte or SNE fails.
func TestDraftVectors(t *testing.T) {
	set, err := testvectors.DraftAlgs()
	if err != nil {
		t.Fatal(err)
	}
	n := map[string]int{}
	for i := range set.Vectors {
		v := &set.Vectors[i]
		t.Run(v.Alg+"/"+v.Section, func(t *testing.T) {
			pkt := bytes.Clone(v.Packet)
			seg, err := segment.ParsePacket(pkt)
			if err != nil {
				t.Fatal(err)
			}
			off := seg.Auth().AO + optionHeaderLen
			if seg.Auth().AOLen != optionLen(16) {
				t.Fatalf("option of %d bytes", seg.Auth().AOLen)
			}
			_, c := rfc9235Side(t, &set, v, &seg, true)
			clear(seg.Header()[off : off+16])
			if err := c.Sign(&seg); err != nil {
				t.Fatalf("sign: %v", err)
			}
			if !bytes.Equal(pkt, v.Packet) {
				t.Fatalf("%s: signed MAC %x, OpenSSL's %x", v.Title, seg.Header()[off:off+16], v.MAC)
			}

			pkt = bytes.Clone(v.Packet)
			seg, _ = segment.ParsePacket(pkt)
			_, rc := rfc9235Side(t, &set, v, &seg, false)
			if err := rfc9235Verify(rc, &seg); err != nil {
				t.Fatalf("%s: verify: %v", v.Title, err)
			}

			// The connection-less calls, from the sender's MKT.
			h := seg.Header()
			m, isns := rfc9235SenderMKT(t, &set, v, &seg, 0) // 0: the draft algorithms' default, 16
			if m.MACLen() != 16 {
				t.Fatalf("maclen %d", m.MACLen())
			}
			if err := verifySegment(m, isns, 0, &seg); err != nil {
				t.Fatalf("verifySegment: %v", err)
			}
			if err := verifySegment(m, isns, 1, &seg); !errors.Is(err, ErrBadMAC) {
				t.Errorf("SNE 1 verified: %v", err)
			}
			aoOff := seg.Auth().AO
			rnext := h[aoOff+3]
			clear(h[aoOff+2 : off+16])
			if err := signSegment(m, isns, 0, rnext, &seg); err != nil || !bytes.Equal(pkt, v.Packet) {
				t.Fatalf("signSegment: %v, MAC %x, OpenSSL's %x", err, h[off:off+16], v.MAC)
			}
			var k TrafficKey
			if err := k.Derive(m, isns, &seg); err != nil {
				t.Fatalf("TrafficKey.Derive: %v", err)
			}
			clear(h[aoOff+2 : off+16])
			if err := k.Sign(&seg, 0, rnext); err != nil || !bytes.Equal(pkt, v.Packet) {
				t.Fatalf("TrafficKey.Sign: %v, MAC %x, OpenSSL's %x", err, h[off:off+16], v.MAC)
			}
			if err := k.Verify(&seg, 0); err != nil {
				t.Fatalf("TrafficKey.Verify: %v", err)
			}
			k.Wipe()
			for _, at := range []int{off, off + 15, len(h) + len(seg.Payload()) - 1} {
				bs := flippedSegment(v, at)
				if err := verifySegment(m, isns, 0, &bs); !errors.Is(err, ErrBadMAC) {
					t.Errorf("flipped byte %d verified: %v", at, err)
				}
			}
			n[v.Alg]++
		})
	}
	t.Logf("draft-ietf-tcpm-tcp-ao-algs-07: %v segments signed byte-exact and verified", n)
	if n["hmac-sha256-128"] != 32 || n["kmac256-128"] != 32 {
		t.Fatal("want 32 per algorithm")
	}
}
