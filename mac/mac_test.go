package mac

import (
	"bytes"
	"crypto/aes"
	"crypto/hmac"
	"crypto/md5"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	aeadcmac "github.com/aead/cmac"

	"github.com/tcpsig/tcpsig/testvectors"
)

// TestVectors checks every published (or, where none is published,
// independently computed) MAC vector through all three ways of keying a
// context: SetKey, Load of a shared template, and Load after Reset.
func TestVectors(t *testing.T) {
	vs, err := testvectors.MACs()
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for _, v := range vs {
		a, err := Lookup(v.Alg)
		if err != nil {
			t.Fatalf("%s: %v", v.Case, err)
		}
		check := func(how string, c *Context) {
			t.Helper()
			c.Write(v.Data)
			got := c.Finish(nil)
			if v.Truncated {
				got = got[:len(v.MAC)]
			}
			if !bytes.Equal(got, v.MAC) {
				t.Errorf("%s %s %s: got %x want %x", v.Source, v.Case, how, got, v.MAC)
			}
		}
		c := a.NewContext()
		if err := c.SetKey(v.Key); err != nil {
			t.Fatalf("%s: %v", v.Case, err)
		}
		check("SetKey", c)
		var k Key
		if err := k.Init(a, v.Key); err != nil {
			t.Fatal(err)
		}
		c2 := a.NewContext()
		c2.Start(&k)
		c2.Write([]byte("garbage that Reset must discard"))
		c2.Restart()
		check("Load+Reset", c2)
		c2.Restart()
		check("second Reset", c2)
		c3 := a.NewRekeyContext()
		if err := c3.Start(&k); err != nil {
			t.Fatalf("%s: re-keying Start: %v", v.Case, err)
		}
		check("re-keying Start", c3)
		for _, c := range []*Context{c2, c3} {
			for _, how := range []string{"Compute", "Compute again"} {
				got, err := c.Compute(&k, nil, v.Data)
				if err != nil {
					t.Fatalf("%s: Compute: %v", v.Case, err)
				}
				if v.Truncated {
					got = got[:len(v.MAC)]
				}
				if !bytes.Equal(got, v.MAC) {
					t.Errorf("%s %s %s (re-keying %v): got %x want %x", v.Source, v.Case, how, c.Rekeys(), got, v.MAC)
				}
			}
		}
		counts[v.Source]++
	}
	for s, n := range counts {
		t.Logf("%s: %d vectors passed", s, n)
	}
	if len(counts) == 0 {
		t.Fatal("no vectors")
	}
}

func TestCMACSubkeys(t *testing.T) {
	sk, err := testvectors.RFC4493Subkeys()
	if err != nil {
		t.Fatal(err)
	}
	a, _ := Lookup("cmac(aes128)")
	var k Key
	if err := k.Init(a, sk.Key); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(k.k1[:], sk.K1) || !bytes.Equal(k.k2[:], sk.K2) {
		t.Fatalf("RFC 4493 subkeys: got %x %x want %x %x", k.k1, k.k2, sk.K1, sk.K2)
	}
	t.Log("RFC 4493 subkey vector passed")
}

// TestCMACDifferential compares the hand-written CMAC with
// github.com/aead/cmac on random keys and every message length 0..300,
// written in random pieces.
func TestCMACDifferential(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	a, _ := Lookup("cmac(aes)")
	c := a.NewContext()
	for _, keyLen := range []int{16, 32} {
		key := make([]byte, keyLen)
		for n := 0; n <= 300; n++ {
			for i := range key {
				key[i] = byte(rng.Uint32())
			}
			msg := make([]byte, n)
			for i := range msg {
				msg[i] = byte(rng.Uint32())
			}
			blk, _ := aes.NewCipher(key)
			want, _ := aeadcmac.Sum(msg, blk, 16)
			if err := c.SetKey(key); err != nil {
				t.Fatal(err)
			}
			for rest := msg; len(rest) > 0; {
				m := min(len(rest), 1+rng.IntN(40))
				c.Write(rest[:m])
				rest = rest[m:]
			}
			if got := c.Finish(nil); !bytes.Equal(got, want) {
				t.Fatalf("keylen %d len %d: got %x want %x", keyLen, n, got, want)
			}
		}
	}
}

