package prefixmap

import (
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

var (
	pfx  = netip.MustParsePrefix
	addr = netip.MustParseAddr
)

// lookup collects what Lookup visits, as "prefix=value".
func lookup(m *Map[string], a netip.Addr, tag uint32) string {
	var out []string
	m.Lookup(a, tag, func(p netip.Prefix, v string) bool {
		out = append(out, p.String()+"="+v)
		return true
	})
	return strings.Join(out, " ")
}

func overlaps(m *Map[string], p netip.Prefix, tag uint32) string {
	var out []string
	m.Overlaps(p, tag, func(p netip.Prefix, v string) bool {
		out = append(out, p.String()+"="+v)
		return true
	})
	return strings.Join(out, " ")
}

func overlapsWithin(m *Map[string], p netip.Prefix, tag uint32, lens Lengths) string {
	var out []string
	m.OverlapsWithin(p, tag, lens, func(p netip.Prefix, v string) bool {
		out = append(out, p.String()+"="+v)
		return true
	})
	return strings.Join(out, " ")
}

// TestLinuxMatching follows __tcp_ao_key_cmp() and tcp_md5_do_lookup():
// masked prefixes, 0-length prefixes per family,
// IPv4-mapped IPv6 as IPv4, longest prefix first, tags never cross.
func TestLinuxMatching(t *testing.T) {
	var m Map[string]
	for _, e := range []struct {
		p   string
		tag uint32
		v   string
	}{
		{"0.0.0.0/0", 1, "any4"},
		{"::/0", 1, "any6"},
		{"10.1.2.3/8", 1, "ten"}, // host bits set: stored as 10.0.0.0/8
		{"10.1.0.0/16", 1, "ten-one"},
		{"10.1.2.3/32", 1, "host"},
		{"10.1.2.3/32", 2, "host-tag2"},
		{"::ffff:192.0.2.0/120", 1, "mapped"}, // stored as 192.0.2.0/24
		{"2001:db8::/32", 1, "doc6"},
		{"2001:db8::1/128", 1, "host6"},
		{"10.1.0.0/16", 1, "ten-one-newer"},
	} {
		if err := m.Insert(pfx(e.p), e.tag, e.v); err != nil {
			t.Fatalf("Insert(%s): %v", e.p, err)
		}
	}
	for _, c := range []struct {
		addr string
		tag  uint32
		want string
	}{
		{"10.1.2.3", 1, "10.1.2.3/32=host 10.1.0.0/16=ten-one-newer 10.1.0.0/16=ten-one 10.0.0.0/8=ten 0.0.0.0/0=any4"},
		{"10.1.2.4", 1, "10.1.0.0/16=ten-one-newer 10.1.0.0/16=ten-one 10.0.0.0/8=ten 0.0.0.0/0=any4"},
		{"10.200.0.1", 1, "10.0.0.0/8=ten 0.0.0.0/0=any4"},
		{"192.0.2.77", 1, "192.0.2.0/24=mapped 0.0.0.0/0=any4"},
		{"::ffff:192.0.2.77", 1, "192.0.2.0/24=mapped 0.0.0.0/0=any4"}, // mapped address: IPv4, never ::/0
		{"::ffff:10.1.2.3", 2, "10.1.2.3/32=host-tag2"},
		{"10.1.2.3", 2, "10.1.2.3/32=host-tag2"},
		{"10.1.2.3", 3, ""}, // tag mismatch never matches
		{"2001:db8::1", 1, "2001:db8::1/128=host6 2001:db8::/32=doc6 ::/0=any6"},
		{"2001:db8::1%eth0", 1, "2001:db8::1/128=host6 2001:db8::/32=doc6 ::/0=any6"}, // zone ignored
		{"fe80::1", 1, "::/0=any6"},
		{"fe80::1", 2, ""},
	} {
		if got := lookup(&m, addr(c.addr), c.tag); got != c.want {
			t.Errorf("Lookup(%s, %d) = %q, want %q", c.addr, c.tag, got, c.want)
		}
	}
	if got := lookup(&m, netip.Addr{}, 1); got != "" {
		t.Errorf("Lookup(zero Addr) = %q, want nothing", got)
	}

	// Lookup stops when fn returns false: the longest match only, as
	// TCP-MD5 wants.
	var first []string
	m.Lookup(addr("10.1.2.3"), 1, func(p netip.Prefix, v string) bool {
		first = append(first, v)
		return false
	})
	if !slices.Equal(first, []string{"host"}) {
		t.Errorf("Lookup stopping after one value visited %q", first)
	}
}

func TestInvalidPrefix(t *testing.T) {
	var m Map[string]
	for _, p := range []netip.Prefix{{}, pfx("::ffff:10.0.0.0/95"), netip.PrefixFrom(addr("10.0.0.0"), 33)} {
		if err := m.Insert(p, 0, "x"); !errors.Is(err, ErrPrefix) {
			t.Errorf("Insert(%v) = %v, want ErrPrefix", p, err)
		}
		if _, ok := m.Delete(p, 0, nil); ok {
			t.Errorf("Delete(%v) found something", p)
		}
		m.Overlaps(p, 0, func(netip.Prefix, string) bool { t.Errorf("Overlaps(%v) visited", p); return true })
	}
	if m.Len() != 0 {
		t.Errorf("Len = %d after invalid inserts", m.Len())
	}
}

// TestDelete covers values sharing one (prefix, tag), such as TCP-MD5 keys
// that differ only by L3 index.
func TestDelete(t *testing.T) {
	var m Map[string]
	p := pfx("198.51.100.0/24")
	for _, v := range []string{"vrf0", "vrf1", "vrf2"} {
		m.Insert(p, 0, v)
	}
	m.Insert(p, 7, "other-tag")
	if _, ok := m.Delete(p, 0, func(v string) bool { return v == "vrf9" }); ok {
		t.Fatal("Delete matched a value that is not there")
	}
	if v, ok := m.Delete(pfx("198.51.100.9/24"), 0, func(v string) bool { return v == "vrf1" }); !ok || v != "vrf1" {
		t.Fatalf("Delete(vrf1) = %q, %v", v, ok)
	}
	if got, want := lookup(&m, addr("198.51.100.1"), 0), "198.51.100.0/24=vrf2 198.51.100.0/24=vrf0"; got != want {
		t.Fatalf("after Delete: %q, want %q", got, want)
	}
	if v, ok := m.Delete(p, 0, nil); !ok || v != "vrf2" { // nil: the newest
		t.Fatalf("Delete(nil) = %q, %v, want the newest", v, ok)
	}
	if v, ok := m.Delete(pfx("::ffff:198.51.100.0/120"), 0, nil); !ok || v != "vrf0" {
		t.Fatalf("Delete(mapped) = %q, %v", v, ok)
	}
	if _, ok := m.Delete(p, 0, nil); ok {
		t.Fatal("Delete on an empty (prefix, tag) succeeded")
	}
	if got := lookup(&m, addr("198.51.100.1"), 0); got != "" {
		t.Fatalf("after deleting everything, Lookup = %q", got)
	}
	if m.Len() != 1 || lookup(&m, addr("198.51.100.1"), 7) != "198.51.100.0/24=other-tag" {
		t.Fatal("Delete disturbed another tag")
	}
	if m.lens[ipv4][0].Load() != 1<<24 {
		t.Fatalf("lengths present = %#x, want only /24", m.lens[ipv4][0].Load())
	}
	m.Delete(p, 7, nil)
	if m.Len() != 0 || m.lens[ipv4][0].Load() != 0 || len(m.trees) != 0 {
		t.Fatal("empty Map keeps state")
	}
}

func TestOverlaps(t *testing.T) {
	var m Map[string]
	for _, e := range []struct {
		p   string
		tag uint32
	}{
		{"0.0.0.0/0", 1}, {"10.0.0.0/8", 1}, {"10.1.0.0/16", 1}, {"10.1.2.3/32", 1},
		{"10.1.200.0/24", 1}, {"10.2.0.0/16", 1}, {"11.0.0.0/8", 1}, {"10.1.0.0/16", 2},
		{"2001:db8::/32", 1}, {"2001:db8:1::/48", 1}, {"::/0", 1},
	} {
		m.Insert(pfx(e.p), e.tag, fmt.Sprint(e.tag))
	}
	for _, c := range []struct {
		p    string
		tag  uint32
		want string
	}{
		// both directions: containers longest first, then what lies inside
		{"10.1.0.0/16", 1, "10.1.0.0/16=1 10.0.0.0/8=1 0.0.0.0/0=1 10.1.2.3/32=1 10.1.200.0/24=1"},
		{"10.1.2.0/24", 1, "10.1.0.0/16=1 10.0.0.0/8=1 0.0.0.0/0=1 10.1.2.3/32=1"},
		{"10.0.0.0/7", 1, "0.0.0.0/0=1 10.0.0.0/8=1 10.1.0.0/16=1 10.1.2.3/32=1 10.1.200.0/24=1 10.2.0.0/16=1 11.0.0.0/8=1"},
		{"0.0.0.0/0", 1, "0.0.0.0/0=1 10.0.0.0/8=1 10.1.0.0/16=1 10.1.2.3/32=1 10.1.200.0/24=1 10.2.0.0/16=1 11.0.0.0/8=1"},
		{"10.1.0.0/16", 2, "10.1.0.0/16=2"},
		{"12.0.0.0/8", 2, ""},
		{"::ffff:10.1.2.3/128", 1, "10.1.2.3/32=1 10.1.0.0/16=1 10.0.0.0/8=1 0.0.0.0/0=1"},
		{"2001:db8::/16", 1, "::/0=1 2001:db8::/32=1 2001:db8:1::/48=1"},
		{"2001:db8:1:2::/64", 1, "2001:db8:1::/48=1 2001:db8::/32=1 ::/0=1"},
	} {
		if got := overlaps(&m, pfx(c.p), c.tag); got != c.want {
			t.Errorf("Overlaps(%s, %d) =\n %q, want\n %q", c.p, c.tag, got, c.want)
		}
	}
	n := 0
	m.Overlaps(pfx("0.0.0.0/0"), 1, func(netip.Prefix, string) bool { n++; return n < 3 })
	if n != 3 {
		t.Errorf("Overlaps went on after fn returned false: %d calls", n)
	}
}

func TestRange(t *testing.T) {
	var m Map[string]
	for _, e := range []struct {
		p   string
		tag uint32
		v   string
	}{
		{"2001:db8::/32", 0, "f"}, {"10.0.0.0/8", 5, "d"}, {"10.0.0.0/16", 0, "b"},
		{"10.0.0.0/8", 0, "a"}, {"9.0.0.0/8", 5, "c"}, {"::/0", 0, "e"}, {"10.0.0.0/8", 5, "d-newer"},
	} {
		m.Insert(pfx(e.p), e.tag, e.v)
	}
	var got []string
	m.Range(func(p netip.Prefix, tag uint32, v string) bool {
		got = append(got, v)
		return true
	})
	if want := []string{"a", "b", "c", "d-newer", "d", "e", "f"}; !slices.Equal(got, want) || m.Len() != len(want) {
		t.Errorf("Range = %q (Len %d), want %q", got, m.Len(), want)
	}
	n := 0
	m.Range(func(netip.Prefix, uint32, string) bool { n++; return false })
	if n != 1 {
		t.Errorf("Range went on after fn returned false: %d calls", n)
	}
}

// entry and the functions below are the obvious O(n) implementation the
// Map is checked against.
type entry struct {
	p   netip.Prefix
	tag uint32
	v   string
	seq int
}

func normal(p netip.Prefix) netip.Prefix {
	if p.Addr().Is4In6() {
		p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
	}
	return p.Masked()
}

func naiveLookup(es []entry, a netip.Addr, tag uint32) string {
	a = a.Unmap().WithZone("")
	var hit []entry
	for _, e := range es {
		if e.tag == tag && normal(e.p).Contains(a) {
			hit = append(hit, e)
		}
	}
	slices.SortFunc(hit, func(x, y entry) int {
		return cmp.Or(cmp.Compare(normal(y.p).Bits(), normal(x.p).Bits()), cmp.Compare(y.seq, x.seq))
	})
	return render(hit)
}

func naiveOverlaps(es []entry, p netip.Prefix, tag uint32) string {
	p = normal(p)
	var in, out []entry
	for _, e := range es {
		q := normal(e.p)
		switch {
		case e.tag != tag:
		case q.Bits() <= p.Bits() && q.Contains(p.Addr()):
			out = append(out, e)
		case q.Bits() > p.Bits() && p.Contains(q.Addr()):
			in = append(in, e)
		}
	}
	slices.SortFunc(out, func(x, y entry) int {
		return cmp.Or(cmp.Compare(normal(y.p).Bits(), normal(x.p).Bits()), cmp.Compare(y.seq, x.seq))
	})
	slices.SortFunc(in, func(x, y entry) int {
		return cmp.Or(normal(x.p).Addr().Compare(normal(y.p).Addr()), cmp.Compare(normal(x.p).Bits(), normal(y.p).Bits()), cmp.Compare(y.seq, x.seq))
	})
	return render(append(out, in...))
}

// naiveOverlapsWithin is naiveOverlaps among the entries whose
// (normalised) prefix length is in lens.
func naiveOverlapsWithin(es []entry, p netip.Prefix, tag uint32, lens Lengths) string {
	es = slices.DeleteFunc(slices.Clone(es), func(e entry) bool {
		b := normal(e.p).Bits()
		return b < lens.Min || b > lens.Max
	})
	return naiveOverlaps(es, p, tag)
}

func render(es []entry) string {
	var out []string
	for _, e := range es {
		out = append(out, normal(e.p).String()+"="+e.v)
	}
	return strings.Join(out, " ")
}

// randPrefix draws from a small space so prefixes nest and repeat.
func randPrefix(r *rand.Rand) netip.Prefix {
	switch r.IntN(3) {
	case 0:
		a := netip.AddrFrom4([4]byte{10, byte(r.IntN(4)), byte(r.IntN(4)), byte(r.IntN(4))})
		return netip.PrefixFrom(a, r.IntN(33))
	case 1:
		a := netip.AddrFrom16([16]byte{0: 0x20, 1: 0x01, 7: byte(r.IntN(4)), 15: byte(r.IntN(4))})
		return netip.PrefixFrom(a, r.IntN(129))
	default: // IPv4-mapped
		a := netip.AddrFrom16([16]byte{10: 0xff, 11: 0xff, 12: 10, 13: byte(r.IntN(4)), 15: byte(r.IntN(4))})
		return netip.PrefixFrom(a, 96+r.IntN(33))
	}
}

// TestAgainstNaive runs random inserts and deletes and compares every
// Lookup and Overlaps with the O(n) implementation, and checks the B-trees.
func TestAgainstNaive(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var m Map[string]
	var es []entry
	for i := range 1500 {
		p, tag := randPrefix(r), uint32(r.IntN(2))
		if r.IntN(3) > 0 || len(es) == 0 {
			v := fmt.Sprint(i)
			m.Insert(p, tag, v)
			es = append(es, entry{p, tag, v, i})
		} else {
			e := es[r.IntN(len(es))]
			got, ok := m.Delete(e.p, e.tag, func(v string) bool { return v == e.v })
			if !ok || got != e.v {
				t.Fatalf("Delete(%v, %d, %s) = %q, %v", e.p, e.tag, e.v, got, ok)
			}
			es = slices.DeleteFunc(es, func(x entry) bool { return x.v == e.v })
		}
		if m.Len() != len(es) {
			t.Fatalf("Len = %d, want %d", m.Len(), len(es))
		}
		a := randPrefix(r).Addr()
		if got, want := lookup(&m, a, tag), naiveLookup(es, a, tag); got != want {
			t.Fatalf("step %d: Lookup(%v, %d) =\n %q, want\n %q", i, a, tag, got, want)
		}
		if got, want := overlaps(&m, p, tag), naiveOverlaps(es, p, tag); got != want {
			t.Fatalf("step %d: Overlaps(%v, %d) =\n %q, want\n %q", i, p, tag, got, want)
		}
		top := []int{33, 129}[r.IntN(2)] // IPv4's lengths or all
		lo := r.IntN(top)
		lens := Lengths{lo, lo + r.IntN(top-lo)}
		if got, want := overlapsWithin(&m, p, tag, lens), naiveOverlapsWithin(es, p, tag, lens); got != want {
			t.Fatalf("step %d: OverlapsWithin(%v, %d, %v) =\n %q, want\n %q", i, p, tag, lens, got, want)
		}
	}
	for id, tr := range m.trees {
		checkBTree(t, id, tr)
	}
}

func TestLookupDoesNotAllocate(t *testing.T) {
	var m Map[*int]
	for i := range 256 {
		m.Insert(netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 0, byte(i), 0}), 24), 0, new(int))
	}
	m.Insert(pfx("0.0.0.0/0"), 0, new(int))
	m.Insert(pfx("10.0.0.0/8"), 0, new(int))
	a, n := addr("10.0.7.1"), 0
	allocs := testing.AllocsPerRun(1000, func() {
		m.Lookup(a, 0, func(p netip.Prefix, v *int) bool { n++; return true })
	})
	if allocs != 0 {
		t.Fatalf("Lookup allocates %v times, want 0", allocs)
	}
	if n != 1001*3 {
		t.Fatalf("Lookup visited %d values, want %d", n, 1001*3)
	}
}

