//go:build unix

package tcpsig_test

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/subtle"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tcpsig/tcpsig/ao"
	"github.com/tcpsig/tcpsig/mac"
	"github.com/tcpsig/tcpsig/segment"
)

// The safe floor: the fastest a Go program gets a keyed MAC of a message
// without unsafe. HMAC: one keyed crypto/hmac, Reset per message (after
// its first Reset it restores marshalled pad states). CMAC: RFC 4493
// written out over a reused cipher.Block and its two subkeys. KMAC: a
// keyed cSHAKE256 state copied per message (safeKMAC).
func safeFloor(tb testing.TB, a *mac.Algorithm, key, msg []byte) func() {
	tb.Helper()
	out := make([]byte, 0, mac.MaxSize)
	if a.IsCMAC() {
		c := newSafeCMAC(tb, key)
		return func() { out = c.sum(out[:0], msg) }
	}
	if a.IsKMAC() {
		k := newSafeKMAC(key)
		return func() { out = k.sum(out[:0], msg) }
	}
	h := hmac.New(bareHash[a.Name()], key)
	return func() {
		h.Reset()
		h.Write(msg)
		out = h.Sum(out[:0])
	}
}

type safeCMAC struct {
	blk          cipher.Block
	k1, k2, x, l [16]byte
}

func newSafeCMAC(tb testing.TB, key []byte) *safeCMAC {
	blk, err := aes.NewCipher(key)
	if err != nil {
		tb.Fatal(err)
	}
	c := &safeCMAC{blk: blk}
	var l [16]byte
	blk.Encrypt(l[:], l[:])
	dbl := func(dst, src *[16]byte) {
		for i := range 15 {
			dst[i] = src[i]<<1 | src[i+1]>>7
		}
		dst[15] = src[15]<<1 ^ 0x87&-(src[0]>>7)
	}
	dbl(&c.k1, &l)
	dbl(&c.k2, &c.k1)
	return c
}

func (c *safeCMAC) sum(out, msg []byte) []byte {
	c.x = [16]byte{}
	for len(msg) > 16 {
		subtle.XORBytes(c.x[:], c.x[:], msg[:16])
		c.blk.Encrypt(c.x[:], c.x[:])
		msg = msg[16:]
	}
	if len(msg) == 16 {
		subtle.XORBytes(c.l[:], msg, c.k1[:])
	} else {
		c.l = [16]byte{}
		copy(c.l[:], msg)
		c.l[len(msg)] = 0x80
		subtle.XORBytes(c.l[:], c.l[:], c.k2[:])
	}
	subtle.XORBytes(c.x[:], c.x[:], c.l[:])
	c.blk.Encrypt(c.x[:], c.x[:])
	return append(out, c.x[:]...)
}

// TestSafeFloor checks that the safe floor computes the engine's MAC:
// the same key and bytes give the same digest as package mac.
func TestSafeFloor(t *testing.T) {
	for _, a := range mac.Algorithms() {
		key, msg := bytesOf(a.Size(), 1), bytesOf(1000, 2)
		c := a.NewContext()
		if err := c.SetKey(key); err != nil {
			t.Fatal(err)
		}
		c.Write(msg)
		want := c.Finish(nil)
		var got []byte
		if a.IsCMAC() {
			got = newSafeCMAC(t, key).sum(nil, msg)
		} else if a.IsKMAC() {
			got = newSafeKMAC(key).sum(nil, msg)
		} else {
			h := hmac.New(bareHash[a.Name()], key)
			h.Write(msg)
			got = h.Sum(nil)
		}
		if !mac.Equal(got, want) {
			t.Errorf("%s: safe floor %x, engine %x", a, got, want)
		}
	}
}

// aoOps returns Conn.Sign and Conn.Verify of an established connection's
// data segment with payload bytes, as functions.
func aoOps(b *testing.B, alg string, payload int) (sign, verify func(), closeFn func()) {
	c, s := established(b, alg)
	seg := fromTCP(b, client.Addr(), server.Addr(),
		tcpHeaderLen(macLenOf(alg), client.Port(), server.Port(), 1001, 5001, segment.ACK|segment.PSH, bytesOf(payload, 4)))
	if err := c.Sign(&seg); err != nil {
		b.Fatal(err)
	}
	sign = func() {
		if err := c.Sign(&seg); err != nil {
			b.Fatal(err)
		}
	}
	verify = func() {
		if err := s.Verify(&seg); err != nil {
			b.Fatal(err)
		}
	}
	return sign, verify, func() { c.Close(); s.Close() }
}