// TestCMACOneShot compares Context.Compute with github.com/aead/cmac for
// every message length 0..80, each message MACed twice (the second time
// from the cached first block), then under a second key with the same
// first block, then under the first Key re-keyed in place: the cached
// block must never outlive its key.
func TestCMACOneShot(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	a, _ := Lookup("cmac(aes)")
	c := a.NewContext()
	random := func(n int) []byte {
		p := make([]byte, n)
		for i := range p {
			p[i] = byte(rng.Uint32())
		}
		return p
	}
	for _, keyLen := range []int{16, 32} {
		for n := 0; n <= 80; n++ {
			msg := random(n)
			var k, k2 Key
			key, key2, key3 := random(keyLen), random(keyLen), random(keyLen)
			if err := k.Init(a, key); err != nil {
				t.Fatal(err)
			}
			if err := k2.Init(a, key2); err != nil {
				t.Fatal(err)
			}
			check := func(how string, k *Key, key []byte) {
				t.Helper()
				blk, _ := aes.NewCipher(key)
				want, _ := aeadcmac.Sum(msg, blk, 16)
				got, err := c.Compute(k, nil, msg)
				if err != nil || !bytes.Equal(got, want) {
					t.Fatalf("keylen %d len %d %s: got %x, %v want %x", keyLen, n, how, got, err, want)
				}
			}
			check("first", &k, key)
			check("again", &k, key)
			check("second key", &k2, key2)
			check("first key after the second", &k, key)
			if err := k.Init(a, key3); err != nil {
				t.Fatal(err)
			}
			check("re-keyed in place", &k, key3)
		}
	}
}

// TestHMACDifferential compares the template-based HMAC with crypto/hmac
// for every HMAC algorithm on random keys around the block size and
// messages written in pieces.
func TestHMACDifferential(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, a := range Algorithms() {
		if a.newHash == nil { // CMAC, KMAC
			continue
		}
		c := a.NewContext()
		for _, kl := range []int{1, 16, a.blockSize - 1, a.blockSize, a.blockSize + 1, 200} {
			key := make([]byte, kl)
			msg := make([]byte, rng.IntN(500))
			for i := range key {
				key[i] = byte(rng.Uint32())
			}
			for i := range msg {
				msg[i] = byte(rng.Uint32())
			}
			ref := hmac.New(a.newHash, key)
			ref.Write(msg)
			want := ref.Sum(nil)
			var k Key
			if err := k.Init(a, key); err != nil {
				t.Fatal(err)
			}
			c.Start(&k)
			c.Write(msg[:len(msg)/3])
			c.Write(msg[len(msg)/3:])
			if got := c.Finish(nil); !bytes.Equal(got, want) {
				t.Fatalf("%s keylen %d: got %x want %x", a, kl, got, want)
			}
		}
	}
}

// TestPaddedFinish checks the contexts' own padding of the SHA-1, SHA-2
// and MD5 hashes (finish.go) against crypto/hmac (crypto/md5 over the
// message and the key for TCP-MD5) on every message length
// 0..300, whole (MAC) and written in two pieces (Write, Sum), and that
// init kept it in use: a Go release that changed the hashes' marshalled
// state would quietly send these algorithms back to Sum.
func TestPaddedFinish(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	msg := make([]byte, 300)
	for i := range msg {
		msg[i] = byte(rng.Uint32())
	}
	for _, name := range []string{"hmac(sha1)", "hmac(sha224)", "hmac(sha256)", "hmac(sha384)", "hmac(sha512)", "hmac(md5)", "md5"} {
		a, _ := Lookup(name)
		if name == "md5" {
			a = TCPMD5
		}
		if a.lenSize == 0 {
			t.Errorf("%s: padded finish not in use", a)
			continue
		}
		key := msg[:a.size]
		var k Key
		if err := k.Init(a, key); err != nil {
			t.Fatal(err)
		}
		c := a.NewContext()
		for n := 0; n <= len(msg); n++ {
			var want []byte
			if a == TCPMD5 {
				d := md5.Sum(append(msg[:n:n], key...))
				want = d[:]
			} else {
				ref := hmac.New(a.newHash, key)
				ref.Write(msg[:n])
				want = ref.Sum(nil)
			}
			got, err := c.Compute(&k, nil, msg[:n])
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("%s MAC len %d: got %x, %v want %x", a, n, got, err, want)
			}
			if err := c.Start(&k); err != nil {
				t.Fatal(err)
			}
			c.Write(msg[:n/3])
			c.Write(msg[n/3 : n])
			if got := c.Finish(nil); !bytes.Equal(got, want) {
				t.Fatalf("%s Write/Sum len %d: got %x want %x", a, n, got, want)
			}
		}
	}
}

