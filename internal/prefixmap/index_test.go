package prefixmap

import (
	"math/rand/v2"
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"
)

// checkIndex checks x against want: every key of want is found with its
// node, the counts agree, no slot holds a node under another key's hash,
// and the table is at most half used.
func checkIndex(t *testing.T, x *index[int], want map[key]*node[int]) {
	t.Helper()
	for k, n := range want {
		if got := x.load(&k); got != n {
			t.Fatalf("load(%v) = %p, want %p", k.prefix(), got, n)
		}
	}
	if x.live != len(want) {
		t.Fatalf("live = %d, want %d", x.live, len(want))
	}
	tab := x.tab.Load()
	if tab == nil {
		return
	}
	live, used := 0, 0
	for i := range tab.slots {
		s := &tab.slots[i]
		h, n := s.hash.Load(), s.node.Load()
		if h == 0 {
			if n != nil {
				t.Fatalf("slot %d: a node without a hash", i)
			}
			continue
		}
		used++
		if n == tab.tomb {
			continue
		}
		live++
		if h != tab.hash(&n.key) {
			t.Fatalf("slot %d: hash %x, the node's key hashes to %x", i, h, tab.hash(&n.key))
		}
		if want[n.key] != n {
			t.Fatalf("slot %d holds %v, which is not in the index", i, n.key.prefix())
		}
	}
	if live != x.live || used != x.used {
		t.Fatalf("slots: %d live, %d used; counted %d, %d", live, used, x.live, x.used)
	}
	if used*2 > len(tab.slots) {
		t.Fatalf("%d of %d slots used", used, len(tab.slots))
	}
}

// TestIndexAgainstMap runs random stores (new keys and replacements) and
// removes over a small key space, so that probe chains form, break at
// tombstones and get rebuilt, and checks the index against a Go map after
// each change.
func TestIndexAgainstMap(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	var x index[int]
	want := map[key]*node[int]{}
	keyN := func(i int) key {
		k, _ := keyOf(netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 0, byte(i >> 8), byte(i)}), 24+i%9), uint32(i%3))
		return k
	}
	if x.load(new(keyN(1))) != nil || x.remove(new(keyN(1))) != nil {
		t.Fatal("the zero index is not empty")
	}
	for step := range 20000 {
		space := 40
		if step > 10000 {
			space = 600 // grow past the first tables
		}
		k := keyN(r.IntN(space))
		if r.IntN(3) == 0 {
			got := x.remove(&k)
			if got != want[k] {
				t.Fatalf("step %d: remove(%v) = %p, want %p", step, k.prefix(), got, want[k])
			}
			delete(want, k)
		} else {
			n := &node[int]{key: k}
			if got := x.store(n); got != want[k] {
				t.Fatalf("step %d: store(%v) replaced %p, want %p", step, k.prefix(), got, want[k])
			}
			want[k] = n
		}
		if step%97 == 0 || step > 19900 {
			checkIndex(t, &x, want)
		}
		if x.load(&k) != want[k] {
			t.Fatalf("step %d: load(%v) after the change", step, k.prefix())
		}
	}
	checkIndex(t, &x, want)
}

// TestIndexChurnDoesNotGrow: removing and storing keys again at a steady
// size reuses tombstones and rebuilds at the same size; the table does not
// grow with the number of changes.
func TestIndexChurnDoesNotGrow(t *testing.T) {
	var x index[int]
	var ks []key
	for i := range 1000 {
		k, _ := keyOf(host(i), 0)
		ks = append(ks, k)
		x.store(&node[int]{key: k})
	}
	size := len(x.tab.Load().slots)
	r := rand.New(rand.NewPCG(7, 8))
	for range 100000 {
		k := ks[r.IntN(len(ks))]
		if x.remove(&k) == nil {
			t.Fatal("remove missed a stored key")
		}
		x.store(&node[int]{key: k})
	}
	if got := len(x.tab.Load().slots); got > size {
		t.Fatalf("table grew from %d to %d slots under churn", size, got)
	}
	if x.live != len(ks) {
		t.Fatalf("live = %d", x.live)
	}
}

// TestConcurrentGrowth runs lock-free lookups while a writer inserts
// thousands of prefixes, rebuilding the index many times, and deletes
// some again (run it with -race): a reader always finds every prefix
// inserted before its lookup started and never deleted.
func TestConcurrentGrowth(t *testing.T) {
	const n = 20000
	var m Map[int]
	var inserted atomic.Int64 // values 0 .. inserted-1 are in the Map, the odd ones until deleted
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range n {
			if err := m.Insert(host(i), 0, i); err != nil {
				t.Error(err)
				return
			}
			inserted.Store(int64(i + 1))
			if i%512 == 0 {
				runtime.Gosched()
			}
		}
		for i := 1; i < n; i += 2 {
			if _, ok := m.Delete(host(i), 0, nil); !ok {
				t.Errorf("Delete(%v) found nothing", host(i))
			}
		}
	}()
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 3))
			for range 100000 {
				upto := int(inserted.Load())
				if upto == 0 {
					continue
				}
				i := r.IntN(upto) &^ 1 // the even ones are never deleted
				found := false
				m.Lookup(host(i).Addr(), 0, func(p netip.Prefix, v int) bool {
					found = v == i && p == host(i)
					return false
				})
				if !found {
					t.Errorf("Lookup(%v) missed a value inserted before it", host(i).Addr())
					return
				}
			}
		}()
	}
	wg.Wait()
	if m.Len() != n/2 {
		t.Fatalf("Len = %d, want %d", m.Len(), n/2)
	}
}

// TestEmptyMapStaysSmall: a Map allocates its hashes on its first Insert;
// reads and deletes on an empty Map leave it as small as its zero value,
// which a keyring may make for every add (a batch's own clash check).
func TestEmptyMapStaysSmall(t *testing.T) {
	var m Map[int]
	if size := unsafe.Sizeof(m); size > 256 {
		t.Errorf("a Map is %d bytes", size)
	}
	m.Lookup(addr("10.0.0.1"), 0, func(netip.Prefix, int) bool { return true })
	m.Overlaps(pfx("10.0.0.0/8"), 0, func(netip.Prefix, int) bool { return true })
	m.Delete(pfx("10.0.0.0/8"), 0, nil)
	m.Range(func(netip.Prefix, uint32, int) bool { return true })
	if m.idx.Load() != nil {
		t.Fatal("reads of an empty Map allocated its hashes")
	}
	m.Insert(pfx("10.0.0.0/8"), 0, 1)
	if m.idx.Load() == nil || lookupInts(&m, addr("10.1.2.3")) != 1 {
		t.Fatal("Insert into the zero Map")
	}
}

func lookupInts(m *Map[int], a netip.Addr) int {
	n := 0
	m.Lookup(a, 0, func(netip.Prefix, int) bool { n++; return true })
	return n
}
