package mac

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/sha3"
	"encoding/hex"
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tcpsig/tcpsig/testvectors"
)

// TestKMAC256Samples checks SP 800-185's KMAC256 samples #4–#6 through
// InitKMAC: the whole data written after the key, the data split between
// the template's prefix and the message, MAC, and Rekey.
func TestKMAC256Samples(t *testing.T) {
	vs, err := testvectors.KMAC256Samples()
	if err != nil {
		t.Fatal(err)
	}
	a, err := Lookup("KMAC256-128")
	if err != nil {
		t.Fatal(err)
	}
	c := a.NewContext()
	for _, v := range vs {
		for _, split := range []int{0, 1, len(v.Data) / 2, len(v.Data)} {
			var k Key
			if err := k.InitKMAC(a, v.Key, KMACParams{Custom: v.S, OutLen: v.OutBits / 8, Prefix: v.Data[:split]}); err != nil {
				t.Fatal(err)
			}
			if err := c.Start(&k); err != nil {
				t.Fatal(err)
			}
			c.Write(v.Data[split:])
			if got := c.Finish(nil); !bytes.Equal(got, v.Out) {
				t.Errorf("sample %d, prefix %d: got %x want %x", v.Sample, split, got, v.Out)
			}
			got, err := c.Compute(&k, nil, v.Data[split:])
			if err != nil || !bytes.Equal(got, v.Out) {
				t.Errorf("sample %d, prefix %d, MAC: got %x, %v want %x", v.Sample, split, got, err, v.Out)
			}
			re := a.NewRekeyContext()
			if err := re.Start(&k); err != nil {
				t.Fatal(err)
			}
			re.Write(v.Data[split:])
			if got := re.Finish(nil); !bytes.Equal(got, v.Out) {
				t.Errorf("sample %d, prefix %d, Rekey: got %x want %x", v.Sample, split, got, v.Out)
			}
		}
	}
	t.Logf("SP 800-185 KMAC256 samples #4-#6 passed")
}

// TestKMACLength: KMAC's output depends on L; a 128-bit KMAC is not the
// first half of a 256-bit one (right_encode(L) is absorbed).
func TestKMACLength(t *testing.T) {
	a, _ := Lookup("kmac256-128")
	key := bytes.Repeat([]byte{7}, 32)
	var k16, k32 Key
	if err := k16.Init(a, key); err != nil {
		t.Fatal(err)
	}
	if err := k32.InitKMAC(a, key, KMACParams{OutLen: 32}); err != nil {
		t.Fatal(err)
	}
	c := a.NewContext()
	m16, _ := c.Compute(&k16, nil, []byte("m"))
	m32, _ := c.Compute(&k32, nil, []byte("m"))
	if len(m16) != 16 || len(m32) != 32 || bytes.Equal(m16, m32[:16]) {
		t.Fatalf("L=128 %x, L=256 %x", m16, m32)
	}
}

// TestDraftProperties: the draft's algorithms are found by the draft's
// names, are not Linux's, take 16-byte MACs only and 32-byte master keys
// or longer, and say which KDF they use.
func TestDraftProperties(t *testing.T) {
	for name, want := range map[string]KDF{"HMAC-SHA256-128": HKDFSHA256, "KMAC256-128": KMAC256KDF, "hmac(sha256)": KDFRFC5926} {
		a, err := Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		if a.KDF() != want || a.Linux() != (want == KDFRFC5926) {
			t.Errorf("%s: KDF %v Linux %v", name, a.KDF(), a.Linux())
		}
		if want == KDFRFC5926 {
			if a.MACLen() != 0 || a.MinMasterKey() != 1 || a.CheckMACLen(12) != nil || a.CheckMasterKey(1) != nil {
				t.Errorf("%s: MACLen %d, MinMasterKey %d", name, a.MACLen(), a.MinMasterKey())
			}
			continue
		}
		if a.Size() != 32 || a.MACLen() != 16 || a.MinMasterKey() != 32 {
			t.Errorf("%s: Size %d MACLen %d MinMasterKey %d", name, a.Size(), a.MACLen(), a.MinMasterKey())
		}
		for _, n := range []int{0, 12, 15, 17, 32} {
			if err := a.CheckMACLen(n); !errors.Is(err, ErrMACLen) || !strings.Contains(err.Error(), "16-byte MACs only") {
				t.Errorf("%s maclen %d: %v", name, n, err)
			}
		}
		if err := a.CheckMACLen(16); err != nil {
			t.Errorf("%s maclen 16: %v", name, err)
		}
		if err := a.CheckMasterKey(31); !errors.Is(err, ErrMasterKeyLen) || !strings.Contains(err.Error(), "at least 32 bytes") {
			t.Errorf("%s 31-byte master key: %v", name, err)
		}
		if err := a.CheckMasterKey(32); err != nil {
			t.Errorf("%s 32-byte master key: %v", name, err)
		}
	}
}

