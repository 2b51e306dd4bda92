package md5sig

import (
	"bytes"
	"errors"
	"net/netip"
	"testing"

	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/segment"
	md5fix "github.com/tcpsig/tcpsig/testvectors/md5"
)

// TestKernelFixtures checks md5sig against the Linux kernel's own TCP-MD5
// segments, captured on lo (testvectors/md5, made by that package's
// generator as root on a kernel with CONFIG_TCP_MD5SIG):
//
//   - every captured segment with an MD5 option verifies under the
//     manifest's keys, each chosen by the packet's source the way the
//     receiving kernel chose it (longest prefix: the keys of both
//     endpoints are in one keyring, and the receiver's key for a peer is
//     the longest prefix containing that peer);
//   - signing the same segment afresh (digest zeroed, key chosen by the
//     destination) reproduces the kernel's digest byte for byte;
//   - copies with one byte flipped in the digest, in the payload and in
//     each field of the TCP header fail with ErrBadMAC, and so does the
//     segment itself under keys whose last byte is flipped.
func TestKernelFixtures(t *testing.T) {
	m, err := md5fix.Load()
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, c := range m.Captures {
		t.Run(c.Name, func(t *testing.T) {
			r, wrong := NewKeyring(nil), NewKeyring(nil)
			seen := map[netip.Prefix][]byte{}
			for _, k := range c.Keys.MD5 {
				p, err := k.Prefix()
				if err != nil {
					t.Fatal(err)
				}
				b, err := k.Bytes()
				if err != nil {
					t.Fatal(err)
				}
				if old, ok := seen[p.Masked()]; ok && !bytes.Equal(old, b) {
					t.Fatalf("manifest has two keys for %v: one keyring cannot stand for both endpoints", p)
				}
				seen[p.Masked()] = b
				mustAdd(t, r, keys.MD5{Peer: p, Key: b})
				b = bytes.Clone(b)
				b[len(b)-1] ^= 0x01
				mustAdd(t, wrong, keys.MD5{Peer: p, Key: b})
			}
			lt, pkts, err := c.Read()
			if err != nil {
				t.Fatal(err)
			}
			verified := 0
			for i, p := range pkts {
				ip := lt.IP(p.Data)
				if ip == nil {
					t.Fatalf("frame %d: no IP packet in a %v frame", i+1, lt)
				}
				seg, err := segment.ParsePacket(ip)
				if err != nil {
					t.Fatalf("frame %d: %v", i+1, err)
				}
				if seg.Auth().MD5 == 0 {
					if err := r.Verify(&seg, 0); !errors.Is(err, ErrMissing) {
						t.Errorf("frame %d: unsigned, Verify = %v, want ErrMissing", i+1, err)
					}
					continue
				}
				if err := r.Verify(&seg, 0); err != nil {
					t.Errorf("frame %d (%v -> %v, %v, %d payload bytes): %v", i+1, seg.Src(), seg.Dst(), seg.Header().Flags(), len(seg.Payload()), err)
					continue
				}
				verified++
				if err := wrong.Verify(&seg, 0); !errors.Is(err, ErrBadMAC) {
					t.Errorf("frame %d: verifies with the last key byte flipped: %v", i+1, err)
				}

				// Sign reproduces the kernel's digest.
				again := bytes.Clone(ip)
				s2, _ := segment.ParsePacket(again)
				kernel := bytes.Clone(digestOf(t, &s2))
				clear(digestOf(t, &s2))
				if err := r.Sign(&s2, 0); err != nil {
					t.Fatalf("frame %d: Sign: %v", i+1, err)
				}
				if got := digestOf(t, &s2); !bytes.Equal(got, kernel) {
					t.Errorf("frame %d: md5sig signs %x, the kernel signed %x", i+1, got, kernel)
				}

				// One flipped byte anywhere covered fails.
				tcpOff := len(ip) - seg.Len()
				flips := map[string]int{
					"digest":      tcpOff + seg.Auth().MD5 + 2 + i%DigestSize,
					"src port":    tcpOff + 1,
					"dst port":    tcpOff + 3,
					"seq":         tcpOff + 7,
					"ack":         tcpOff + 11,
					"reserved":    tcpOff + 12, // low bit of the byte holding the data offset
					"flags":       tcpOff + 13,
					"window":      tcpOff + 15,
					"urgent ptr":  tcpOff + 19,
					"src address": srcAddrOff(ip),
				}
				if len(seg.Payload()) > 0 {
					flips["payload"] = tcpOff + len(seg.Header()) + (i*131)%len(seg.Payload())
				}
				for name, off := range flips {
					bad := bytes.Clone(ip)
					bad[off] ^= 0x01
					bs, err := segment.ParsePacket(bad)
					if err != nil {
						t.Fatalf("frame %d, flipped %s: %v", i+1, name, err)
					}
					if err := r.Verify(&bs, 0); !errors.Is(err, ErrBadMAC) {
						t.Errorf("frame %d, flipped %s: Verify = %v, want ErrBadMAC", i+1, name, err)
					}
				}
			}
			if verified != c.MD5Signed {
				t.Errorf("verified %d segments, the manifest says %d are signed", verified, c.MD5Signed)
			}
			t.Logf("%s: %d of %d kernel-signed segments verified and re-signed byte-exact", c.Name, verified, c.MD5Signed)
			total += verified
		})
	}
	t.Logf("kernel %s: %d captured TCP-MD5 segments verified in %d captures", m.Kernel, total, len(m.Captures))
	if total == 0 {
		t.Fatal("no segment verified")
	}
}

// srcAddrOff returns the offset of the last byte of the IP source
// address. With it flipped the lookup finds another key (the /8 or /64
// one) or the same; either way the pseudo-header changed and the digest
// must fail.
func srcAddrOff(ip []byte) int {
	if ip[0]>>4 == 4 {
		return 15
	}
	return 23
}