// TestConcurrent runs lock-free lookups while writers insert and delete (run
// it with -race). Every value a reader sees must match the address and tag
// it asked for, in longest-first order; a value that is never deleted must
// always be found.
func TestConcurrent(t *testing.T) {
	type val struct {
		p   netip.Prefix
		tag uint32
	}
	var m Map[*val]
	always := &val{pfx("10.0.0.0/8"), 1}
	m.Insert(always.p, always.tag, always)
	var stop atomic.Bool
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 9))
			for i := 0; !stop.Load(); i++ {
				v := &val{netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(r.IntN(4)), byte(r.IntN(4)), byte(w)}), 8+r.IntN(25)), uint32(r.IntN(2))}
				v.p = v.p.Masked()
				m.Insert(v.p, v.tag, v)
				runtime.Gosched()
				if _, ok := m.Delete(v.p, v.tag, func(x *val) bool { return x == v }); !ok {
					t.Error("Delete did not find its own value")
				}
			}
		}()
	}
	readers := max(2, runtime.GOMAXPROCS(0))
	var rg sync.WaitGroup
	for i := range readers {
		rg.Add(1)
		go func() {
			defer rg.Done()
			r := rand.New(rand.NewPCG(uint64(i), 7))
			for range 20000 {
				a := netip.AddrFrom4([4]byte{10, byte(r.IntN(4)), byte(r.IntN(4)), byte(r.IntN(3))})
				tag, last, found := uint32(r.IntN(2)), 33, false
				m.Lookup(a, tag, func(p netip.Prefix, v *val) bool {
					if v.tag != tag || !v.p.Contains(a) || v.p != p || p.Bits() > last {
						t.Errorf("Lookup(%v, %d) visited %v tag %d after /%d", a, tag, v.p, v.tag, last)
					}
					last, found = p.Bits(), found || v == always
					return true
				})
				if tag == always.tag && !found {
					t.Errorf("Lookup(%v) missed a value that is never deleted", a)
				}
			}
		}()
	}
	rg.Wait()
	stop.Store(true)
	wg.Wait()
	if m.Len() != 1 {
		t.Fatalf("Len = %d after the writers removed their values", m.Len())
	}
}