// TestSumFinishes: Sum finishes the message. Sum again gives the same MAC,
// Write is refused with ErrFinished until Reset, and the next message is
// then right; the same after MAC. For every algorithm.
func TestSumFinishes(t *testing.T) {
	msg := []byte("a message that is summed twice, then written to again")
	for _, a := range append(Algorithms(), TCPMD5) {
		var k Key
		if err := k.Init(a, msg[:16]); err != nil {
			t.Fatal(err)
		}
		c := a.NewContext()
		want, err := c.Compute(&k, nil, msg)
		if err != nil {
			t.Fatal(err)
		}
		if got := c.Finish(nil); !bytes.Equal(got, want) {
			t.Errorf("%s: Sum after MAC %x, want %x", a, got, want)
		}
		if _, err := c.Write(msg); !errors.Is(err, ErrFinished) {
			t.Errorf("%s: Write after MAC: %v, want ErrFinished", a, err)
		}
		if err := c.Start(&k); err != nil {
			t.Fatal(err)
		}
		c.Write(msg[:7])
		c.Write(msg[7:])
		first := c.Finish(nil)
		if !bytes.Equal(first, want) || !bytes.Equal(c.Finish(nil), want) {
			t.Errorf("%s: Sum, Sum: %x, %x, want %x", a, first, c.Finish(nil), want)
		}
		if n, err := c.Write(msg); n != 0 || !errors.Is(err, ErrFinished) {
			t.Errorf("%s: Write after Sum: %d, %v, want ErrFinished", a, n, err)
		}
		c.Restart()
		c.Write(msg)
		if got := c.Finish(nil); !bytes.Equal(got, want) {
			t.Errorf("%s: after Reset %x, want %x", a, got, want)
		}
	}
}

// TestTCPMD5Construction: MD5 over the data followed by the key (RFC 2385).
func TestTCPMD5Construction(t *testing.T) {
	c := TCPMD5.NewContext()
	if err := c.SetKey([]byte("key")); err != nil {
		t.Fatal(err)
	}
	c.Write([]byte("segment"))
	got := c.Finish(nil)
	// MD5("segmentkey"), computed independently with md5sum.
	want := "a8bd7b6fa049d98f128f6a5a70cad367"
	if fmt.Sprintf("%x", got) != want {
		t.Fatalf("got %x want %s", got, want)
	}
	if TCPMD5.KeySizeOK(81) {
		t.Fatal("TCP-MD5 accepts an 81-byte key")
	}
}

func TestLookup(t *testing.T) {
	for name, want := range map[string]string{
		"hmac(sha1)": "hmac(sha1)", "HMAC-SHA-1-96": "hmac(sha1)",
		"AES-128-CMAC-96": "cmac(aes128)", "cmac(aes)": "cmac(aes)", " hmac(SHA3-512) ": "hmac(sha3-512)",
	} {
		a, err := Lookup(name)
		if err != nil || a.Name() != want {
			t.Errorf("Lookup(%q) = %v, %v; want %s", name, a, err, want)
		}
	}
	_, err := Lookup("hmac(nosuchhash)")
	if !errors.Is(err, ErrUnknownAlgorithm) || !strings.Contains(err.Error(), "hmac(sha256)") {
		t.Fatalf("unknown name: %v", err)
	}
	for name, size := range map[string]int{"hmac(sha1)": 20, "hmac(sha224)": 28, "hmac(sha256)": 32, "hmac(sha384)": 48,
		"hmac(sha512)": 64, "hmac(sha3-512)": 64, "hmac(md5)": 16, "hmac(rmd160)": 20, "cmac(aes128)": 16} {
		a, _ := Lookup(name)
		if a.Size() != size {
			t.Errorf("%s size %d want %d", name, a.Size(), size)
		}
	}
	// cmac(aes) takes 16- or 32-byte keys and refuses 20 like Linux;
	// cmac(aes128) takes 16 (longer master keys are reduced by the KDF).
	ca, _ := Lookup("cmac(aes)")
	c := ca.NewContext()
	if err := c.SetKey(make([]byte, 20)); !errors.Is(err, ErrKeySize) {
		t.Fatalf("cmac(aes) 20-byte key: %v", err)
	}
	if err := c.SetKey(make([]byte, 32)); err != nil {
		t.Fatal(err)
	}
	c128, _ := Lookup("cmac(aes128)")
	if err := c128.NewContext().SetKey(make([]byte, 32)); !errors.Is(err, ErrKeySize) {
		t.Fatalf("cmac(aes128) 32-byte MAC key: %v", err)
	}
}

