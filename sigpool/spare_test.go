package sigpool

import (
	"bytes"
	"testing"
)

// TestSpare documents what the pool does with a request's Spare key.
// End does not touch it: a holder that keyed Spare and ended without
// wiping leaves the key in the request, and the next Start of that shard
// hands the same request out with the key still in it, which is why the
// holder wipes it before End. The pool wipes it (shard.wipe, with the
// context, which it keeps for the idle slot) when the last reference of
// the entry goes (Release, or Return of the last lease), at once for a
// shard nobody holds, and after its holder's End for one that is held;
// and when another algorithm takes the idle slot over (shard.drop).
func TestSpare(t *testing.T) {
	msg := []byte("a handshake segment")

	// keySpare keys r.Spare for a with raw on the request's own context,
	// as a holder deriving a traffic key does, and checks that a MAC
	// under it is right.
	keySpare := func(t *testing.T, r *Request, raw []byte) {
		t.Helper()
		a := r.MAC.Algorithm()
		if err := r.MAC.Schedule(&r.Spare, raw); err != nil {
			t.Fatal(err)
		}
		if err := r.Key(&r.Spare); err != nil {
			t.Fatal(err)
		}
		r.MAC.Write(msg)
		if got, want := r.MAC.Finish(nil), direct(t, a, raw, msg); !bytes.Equal(got, want) {
			t.Fatalf("%s: MAC under Spare %x, want %x", a, got, want)
		}
	}

	t.Run("End leaves it to the holder", func(t *testing.T) {
		p := mustNew(Config{Shards: 1})
		a := lookup(t, "hmac(sha256)")
		id, err := p.Alloc(a, 0)
		if err != nil {
			t.Fatal(err)
		}
		r := mustStart(p, id)
		keySpare(t, r, keyFor(a, 1))
		r.End() // without wiping Spare
		if r.Spare.Empty() || r.Spare.Algorithm() != a {
			t.Fatal("End wiped Spare: it is the holder's to wipe")
		}
		r2 := mustStart(p, id) // the one shard: the same request
		if r2 != r {
			t.Fatalf("one shard, two requests for one ID: %p %p", r, r2)
		}
		if r2.Spare.Empty() {
			t.Fatal("Start wiped Spare: the previous holder's key is expected to be there")
		}
		r2.Spare.Wipe() // what a holder does before End
		r2.End()
		if !r.Spare.Empty() {
			t.Fatal("Spare not empty after its holder wiped it")
		}
	})

	t.Run("the last Release wipes it", func(t *testing.T) {
		for _, a := range allAlgorithms() {
			p := mustNew(Config{Shards: 2})
			id, err := p.Alloc(a, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := p.Alloc(a, 0); err != nil { // a second reference
				t.Fatal(err)
			}
			for i := range p.shards { // key every shard's Spare, End without wiping
				r := mustStartHint(p, id, uint32(i)<<31) // 2 shards: hint i<<31 is shard i
				if r.sh.idx != i {
					t.Fatalf("hint for shard %d gave shard %d", i, r.sh.idx)
				}
				keySpare(t, r, keyFor(a, byte(i+1)))
				r.End()
			}
			if err := p.Release(id); err != nil {
				t.Fatal(err)
			}
			for i := range p.shards {
				if p.shards[i].reqs[id].Spare.Empty() {
					t.Fatalf("%s: shard %d's Spare wiped while the entry is still held", a, i)
				}
			}
			if err := p.Release(id); err != nil { // the last reference: drop on every shard
				t.Fatal(err)
			}
			if entryAlgorithm(p, id) != nil {
				t.Fatalf("%s: entry still held after the last Release", a)
			}
			idleWiped(t, p, id, a) // every Spare empty, every context keyless
		}
	})

	t.Run("a Release while held wipes it after End", func(t *testing.T) {
		p := mustNew(Config{Shards: 1})
		a := lookup(t, "hmac(sha1)")
		id, err := p.Alloc(a, 0)
		if err != nil {
			t.Fatal(err)
		}
		r := mustStart(p, id)
		raw := keyFor(a, 7)
		keySpare(t, r, raw)
		if err := p.Release(id); err != nil { // the last reference, from the holder
			t.Fatal(err)
		}
		if r.Spare.Empty() {
			t.Fatal("Release wiped a held request's Spare under its holder")
		}
		keySpare(t, r, raw) // still the holder's, still usable
		r.End()             // without wiping: the cleanup waiting for this End does
		p.cleanup.Wait()
		idleWiped(t, p, id, a) // Spare empty, context keyless
	})
}