// TestGhosts: a key whose last value is deleted stays in its B-tree (and
// its hash, with no value) for an Insert of it again, unseen by Lookup,
// Overlaps, Range and Delete; the ghosts stay within their bound as
// deletes go on, and an emptied Map keeps none.
func TestGhosts(t *testing.T) {
	var m Map[string]
	const n = 4096
	for i := range n {
		m.Insert(host(i), 0, fmt.Sprint(i))
	}
	m.Insert(pfx("10.0.0.0/8"), 0, "net")
	tr := m.trees[tree(0)]
	m.Delete(host(5), 0, nil)
	if tr.len != n+1 || m.Len() != n {
		t.Fatalf("after a delete: tree holds %d keys, Len %d", tr.len, m.Len())
	}
	if got := lookup(&m, host(5).Addr(), 0); got != "10.0.0.0/8=net" {
		t.Fatalf("Lookup of a deleted host: %q", got)
	}
	if got := overlaps(&m, pfx("10.0.0.0/29"), 0); strings.Contains(got, "10.0.0.5/32") {
		t.Fatalf("Overlaps sees a deleted host: %q", got)
	}
	m.Range(func(p netip.Prefix, _ uint32, _ string) bool {
		if p == host(5) {
			t.Fatal("Range visits a deleted host")
		}
		return true
	})
	if _, ok := m.Delete(host(5), 0, nil); ok {
		t.Fatal("Delete of a deleted host succeeded")
	}
	m.Insert(host(5), 0, "again")
	if tr.len != n+1 || lookup(&m, host(5).Addr(), 0) != "10.0.0.5/32=again 10.0.0.0/8=net" {
		t.Fatalf("Insert again: tree holds %d keys, Lookup %q", tr.len, lookup(&m, host(5).Addr(), 0))
	}
	for i := range n {
		m.Delete(host(i), 0, nil)
		limit := maxGhosts + m.Len()/8
		if len(m.ghosts) > limit || tr.len > m.Len()+limit || len(m.turns)-m.gone > 2*len(m.ghosts)+maxGhosts {
			t.Fatalf("%d values: %d ghosts, %d turns listed, tree of %d keys", m.Len(), len(m.ghosts), len(m.turns)-m.gone, tr.len)
		}
	}
	checkBTree(t, tree(0), tr)
	if m.lens[ipv4][0].Load() != 1<<8 { // the /8 only
		t.Fatal("a length with only ghosts is still probed")
	}
	m.Delete(pfx("10.0.0.0/8"), 0, nil)
	if len(m.trees) != 0 || m.ghosts != nil || m.turns != nil || m.lens[ipv4][0].Load() != 0 {
		t.Fatalf("emptied Map: %d trees, %d ghosts", len(m.trees), len(m.ghosts))
	}
}