// BenchmarkFloor is issue 10's ratio: Conn.Sign and Conn.Verify of an
// established IPv4 connection (maclen 12) against the safe floor over the
// same bytes (SNE, pseudo-header, header, payload), at payloads 0 (a pure
// ACK, 52 bytes) and 1448 (1500 bytes). Rounds of 16 calls of each,
// alternating which goes first; the metric "ratio" is the median of
// time(floor)/time(engine): 1.0 is as fast as the floor.
func BenchmarkFloor(b *testing.B) {
	for _, a := range mac.Algorithms() {
		for _, n := range []int{0, 1448} {
			for _, op := range []string{"sign", "verify"} {
				b.Run(fmt.Sprintf("%s/%s/%d", benchName(a.Name()), op, n), func(b *testing.B) {
					sign, verify, done := aoOps(b, a.Name(), n)
					defer done()
					f := sign
					if op == "verify" {
						f = verify
					}
					key, msg := bytesOf(a.Size(), 1), bytesOf(aoCoveredFor(a.Name(), n), 2)
					var limit func()
					if lim := limitMAC(b, a, key, msg); lim != nil {
						limit = func() { lim() }
					}
					ratio(b, f, safeFloor(b, a, key, msg), limit)
				})
			}
		}
	}
}

// BenchmarkCMACBound is the least a cmac(aes128) pure ACK can cost a
// signer built like the engine, against the safe floor over the same 52
// bytes: the three chained AES blocks left once the first block's
// encryption is cached, over a message already staged and padded, with
// the lane's lock ("locked") or without it ("unlocked"), and nothing else:
// no option, key lookup, SNE, staging or copy. Its ratio bounds what
// BenchmarkFloor's cmac rows at 0 B can reach.
func BenchmarkCMACBound(b *testing.B) {
	a, _ := mac.Lookup("cmac(aes128)")
	key, msg := bytesOf(16, 1), bytesOf(aoCovered(0), 2)
	c := newSafeCMAC(b, key)
	var mu sync.Mutex
	var x, first, last, out [16]byte
	c.blk.Encrypt(first[:], msg[:16])
	n := copy(last[:], msg[48:])
	last[n] = 0x80
	subtle.XORBytes(last[:], last[:], c.k2[:])
	chain := func() {
		x = first
		subtle.XORBytes(x[:], x[:], msg[16:32])
		c.blk.Encrypt(x[:], x[:])
		subtle.XORBytes(x[:], x[:], msg[32:48])
		c.blk.Encrypt(x[:], x[:])
		subtle.XORBytes(x[:], x[:], last[:])
		c.blk.Encrypt(out[:], x[:])
	}
	chain()
	if want := newSafeCMAC(b, key).sum(nil, msg); !mac.Equal(out[:], want) {
		b.Fatalf("bound's MAC %x, floor's %x", out, want)
	}
	for _, locked := range []bool{true, false} {
		name, op := "unlocked", chain
		if locked {
			name, op = "locked", func() { mu.Lock(); chain(); mu.Unlock() }
		}
		b.Run(name, func(b *testing.B) { ratio(b, op, safeFloor(b, a, key, msg), nil) })
	}
}

// ratio runs rounds of 16 calls of op and 16 of ref, alternating which
// goes first, and reports the median of time(ref)/time(op) as "ratio",
// and the medians of the ns per call of each ("op-ns", "ref-ns"). A
// limit, if not nil, runs 16 times at the end of each round ("limit-ns").
func ratio(b *testing.B, op, ref, limit func()) {
	const k = 16
	timed := func(f func()) time.Duration {
		t0 := time.Now()
		for range k {
			f()
		}
		return time.Since(t0)
	}
	op()
	ref()
	var r, ops, refs, lims []float64
	for b.Loop() {
		var top, tref time.Duration
		if len(r)%2 == 0 {
			top, tref = timed(op), timed(ref)
		} else {
			tref, top = timed(ref), timed(op)
		}
		r = append(r, float64(tref)/float64(top))
		ops = append(ops, float64(top)/k)
		refs = append(refs, float64(tref)/k)
		if limit != nil {
			lims = append(lims, float64(timed(limit))/k)
		}
	}
	for _, m := range []struct {
		v    []float64
		unit string
	}{{r, "ratio"}, {ops, "op-ns"}, {refs, "ref-ns"}, {lims, "limit-ns"}} {
		if len(m.v) == 0 {
			continue
		}
		slices.Sort(m.v)
		b.ReportMetric(m.v[len(m.v)/2], m.unit)
	}
}