// TestHMACSHA256128 is HMAC-SHA256's first 16 bytes (crypto/hmac), with
// the whole digest from Sum.
func TestHMACSHA256128(t *testing.T) {
	a, _ := Lookup("hmac-sha256-128")
	key := bytes.Repeat([]byte{0xa5}, 32)
	msg := []byte("what TCP-AO would hash")
	ref := hmac.New(sha256.New, key)
	ref.Write(msg)
	var k Key
	if err := k.Init(a, key); err != nil {
		t.Fatal(err)
	}
	got, err := a.NewContext().Compute(&k, nil, msg)
	if err != nil || !bytes.Equal(got, ref.Sum(nil)) {
		t.Fatalf("got %x, %v", got, err)
	}
}

// TestKMACOpenSSL compares KMAC256-128 (K = a traffic key, S = "",
// L = 128) and the KDF's KMAC256 (S = "KDF", L = 256) with OpenSSL's
// KMAC256 over random keys and messages of many lengths.
func TestKMACOpenSSL(t *testing.T) {
	openssl := needOpenSSL(t)
	a, _ := Lookup("kmac256-128")
	c := a.NewContext()
	rng := rand.New(rand.NewPCG(11, 12))
	dir := t.TempDir()
	n := 0
	for _, l := range []int{0, 1, 48, 72, 135, 136, 137, 300, 1496} {
		for range 4 {
			key := random(rng, 16+rng.IntN(100))
			msg := random(rng, l)
			file := filepath.Join(dir, "m")
			if err := os.WriteFile(file, msg, 0o600); err != nil {
				t.Fatal(err)
			}
			var k, kdf Key
			if err := k.Init(a, key); err != nil {
				t.Fatal(err)
			}
			got, _ := c.Compute(&k, nil, msg)
			want := opensslKMAC(t, openssl, key, "", 16, file)
			if !bytes.Equal(got, want) {
				t.Fatalf("KMAC256-128 key %d msg %d: got %x, openssl %x", len(key), l, got, want)
			}
			// The same message written in random pieces.
			if err := c.Start(&k); err != nil {
				t.Fatal(err)
			}
			for rest := msg; len(rest) > 0; {
				m := min(len(rest), 1+rng.IntN(200))
				c.Write(rest[:m])
				rest = rest[m:]
			}
			if got := c.Finish(nil); !bytes.Equal(got, want) {
				t.Fatalf("KMAC256-128 key %d msg %d in pieces: got %x, openssl %x", len(key), l, got, want)
			}
			split := rng.IntN(l + 1)
			if err := kdf.InitKMAC(a, key, KMACParams{Custom: "KDF", OutLen: 32, Prefix: msg[:split]}); err != nil {
				t.Fatal(err)
			}
			got, _ = c.Compute(&kdf, nil, msg[split:])
			if want := opensslKMAC(t, openssl, key, "KDF", 32, file); !bytes.Equal(got, want) {
				t.Fatalf("KMAC256 S=KDF key %d msg %d: got %x, openssl %x", len(key), l, got, want)
			}
			n += 2
		}
	}
	t.Logf("%d KMAC256 outputs equal OpenSSL's", n)
}