// TestGhostChurn: keys deleted and inserted again, over and over, beside
// a ghost that is never given a value again: Lookup sees each as it is,
// after each delete the turns listed are within their bound, and once the Map's memory is
// warm a delete of a last value allocates nothing and its insert again
// only the new node.
func TestGhostChurn(t *testing.T) {
	var m Map[string]
	const n = 512
	for i := range n {
		m.Insert(host(i), 0, fmt.Sprint(i))
	}
	m.Delete(host(0), 0, nil) // a ghost for good
	for round := range 20 {
		for i := 1 + round%7; i < n; i += 7 {
			if _, ok := m.Delete(host(i), 0, nil); !ok {
				t.Fatalf("round %d: Delete of host %d failed", round, i)
			}
			if len(m.turns)-m.gone > 2*len(m.ghosts)+maxGhosts {
				t.Fatalf("%d turns listed for %d ghosts", len(m.turns)-m.gone, len(m.ghosts))
			}
			if got := lookup(&m, host(i).Addr(), 0); got != "" {
				t.Fatalf("round %d: deleted host %d: Lookup %q", round, i, got)
			}
			m.Insert(host(i), 0, "again")
			if got, want := lookup(&m, host(i).Addr(), 0), host(i).String()+"=again"; got != want {
				t.Fatalf("round %d: Lookup %q, want %q", round, got, want)
			}
		}
	}
	if _, ghost := m.ghosts[keyOfT(t, host(0))]; !ghost || lookup(&m, host(0).Addr(), 0) != "" {
		t.Fatal("the lasting ghost was lost or seen")
	}
	a := testing.AllocsPerRun(100, func() {
		m.Delete(host(3), 0, nil)
		m.Insert(host(3), 0, "again")
	})
	if a != 1 {
		t.Fatalf("a delete and its insert again allocate %v times, want 1 (the node)", a)
	}
}

func keyOfT(t *testing.T, p netip.Prefix) key {
	t.Helper()
	k, ok := keyOf(p, 0)
	if !ok {
		t.Fatalf("keyOf(%v) failed", p)
	}
	return k
}