// TestNoAllocs: after warm-up, Load, Reset, Write and Sum allocate nothing
// for any algorithm, and SetKey and a context's Schedule nothing for HMAC.
func TestNoAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under the race detector (sync.Pool drops items at random)")
	}
	msg := make([]byte, 1500)
	out := make([]byte, 0, MaxSize)
	for _, a := range append(Algorithms(), TCPMD5) {
		var k Key
		key := []byte("0123456789abcdef")
		if err := k.Init(a, key); err != nil {
			t.Fatal(err)
		}
		c, d := a.NewContext(), a.NewContext()
		n := testing.AllocsPerRun(50, func() {
			c.Start(&k)
			c.Write(msg)
			out = c.Finish(out[:0])
			c.Restart()
		})
		if n != 0 {
			t.Errorf("%s Load/Write/Sum/Reset: %v allocs", a, n)
		}
		for _, m := range [][]byte{msg, msg[:52]} {
			if n := testing.AllocsPerRun(50, func() { out, _ = c.Compute(&k, out[:0], m) }); n != 0 {
				t.Errorf("%s MAC of %d bytes: %v allocs", a, len(m), n)
			}
		}
		if a.IsCMAC() {
			continue
		}
		n = testing.AllocsPerRun(50, func() {
			_ = d.SetKey(key)
			d.Write(msg)
			out = d.Finish(out[:0])
		})
		if n != 0 {
			t.Errorf("%s SetKey/Write/Sum: %v allocs", a, n)
		}
		if n = testing.AllocsPerRun(50, func() { _ = d.Schedule(&k, key) }); n != 0 {
			t.Errorf("%s Schedule: %v allocs", a, n)
		}
	}
}

func TestKeyNeverPrinted(t *testing.T) {
	a, _ := Lookup("hmac(sha1)")
	secret := []byte("very-secret-key-bytes")
	var k Key
	_ = k.Init(a, secret)
	c := a.NewContext()
	_ = c.SetKey(secret)
	for _, f := range []string{"%v", "%+v", "%#v", "%s", "%x", "%X", "%q"} {
		for _, v := range []any{k, &k} {
			s := fmt.Sprintf(f, v)
			if strings.Contains(s, string(secret)) || strings.Contains(s, fmt.Sprintf("%x", secret)) || strings.Contains(s, fmt.Sprintf("%x", k.state(0)[:8])) {
				t.Fatalf("%s leaks key material: %s", f, s)
			}
		}
	}
}

// TestWipe checks that Wipe clears the storage a key kept its states in,
// in both kinds (hmac(sha256)'s fits the small one, hmac(sha512)'s and
// cmac(aes128)'s are sized exactly).
func TestWipe(t *testing.T) {
	for _, name := range []string{"hmac(sha256)", "hmac(sha512)", "cmac(aes128)"} {
		a, _ := Lookup(name)
		var k Key
		if err := k.Init(a, []byte("sixteen byte key")); err != nil {
			t.Fatal(err)
		}
		buf := k.mem()
		if k.Empty() || string(buf) == string(make([]byte, len(buf))) {
			t.Fatalf("%s: a keyed Key looks empty", name)
		}
		k.Wipe()
		if !k.Empty() || len(buf) == 0 || string(buf) != string(make([]byte, len(buf))) {
			t.Fatalf("%s: Wipe left key material", name)
		}
	}
}

// TestEqual checks Equal against bytes.Equal for lengths 0..64, with one
// bit flipped at every position, and for slices of different lengths.
func TestEqual(t *testing.T) {
	for n := 0; n <= MaxSize; n++ {
		a := make([]byte, n)
		for i := range a {
			a[i] = byte(i*7 + 1)
		}
		b := bytes.Clone(a)
		if !Equal(a, b) {
			t.Fatalf("len %d: equal slices differ", n)
		}
		if n > 0 && (Equal(a, b[:n-1]) || Equal(a[:n-1], b)) {
			t.Fatalf("len %d: slices of different lengths are equal", n)
		}
		for i := range n {
			for bit := range 8 {
				b[i] ^= 1 << bit
				if Equal(a, b) {
					t.Fatalf("len %d: byte %d bit %d flipped, still equal", n, i, bit)
				}
				b[i] ^= 1 << bit
			}
		}
	}
}

// TestRekeyContextKeys runs one re-keying context over two keys in turn,
// on messages that share their first block (which a cloning CMAC context
// caches per key): each MAC must be the cloning context's of its key.
func TestRekeyContextKeys(t *testing.T) {
	for _, a := range Algorithms() {
		var k1, k2 Key
		key := make([]byte, 16)
		if err := k1.Init(a, key); err != nil {
			t.Fatal(err)
		}
		key[0] = 1
		if err := k2.Init(a, key); err != nil {
			t.Fatal(err)
		}
		msg := make([]byte, 52)
		re, cl := a.NewRekeyContext(), a.NewContext()
		for i := range 4 {
			k := &k1
			if i%2 == 1 {
				k = &k2
			}
			got, err := re.Compute(k, nil, msg)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := cl.Compute(k, nil, msg)
			if !Equal(got, want) {
				t.Errorf("%s: message %d: re-keying %x, cloning %x", a, i, got, want)
			}
		}
	}
}