func random(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// needOpenSSL returns the openssl binary, or skips: the comparisons need
// an implementation other than this package's.
func needOpenSSL(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("openssl")
	if err != nil {
		t.Skip("openssl not installed: the KMAC256 comparison needs an independent implementation")
	}
	return p
}

func opensslKMAC(t *testing.T, openssl string, key []byte, s string, size int, file string) []byte {
	t.Helper()
	args := []string{"mac", "-macopt", "hexkey:" + hex.EncodeToString(key), "-macopt", "size:" + string(rune('0'+size/10)) + string(rune('0'+size%10))}
	if s != "" {
		args = append(args, "-macopt", "custom:"+s)
	}
	out, err := exec.Command(openssl, append(args, "-in", file, "KMAC256")...).CombinedOutput()
	if err != nil {
		t.Fatalf("openssl: %v: %s", err, out)
	}
	b, err := hex.DecodeString(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("openssl output %q: %v", out, err)
	}
	return b
}

// TestInitKMACRefuses: a KMAC template of another algorithm, an output or
// customization out of range, or an over-long key is refused, typed.
func TestInitKMACRefuses(t *testing.T) {
	a, _ := Lookup("kmac256-128")
	h, _ := Lookup("hmac(sha256)")
	var k Key
	for _, c := range []struct {
		alg    *Algorithm
		key    []byte
		s      string
		outLen int
		want   error
	}{
		{h, make([]byte, 32), "", 16, ErrNoKey},
		{nil, make([]byte, 32), "", 16, ErrNoKey},
		{a, make([]byte, 145), "", 16, ErrKeySize},
		{a, make([]byte, 32), "", -1, ErrKeySize},
		{a, make([]byte, 32), "", 65, ErrKeySize},
		{a, make([]byte, 32), strings.Repeat("S", 33), 16, ErrKeySize},
	} {
		if err := k.InitKMAC(c.alg, c.key, KMACParams{Custom: c.s, OutLen: c.outLen}); !errors.Is(err, c.want) {
			t.Errorf("%v key %d s %d outLen %d: %v, want %v", c.alg, len(c.key), len(c.s), c.outLen, err, c.want)
		}
	}
	if err := k.InitKMAC(a, make([]byte, 132), KMACParams{Custom: strings.Repeat("S", 32), OutLen: 64, Prefix: make([]byte, 300)}); err != nil {
		t.Fatalf("the longest customization: %v", err)
	}
	w, key32 := a.NewContext(), make([]byte, 32)
	_ = w.Schedule(&k, key32)
	if testing.AllocsPerRun(20, func() { _ = w.Schedule(&k, key32) }) != 0 {
		t.Error("a context's Schedule of a KMAC traffic key allocates")
	}
}

// TestKMACWipe: Wipe leaves no keyed sponge in a KMAC context, and
// Key.Wipe clears the template; the context is then keyed again.
func TestKMACWipe(t *testing.T) {
	a, _ := Lookup("kmac256-128")
	var k Key
	if err := k.Init(a, bytes.Repeat([]byte{0xaa}, 32)); err != nil {
		t.Fatal(err)
	}
	c := a.NewContext()
	if _, err := c.Compute(&k, nil, []byte("m")); err != nil {
		t.Fatal(err)
	}
	c.Wipe()
	for _, x := range []*sha3.SHAKE{&c.xof, &c.kx} {
		// magic (4) and rate (1), then the 200-byte sponge: zero, or the
		// unkeyed state after cSHAKE's initialisation block.
		st, _ := x.MarshalBinary()
		if a := st[5:205]; !bytes.Equal(a, make([]byte, 200)) && !bytes.Equal(a, kmacBase[5:205]) {
			t.Fatal("a wiped context keeps a keyed sponge")
		}
	}
	want, _ := c.Compute(&k, nil, []byte("m"))
	k.Wipe()
	if !k.Empty() || k.outLen != 0 {
		t.Fatal("Wipe left the KMAC template")
	}
	if err := k.Init(a, bytes.Repeat([]byte{0xaa}, 32)); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Compute(&k, nil, []byte("m")); err != nil || !bytes.Equal(got, want) || len(got) != 16 {
		t.Fatalf("after Wipe and Init: %x, %v, want %x", got, err, want)
	}
}