// BenchmarkScaling is issue 10's two-core test: two goroutines, each
// signing on its own connection, against one goroutine, for the engine
// (the connections sharing one MKT, or each with its own keyrings) and for
// the safe floor (two independent keyed MACs). A round times n calls on
// one goroutine and n calls on each of two at once; the speed-up is
// 2·t(one)/t(two). Rounds of engine and floor alternate; the metrics are
// the medians of each speed-up and "ratio", the engine's median over the
// floor's (≥ 0.95 is the target).
func BenchmarkScaling(b *testing.B) {
	for _, a := range mac.Algorithms() {
		for _, n := range []int{0, 1448} {
			for _, mode := range []string{"shared", "separate"} {
				b.Run(fmt.Sprintf("%s/%s/%d", benchName(a.Name()), mode, n+52), func(b *testing.B) {
					s1, s2, done := pairOps(b, a.Name(), n, mode == "shared")
					defer done()
					msg := bytesOf(aoCoveredFor(a.Name(), n), 2)
					// Two floors made one after the other would put their
					// states on shared cache lines (false sharing, which
					// the engine's per-connection lanes avoid): take the
					// first and the eighth of eight.
					var fs [8]func()
					for i := range fs {
						fs[i] = safeFloor(b, a, bytesOf(a.Size(), 1), msg)
					}
					f1, f2 := fs[0], fs[7]
					calls := 4000
					if n > 0 {
						calls = 600
					}
					var eng, flo []float64
					for b.Loop() {
						eng = append(eng, speedup(s1, s2, calls))
						flo = append(flo, speedup(f1, f2, calls))
					}
					slices.Sort(eng)
					slices.Sort(flo)
					me, mf := eng[len(eng)/2], flo[len(flo)/2]
					b.ReportMetric(me, "engine-x")
					b.ReportMetric(mf, "floor-x")
					b.ReportMetric(me/mf, "ratio")
				})
			}
		}
	}
}

// pairOps returns Sign of two client connections' data segments: on one
// keyring (their MKT shared) or each on its own.
func pairOps(b *testing.B, alg string, payload int, shared bool) (s1, s2 func(), done func()) {
	cring, sring := rings(b, alg)
	conns := make([]*ao.Conn, 2)
	ops := make([]func(), 2)
	for i := range conns {
		if !shared && i == 1 {
			cring, sring = rings(b, alg)
		}
		c, _ := establishedOn(b, cring, sring)
		conns[i] = c
		seg := fromTCP(b, client.Addr(), server.Addr(),
			tcpHeaderLen(macLenOf(alg), client.Port(), server.Port(), 1001, 5001, segment.ACK|segment.PSH, bytesOf(payload, 4)))
		ops[i] = func() {
			if err := c.Sign(&seg); err != nil {
				panic(err)
			}
		}
		ops[i]()
	}
	return ops[0], ops[1], func() { conns[0].Close(); conns[1].Close() }
}

// speedup times n calls of f1 alone, then n calls each of f1 and f2 on
// two goroutines at once, and returns 2·t(one)/t(two).
func speedup(f1, f2 func(), n int) float64 {
	t0 := time.Now()
	for range n {
		f1()
	}
	one := time.Since(t0)
	var wg sync.WaitGroup
	start := make(chan struct{})
	run := func(f func()) {
		defer wg.Done()
		<-start
		for range n {
			f()
		}
	}
	wg.Add(2)
	go run(f1)
	go run(f2)
	t0 = time.Now()
	close(start)
	wg.Wait()
	return 2 * float64(one) / float64(time.Since(t0))
}
