package kdf

import (
	"bytes"
	"encoding/hex"
	"errors"
	"math/rand/v2"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tcpsig/tcpsig/mac"
	"github.com/tcpsig/tcpsig/testvectors"
)

// TestRFC5869 checks HKDF-SHA256's two steps as the draft's KDF runs them
// against RFC 5869 A.1–A.3: Extract gives the PRK, and HMAC-SHA256-128's
// context keyed with the PRK over info || 0x01 gives the OKM's first 32
// bytes (T(1), all the traffic key needs). A.3 is the draft's case: salt
// absent.
func TestRFC5869(t *testing.T) {
	vs, err := testvectors.RFC5869()
	if err != nil {
		t.Fatal(err)
	}
	alg, _ := mac.Lookup("HMAC-SHA256-128")
	for _, v := range vs {
		var prk [32]byte
		if err := Extract(alg.NewContext(), &prk, v.Salt, v.IKM); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(prk[:], v.PRK) {
			t.Errorf("%s: PRK %x want %x", v.Case, prk, v.PRK)
		}
		var k mac.Key
		if err := k.Init(alg, prk[:]); err != nil {
			t.Fatal(err)
		}
		c := alg.NewContext()
		c.Start(&k)
		c.Write(v.Info)
		c.Write([]byte{1})
		if got := c.Finish(nil); !bytes.Equal(got, v.OKM[:32]) {
			t.Errorf("%s: T(1) %x want %x", v.Case, got, v.OKM[:32])
		}
	}
	t.Log("RFC 5869 A.1-A.3 passed")
}

// TestDraftMasterKeyLength: the draft's algorithms refuse master keys
// shorter than 32 bytes, saying why.
func TestDraftMasterKeyLength(t *testing.T) {
	for _, name := range []string{"hmac-sha256-128", "kmac256-128"} {
		alg, _ := mac.Lookup(name)
		var m Master
		err := m.Init(alg, make([]byte, 31))
		if !errors.Is(err, ErrMasterKey) || !errors.Is(err, mac.ErrMasterKeyLen) || !strings.Contains(err.Error(), "at least 32 bytes") {
			t.Errorf("%s, 31-byte master key: %v", name, err)
		}
		if err := m.Init(alg, make([]byte, 32)); err != nil {
			t.Errorf("%s, 32-byte master key: %v", name, err)
		}
	}
}

// TestDraftKDFOpenSSL derives traffic keys with both draft KDFs for random
// master keys (32..80 bytes) and random IPv4 and IPv6 contexts, and
// compares them with OpenSSL's HKDF (salt 32 zero bytes, info = context)
// and KMAC256 (key 132 zero bytes, S = "KDF", L = 256, X = 0x00000001 ||
// master key || context).
func TestDraftKDFOpenSSL(t *testing.T) {
	openssl, err := exec.LookPath("openssl")
	if err != nil {
		t.Skip("openssl not installed: the KDF comparison needs an independent implementation")
	}
	rng := rand.New(rand.NewPCG(21, 22))
	dir := t.TempDir()
	run := func(args ...string) []byte {
		t.Helper()
		out, err := exec.Command(openssl, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("openssl %v: %v: %s", args, err, out)
		}
		b, err := hex.DecodeString(strings.ReplaceAll(strings.TrimSpace(string(out)), ":", ""))
		if err != nil {
			t.Fatalf("openssl output %q: %v", out, err)
		}
		return b
	}
	hk, _ := mac.Lookup("hmac-sha256-128")
	km, _ := mac.Lookup("kmac256-128")
	n := 0
	for i := range 24 {
		master := make([]byte, 32+rng.IntN(49))
		for j := range master {
			master[j] = byte(rng.Uint32())
		}
		in := Input{SrcPort: uint16(rng.Uint32()), DstPort: uint16(rng.Uint32()), SrcISN: rng.Uint32(), DstISN: rng.Uint32()}
		if i%3 == 0 {
			in.DstISN = 0 // a SYN's keys
		}
		if i%2 == 0 {
			in.Src, in.Dst = netip.AddrFrom4([4]byte{192, 0, 2, byte(i)}), netip.AddrFrom4([4]byte{198, 51, 100, byte(rng.Uint32())})
		} else {
			in.Src, in.Dst = netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 15: byte(i)}), netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 1, 15: byte(rng.Uint32())})
		}
		ctx, err := in.AppendContext(nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, alg := range []*mac.Algorithm{hk, km} {
			var m Master
			if err := m.Init(alg, master); err != nil {
				t.Fatal(err)
			}
			got, err := m.Derive(alg.NewContext(), make([]byte, MaxInputLen), &in, nil)
			if err != nil {
				t.Fatal(err)
			}
			var want []byte
			if alg == hk {
				want = run("kdf", "-keylen", "32", "-kdfopt", "digest:SHA256", "-kdfopt", "hexkey:"+hex.EncodeToString(master),
					"-kdfopt", "hexsalt:"+strings.Repeat("00", 32), "-kdfopt", "hexinfo:"+hex.EncodeToString(ctx), "HKDF")
			} else {
				x := append(append([]byte{0, 0, 0, 1}, master...), ctx...)
				file := filepath.Join(dir, "x")
				if err := os.WriteFile(file, x, 0o600); err != nil {
					t.Fatal(err)
				}
				want = run("mac", "-macopt", "hexkey:"+strings.Repeat("00", 132), "-macopt", "custom:KDF", "-macopt", "size:32", "-in", file, "KMAC256")
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("%s master %d bytes, context %x: got %x, openssl %x", alg, len(master), ctx, got, want)
			}
			n++
		}
	}
	t.Logf("%d draft traffic keys equal OpenSSL's", n)
}

// TestDraftDeriveNoAllocs: deriving with a prepared master key allocates
// nothing for the draft's KDFs either.
func TestDraftDeriveNoAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under the race detector")
	}
	for _, name := range []string{"hmac-sha256-128", "kmac256-128"} {
		alg, _ := mac.Lookup(name)
		var m Master
		if err := m.Init(alg, bytes.Repeat([]byte{9}, 32)); err != nil {
			t.Fatal(err)
		}
		in := Input{Src: netip.MustParseAddr("2001:db8::1"), Dst: netip.MustParseAddr("2001:db8::2"), SrcPort: 1, DstPort: 2, SrcISN: 3, DstISN: 4}
		if n, keyLen := deriveAllocs(&m, alg, &in); n != 0 || keyLen != 32 {
			t.Fatalf("%s: Derive allocates %v, %d bytes", name, n, keyLen)
		}
	}
}

// TestDraftTrafficKeys derives the 64 traffic keys of the draft vectors
// (RFC 9235's segments under a 32-byte master key, expected values from
// OpenSSL) from each segment's addresses, ports and ISNs.
func TestDraftTrafficKeys(t *testing.T) {
	set, err := testvectors.DraftAlgs()
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range set.Vectors {
		alg, err := mac.Lookup(v.Alg)
		if err != nil {
			t.Fatal(err)
		}
		var m Master
		if err := m.Init(alg, set.MasterKey); err != nil {
			t.Fatal(err)
		}
		in := vectorInput(t, v)
		got, err := m.Derive(alg.NewContext(), make([]byte, MaxInputLen), &in, nil)
		if err != nil || !bytes.Equal(got, v.TrafficKey) {
			t.Errorf("%s %s (%s): got %x, %v want %x", v.Alg, v.Section, v.TrafficKeyKind, got, err, v.TrafficKey)
		}
	}
	t.Logf("%d draft traffic keys derived and equal OpenSSL's", len(set.Vectors))
}
