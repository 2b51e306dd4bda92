package sigpool

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/tcpsig/tcpsig/internal/cacheline"
	"github.com/tcpsig/tcpsig/mac"
)

func lookup(t testing.TB, name string) *mac.Algorithm {
	t.Helper()
	a, err := mac.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// allAlgorithms is every TCP-AO algorithm plus TCP-MD5's keyed MD5.
func allAlgorithms() []*mac.Algorithm { return append(mac.Algorithms(), mac.TCPMD5) }

// keyFor returns a traffic key suited to a: the digest length, as TCP-AO
// uses (16 bytes for AES-CMAC).
func keyFor(a *mac.Algorithm, seed byte) []byte {
	k := make([]byte, a.Size())
	for i := range k {
		k[i] = seed + byte(i)*7
	}
	return k
}

func template(t testing.TB, a *mac.Algorithm, raw []byte) *mac.Key {
	t.Helper()
	k := new(mac.Key)
	if err := k.Init(a, raw); err != nil {
		t.Fatal(err)
	}
	return k
}

// direct computes the MAC with the mac package alone.
func direct(t testing.TB, a *mac.Algorithm, raw, msg []byte) []byte {
	t.Helper()
	c := a.NewContext()
	if err := c.SetKey(raw); err != nil {
		t.Fatal(err)
	}
	c.Write(msg)
	return c.Finish(nil)
}

// sign computes the MAC through the pool.
func sign(t testing.TB, p *Pool, id ID, tmpl *mac.Key, raw, msg []byte) []byte {
	t.Helper()
	r := mustStart(p, id)
	defer r.End()
	if err := r.Key(tmpl); err != nil {
		t.Fatal(err)
	}
	r.MAC.Write(msg)
	return r.MAC.Finish(nil)
}

func TestRefcount(t *testing.T) {
	p := mustNew(Config{Shards: 3})
	sha256 := lookup(t, "hmac(sha256)")
	sha1 := lookup(t, "hmac(sha1)")
	id, err := p.Alloc(sha256, 60)
	if err != nil {
		t.Fatal(err)
	}
	id2, err := p.Alloc(sha256, 20)
	if err != nil || id2 != id {
		t.Fatalf("second Alloc of the same algorithm: %v, %v; want shared ID %v", id2, err, id)
	}
	id3, err := p.Alloc(lookup(t, "HMAC-SHA-1-96"), 0) // alias: same *Algorithm as hmac(sha1)
	if err != nil || id3 == id {
		t.Fatalf("Alloc of another algorithm: %v, %v", id3, err)
	}
	if id4, _ := p.Alloc(sha1, 0); id4 != id3 {
		t.Fatalf("alias and name got different IDs %v %v", id3, id4)
	}
	if id6, err := p.Alloc(sha256, 0); err != nil || id6 != id { // refs: 3
		t.Fatalf("third Alloc of the same algorithm: %v, %v; want shared ID %v", id6, err, id)
	}
	if n := entryRefs(p, id); n != 3 {
		t.Fatalf("%d references after three Allocs, want 3", n)
	}
	if entryAlgorithm(p, id) != sha256 || entryAlgorithm(p, id3) != sha1 {
		t.Fatal("entry's algorithm does not match")
	}
	for i := 0; i < 2; i++ {
		p.Release(id)
		if n := entryRefs(p, id); n != 2-i {
			t.Fatalf("after %d of 3 Releases: %d references, want %d", i+1, n, 2-i)
		}
		if entryAlgorithm(p, id) != sha256 {
			t.Fatalf("after %d of 3 Releases the entry is gone", i+1)
		}
		sign(t, p, id, template(t, sha256, []byte("k")), []byte("k"), nil) // still usable
	}
	kept := contexts(p, id)
	p.Release(id)
	if entryAlgorithm(p, id) != nil {
		t.Fatal("entry still held after the last Release")
	}
	idleWiped(t, p, id, sha256) // nothing key-derived left, Start refused
	// Release to zero, then Alloc again: the idle slot back, its wiped
	// contexts reused, working.
	id5, err := p.Alloc(sha256, 0)
	if err != nil || id5 != id {
		t.Fatalf("Alloc after the last Release: %v, %v; want the idle slot %v back", id5, err, id)
	}
	for i, c := range contexts(p, id5) {
		if c != kept[i] {
			t.Fatalf("shard %d: a new context for the idle slot taken back", i)
		}
	}
	raw := []byte("key")
	if got, want := sign(t, p, id5, template(t, sha256, raw), raw, []byte("m")), direct(t, sha256, raw, []byte("m")); !bytes.Equal(got, want) {
		t.Fatalf("after re-Alloc: %x want %x", got, want)
	}
	if r := mustStart(p, id5); len(r.Scratch) < 60 {
		t.Fatalf("scratch %d bytes, want >= 60 (grow-only across Release)", len(r.Scratch))
	} else {
		r.End()
	}
	p.Release(id5)
	p.Release(id3)
	p.Release(id3)
	idleWiped(t, p, id5, sha256)
	idleWiped(t, p, id3, sha1)
	for i := range p.entries {
		if e := p.entries[i]; e.refs != 0 || e.free != nil || p.live[i].Load() {
			t.Fatalf("slot %d held at the end: %+v", i, e)
		}
	}
}

func TestPoolFull(t *testing.T) {
	p := mustNew(Config{Shards: 2})
	p.limit = 3
	var ids []ID
	for _, name := range []string{"hmac(sha1)", "hmac(sha256)", "cmac(aes128)"} {
		id, err := p.Alloc(lookup(t, name), 0)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	_, err := p.Alloc(lookup(t, "hmac(md5)"), 0)
	if !errors.Is(err, ErrPoolFull) {
		t.Fatalf("Alloc into a full table: %v, want ErrPoolFull", err)
	}
	if id, err := p.Alloc(lookup(t, "hmac(sha256)"), 0); err != nil || id != ids[1] {
		t.Fatalf("sharing a held entry in a full table: %v %v", id, err)
	}
	p.Release(ids[1])
	p.Release(ids[1])
	if _, err := p.Alloc(lookup(t, "hmac(md5)"), 0); err != nil {
		t.Fatalf("Alloc after a slot was freed: %v", err)
	}
	t.Logf("full-table error: %v", err)
}

// TestTableFull fills the table with held entries (fewer slots than
// algorithms: the table is cut to len(allAlgorithms())-1): Alloc of one
// more algorithm is ErrPoolFull, a held entry is still shared; once every
// entry is idle (released, kept), Alloc of the missing algorithm takes
// one over, and the others stay idle, kept for their algorithms.
func TestTableFull(t *testing.T) {
	algs := allAlgorithms()
	p := mustNew(Config{Shards: 2})
	p.limit = len(algs) - 1
	ids := make([]ID, p.limit)
	for i, a := range algs[:p.limit] {
		id, err := p.Alloc(a, 0)
		if err != nil {
			t.Fatalf("slot %d: %v", i, err)
		}
		ids[i] = id
	}
	last := algs[p.limit]
	if _, err := p.Alloc(last, 0); !errors.Is(err, ErrPoolFull) {
		t.Fatalf("Alloc into a table of held entries: %v, want ErrPoolFull", err)
	}
	if id, err := p.Alloc(algs[0], 0); err != nil || id != ids[0] {
		t.Fatalf("a held entry must still be shared: %v %v", id, err)
	}
	p.Release(ids[0])
	for i, id := range ids {
		p.Release(id)
		idleWiped(t, p, id, algs[i])
	}
	id, err := p.Alloc(last, 0)
	if err != nil {
		t.Fatalf("Alloc into a table of idle entries: %v", err)
	}
	if r := mustStart(p, id); r.MAC.Algorithm() != last {
		t.Fatalf("the slot taken over has a context of %v, want %v", r.MAC.Algorithm(), last)
	} else {
		r.End()
	}
	raw := keyFor(last, 3)
	if got, want := sign(t, p, id, template(t, last, raw), raw, []byte("m")), direct(t, last, raw, []byte("m")); !bytes.Equal(got, want) {
		t.Fatalf("the slot taken over: %x want %x", got, want)
	}
	for i, old := range ids {
		if old != id {
			idleWiped(t, p, old, algs[i])
		}
	}
}

func TestBackend(t *testing.T) {
	for _, cfg := range []Backend{Clone, Rekey} {
		p := mustNew(Config{Shards: 2, Backend: cfg})
		for _, a := range allAlgorithms() {
			id, err := p.Alloc(a, 0)
			if err != nil {
				t.Fatal(err)
			}
			want := cfg
			if got := mustBackend(p, id); got != want {
				t.Errorf("pool %v, %s: backend %v, want %v", cfg, a, got, want)
			}
			r := mustStart(p, id)
			if r.MAC.Rekeys() != (want == Rekey) {
				t.Errorf("pool %v, %s: request's context re-keys %v", cfg, a, r.MAC.Rekeys())
			}
			r.End()
			c, err := p.Lease(id)
			if err != nil {
				t.Fatal(err)
			}
			if c.Rekeys() != (want == Rekey) {
				t.Errorf("pool %v, %s: leased context re-keys %v", cfg, a, c.Rekeys())
			}
			if err := p.Return(id, c); err != nil {
				t.Fatal(err)
			}
		}
	}
	if Clone.String() != "clone" || Rekey.String() != "rekey" || Backend(7).String() != "Backend(7)" {
		t.Fatal("Backend.String")
	}
}

// TestRFC4231 runs RFC 4231 test case 2's HMAC-SHA-256 (key 0x0b*20,
// "Hi There") through both backends and the mac package directly.
func TestRFC4231(t *testing.T) {
	want, _ := hex.DecodeString("b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7")
	raw := bytes.Repeat([]byte{0x0b}, 20)
	msg := []byte("Hi There")
	a := lookup(t, "hmac(sha256)")
	if got := direct(t, a, raw, msg); !bytes.Equal(got, want) {
		t.Fatalf("mac directly: %x", got)
	}
	tmpl := template(t, a, raw)
	for _, b := range []Backend{Clone, Rekey} {
		p := mustNew(Config{Shards: 2, Backend: b})
		id, err := p.Alloc(a, 60)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 3; i++ { // each use starts from the key, not from the last message
			if got := sign(t, p, id, tmpl, raw, msg); !bytes.Equal(got, want) {
				t.Fatalf("%v backend, use %d: %x want %x", b, i, got, want)
			}
		}
	}
}

// TestBackendsAgree checks every algorithm, both backends, against the mac
// package on random messages, switching keys between uses.
func TestBackendsAgree(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pools := []*Pool{mustNew(Config{Shards: 2, Backend: Clone}), mustNew(Config{Shards: 2, Backend: Rekey})}
	for _, a := range allAlgorithms() {
		ids := make([]ID, len(pools))
		for i, p := range pools {
			var err error
			if ids[i], err = p.Alloc(a, 60); err != nil {
				t.Fatal(err)
			}
		}
		for n := 0; n < 40; n++ {
			raw := keyFor(a, byte(n))
			tmpl := template(t, a, raw)
			msg := make([]byte, rng.IntN(300))
			for i := range msg {
				msg[i] = byte(rng.Uint32())
			}
			want := direct(t, a, raw, msg)
			for i, p := range pools {
				if got := sign(t, p, ids[i], tmpl, raw, msg); !bytes.Equal(got, want) {
					t.Fatalf("%s %v, %d-byte message: %x want %x", a, mustBackend(p, ids[i]), len(msg), got, want)
				}
			}
		}
	}
}

func TestKeyMismatch(t *testing.T) {
	sha1, sha256 := lookup(t, "hmac(sha1)"), lookup(t, "hmac(sha256)")
	for _, b := range []Backend{Clone, Rekey} {
		p := mustNew(Config{Shards: 1, Backend: b})
		id, _ := p.Alloc(sha256, 0)
		r := mustStart(p, id)
		if err := r.Key(template(t, sha1, []byte("k"))); !errors.Is(err, ErrKeyMismatch) {
			t.Errorf("%v: key of another algorithm: %v", b, err)
		}
		if err := r.Key(nil); !errors.Is(err, ErrKeyMismatch) {
			t.Errorf("%v: nil key: %v", b, err)
		}
		if err := r.Key(new(mac.Key)); !errors.Is(err, ErrKeyMismatch) {
			t.Errorf("%v: empty key: %v", b, err)
		}
		r.End()
	}
}

func TestScratchReservation(t *testing.T) {
	p := mustNew(Config{Shards: 2})
	id, _ := p.Alloc(lookup(t, "hmac(sha1)"), 60)
	for i := 0; i < 10; i++ {
		r := mustStart(p, id)
		if len(r.Scratch) < 60 {
			t.Fatalf("scratch %d", len(r.Scratch))
		}
		r.End()
	}
	id2, _ := p.Alloc(mac.TCPMD5, 200) // another user's larger reservation is every shard's
	_ = id2
	for i := 0; i < 10; i++ {
		r := mustStart(p, id)
		if len(r.Scratch) < 200 {
			t.Fatalf("scratch %d after a 200-byte reservation", len(r.Scratch))
		}
		r.End()
	}
}

// TestExclusive has more goroutines than shards Start, write their marker
// over the whole scratch, yield, check nobody else wrote it, and End (run
// with -race, which also sees any two users of one context). It also
// counts holders per shard.
func TestExclusive(t *testing.T) {
	const shards, workers, iters = 3, 16, 2000
	p := mustNew(Config{Shards: shards})
	a := lookup(t, "hmac(sha256)")
	id, _ := p.Alloc(a, 64)
	raw := []byte("traffic key")
	tmpl := template(t, a, raw)
	want := direct(t, a, raw, []byte("segment"))
	var holders [shards]atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(marker byte) {
			defer wg.Done()
			sum := make([]byte, 0, mac.MaxSize)
			for i := 0; i < iters; i++ {
				r := mustStart(p, id)
				if n := holders[r.sh.idx].Add(1); n != 1 {
					errs <- fmt.Errorf("shard %d has %d holders", r.sh.idx, n)
					return
				}
				for k := range r.Scratch {
					r.Scratch[k] = marker
				}
				if err := r.Key(tmpl); err != nil {
					errs <- err
					return
				}
				r.MAC.Write([]byte("seg"))
				if i%8 == 0 {
					runtime.Gosched() // let others try this shard while we hold it
				}
				r.MAC.Write([]byte("ment"))
				sum = r.MAC.Finish(sum[:0])
				for k := range r.Scratch {
					if r.Scratch[k] != marker {
						errs <- fmt.Errorf("scratch byte %d: %d wrote while %d held the shard", k, r.Scratch[k], marker)
						return
					}
				}
				holders[r.sh.idx].Add(-1)
				r.End()
				if !bytes.Equal(sum, want) {
					errs <- fmt.Errorf("MAC %x want %x", sum, want)
					return
				}
			}
		}(byte(w + 1))
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// TestReleaseWhileInUse drops the last reference while another goroutine
// is between Start and End: Release must return at once, the holder must
// finish its MAC undisturbed, and the context is wiped only after its End.
func TestReleaseWhileInUse(t *testing.T) {
	p := mustNew(Config{Shards: 2})
	a := lookup(t, "hmac(sha256)")
	id, _ := p.Alloc(a, 0)
	raw := []byte("key")
	tmpl := template(t, a, raw)
	want := direct(t, a, raw, []byte("before and after"))

	started, released, done := make(chan *Request), make(chan struct{}), make(chan []byte)
	go func() {
		r := mustStart(p, id)
		r.Key(tmpl)
		r.MAC.Write([]byte("before "))
		started <- r
		<-released
		r.MAC.Write([]byte("and after"))
		sum := r.MAC.Finish(nil)
		r.End()
		done <- sum
	}()
	r := <-started
	held := r.MAC
	p.Release(id) // must not wait for the holder: it only continues after this
	if entryAlgorithm(p, id) != nil {
		t.Fatal("released ID still reported held")
	}
	if _, err := p.Start(id); !errors.Is(err, ErrNotAllocated) {
		t.Fatalf("Start of a released ID: %v, want ErrNotAllocated", err)
	}
	// Another algorithm gets a free slot; the idle one, whose shard is
	// held, is neither its nor handed out again.
	if id2, err := p.Alloc(lookup(t, "hmac(sha1)"), 0); err != nil || id2 == id {
		t.Fatalf("Alloc of another algorithm: %v, %v (released slot %v)", id2, err, id)
	}
	if entryAlgorithm(p, id) != nil {
		t.Fatal("the idle slot was handed out again")
	}
	close(released)
	if sum := <-done; !bytes.Equal(sum, want) {
		t.Fatalf("holder's MAC %x want %x", sum, want)
	}
	p.cleanup.Wait()
	idleWiped(t, p, id, a) // the held context too, after its End
	if c := contexts(p, id); c[r.sh.idx] != held {
		t.Fatal("the held context was replaced, not wiped")
	}
}

// TestReleaseByHolder releases the last reference from the goroutine that
// holds a request of the same shard: it must not deadlock.
func TestReleaseByHolder(t *testing.T) {
	p := mustNew(Config{Shards: 1})
	a, b := lookup(t, "hmac(sha1)"), lookup(t, "hmac(md5)")
	ia, _ := p.Alloc(a, 0)
	ib, _ := p.Alloc(b, 0)
	r := mustStart(p, ia)
	p.Release(ib) // b's context is in the held shard: wiped after End
	if id, err := p.Alloc(b, 0); err != nil || id != ib {
		t.Fatalf("Alloc of b again: %v, %v; want its idle slot %v", id, err, ib)
	}
	p.Release(ia) // the held request's own entry, from its holder
	r.End()
	p.cleanup.Wait()
	idleWiped(t, p, ia, a)
	raw := keyFor(b, 1) // b, held again, still works after the late wipe
	if got, want := sign(t, p, ib, template(t, b, raw), raw, []byte("m")), direct(t, b, raw, []byte("m")); !bytes.Equal(got, want) {
		t.Fatalf("b after the wipe: %x want %x", got, want)
	}
	p.Release(ib)
	idleWiped(t, p, ib, b)
}

// TestMisuse: every careless call gets ErrNotAllocated or ErrBackend,
// never a panic; End of a request that is not held does nothing.
func TestMisuse(t *testing.T) {
	p := mustNew(Config{Shards: 2})
	id, _ := p.Alloc(lookup(t, "hmac(sha1)"), 0)
	r := mustStart(p, id)
	r.End()
	r.End()
	var zero Pool
	var nilPool *Pool
	_, errLease := p.Lease(id + 1)
	_, errStart := p.Start(id + 1)
	_, errNeg := p.Start(-1)
	_, errBeyond := p.StartHint(tableSize, 0)
	_, errZero := zero.Start(0)
	_, errNil := nilPool.Start(0)
	_, errZeroAlloc := zero.Alloc(lookup(t, "hmac(sha1)"), 0)
	for name, err := range map[string]error{
		"Start of a free slot":   errStart,
		"Start of a negative ID": errNeg,
		"Start beyond the table": errBeyond,
		"Start on a zero Pool":   errZero,
		"Start on a nil Pool":    errNil,
		"Alloc on a zero Pool":   errZeroAlloc,
		"Release of a free slot": p.Release(id + 1),
		"Lease of a free slot":   errLease,
		"Return to a free slot":  p.Return(id+1, nil),
	} {
		if !errors.Is(err, ErrNotAllocated) {
			t.Errorf("%s: %v, want ErrNotAllocated", name, err)
		}
	}
	if _, err := New(Config{Backend: 7}); !errors.Is(err, ErrBackend) {
		t.Errorf("New with a bad backend: %v", err)
	}
	var nilReq *Request
	nilReq.End()
	if err := nilReq.Key(nil); !errors.Is(err, ErrKeyMismatch) {
		t.Errorf("Key on a nil request: %v", err)
	}
}

// TestAllocs: Start, Key, Write, Sum into a reused buffer and End allocate
// nothing, with both backends, except Rekey for AES-CMAC (crypto/aes
// allocates its key schedule).
func TestAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are meaningless under the race detector")
	}
	msg := make([]byte, 1496)
	sum := make([]byte, 0, mac.MaxSize)
	for _, b := range []Backend{Clone, Rekey} {
		p := mustNew(Config{Shards: 2, Backend: b})
		for _, a := range allAlgorithms() {
			id, _ := p.Alloc(a, 60)
			raw := keyFor(a, 1)
			tmpl := template(t, a, raw)
			n := testing.AllocsPerRun(200, func() {
				r := mustStart(p, id)
				if err := r.Key(tmpl); err != nil {
					panic(err)
				}
				r.MAC.Write(r.Scratch[:60])
				r.MAC.Write(msg)
				sum = r.MAC.Finish(sum[:0])
				r.End()
			})
			switch {
			case a.IsCMAC() && mustBackend(p, id) == Rekey:
				t.Logf("%s %v: %v allocs per use (the AES key schedule)", a, b, n)
			case n != 0:
				t.Errorf("%s %v: %v allocs per use, want 0", a, mustBackend(p, id), n)
			}
		}
	}
}

// TestLayout checks the padding that keeps shards off each other's lines.
func TestLayout(t *testing.T) {
	var sh shard
	if off := unsafe.Offsetof(sh.mu); off < cacheline.Size {
		t.Fatalf("shard state starts %d bytes in", off)
	}
	end := unsafe.Offsetof(sh.reqs) + unsafe.Sizeof(sh.reqs)
	if tail := unsafe.Sizeof(sh) - end; tail < cacheline.Size {
		t.Fatalf("only %d bytes after the shard state", tail)
	}
	t.Logf("shard: %d bytes", unsafe.Sizeof(sh))
}

func TestDefault(t *testing.T) {
	n := len(Default.shards) // read-only after New
	if n != runtime.GOMAXPROCS(0) {
		t.Logf("Default: %d shards, GOMAXPROCS %d", n, runtime.GOMAXPROCS(0))
	}
	if n < 1 {
		t.Fatal("no shards")
	}
}

func mustNew(cfg Config) *Pool {
	p, err := New(cfg)
	if err != nil {
		panic(err)
	}
	return p
}

func mustStart(p *Pool, id ID) *Request { return mustStartHint(p, id, rand.Uint32()) }

func mustStartHint(p *Pool, id ID, hint uint32) *Request {
	r, err := p.StartHint(id, hint)
	if err != nil {
		panic(err)
	}
	return r
}

// TestLease leases a context, returns it and leases again: the second
// lease reuses the wiped context; a lease keeps the entry held past the
// last Release, and Return then makes the slot idle.
func TestLease(t *testing.T) {
	p := mustNew(Config{Shards: 2})
	sha1 := lookup(t, "hmac(sha1)")
	id, err := p.Alloc(sha1, 0)
	if err != nil {
		t.Fatal(err)
	}
	c, err := p.Lease(id)
	if err != nil || c.Algorithm() != sha1 {
		t.Fatalf("Lease: %v, %v", c, err)
	}
	tmpl := template(t, sha1, []byte("k"))
	want, _ := sha1.NewContext().Compute(tmpl, nil, []byte("msg"))
	if got, err := c.Compute(tmpl, nil, []byte("msg")); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("leased context: %x, %v; want %x", got, err, want)
	}
	if err := p.Return(id, c); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write([]byte("x")); !errors.Is(err, mac.ErrNoKey) {
		t.Fatalf("returned context not wiped: Write gives %v", err)
	}
	c2, err := p.Lease(id)
	if err != nil || c2 != c {
		t.Fatalf("second Lease: %p, %v; want the returned %p", c2, err, c)
	}
	if err := p.Return(id+1, c2); !errors.Is(err, ErrNotAllocated) {
		t.Fatalf("Return to an ID not held: %v", err)
	}
	other, _ := p.Alloc(lookup(t, "hmac(sha256)"), 0)
	if err := p.Return(other, c2); !errors.Is(err, ErrKeyMismatch) {
		t.Fatalf("Return to another algorithm's ID: %v", err)
	}
	if err := p.Release(id); err != nil {
		t.Fatal(err)
	}
	if entryAlgorithm(p, id) != sha1 || entryRefs(p, id) != 1 {
		t.Fatal("a leased context's entry was freed by the last Release")
	}
	if err := p.Return(id, c2); err != nil {
		t.Fatal(err)
	}
	if entryAlgorithm(p, id) != nil {
		t.Fatal("entry still held after the last lease came back")
	}
	idleWiped(t, p, id, sha1) // Lease of it is ErrNotAllocated too
	var nilPool *Pool
	if _, err := nilPool.Lease(0); !errors.Is(err, ErrNotAllocated) {
		t.Fatal(err)
	}
	if err := nilPool.Return(0, nil); !errors.Is(err, ErrNotAllocated) {
		t.Fatal(err)
	}
}
