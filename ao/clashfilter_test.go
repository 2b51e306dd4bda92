package ao

import (
	"errors"
	"math/rand/v2"
	"net/netip"
	"testing"

	"github.com/tcpsig/tcpsig/keys"
)

// TestAddClashByEachID: the overlap check runs whenever an MKT of the
// new one's family has its SendID or its RecvID, and is skipped only when
// none has either (idCounts): a clash through either ID, through an
// IPv4-mapped prefix, and after deletes is still refused.
func TestAddClashByEachID(t *testing.T) {
	r := NewKeyring(nil)
	net8 := mustAdd(t, r, cfg4("10.0.0.0/8", 1, 2))
	for _, c := range []struct {
		name string
		cfg  keys.AO
		want error
	}{
		{"other family, same IDs", cfg4("::/0", 1, 2), nil},
		{"covering, same SendID", cfg4("0.0.0.0/0", 1, 9), ErrKeyExists},
		{"covering, same RecvID", cfg4("0.0.0.0/0", 9, 2), ErrKeyExists},
		{"covered, same SendID", cfg4("10.1.2.3/32", 1, 9), ErrKeyExists},
		{"covered, same RecvID", cfg4("10.1.0.0/16", 9, 2), ErrKeyExists},
		{"v4-mapped, same RecvID", cfg4("::ffff:10.1.0.0/112", 9, 2), ErrKeyExists},
		{"IDs of no MKT of the family", cfg4("0.0.0.0/0", 3, 4), nil},
		{"IPv6, the catch-all's SendID", cfg4("2001:db8::1/128", 1, 7), ErrKeyExists},
	} {
		if _, err := r.Add(c.cfg); !errors.Is(err, c.want) {
			t.Fatalf("%s: Add(%v): %v, want %v", c.name, c.cfg.Peer, err, c.want)
		}
	}
	// The /8 gone, its IDs are free for the family but the catch-all's.
	if err := r.Delete(net8, DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Add(cfg4("10.0.0.0/8", 1, 2)); err != nil {
		t.Fatalf("re-add after delete: %v", err)
	}
	if _, err := r.Add(cfg4("10.0.0.0/8", 3, 5)); !errors.Is(err, ErrKeyExists) {
		t.Fatalf("SendID of the catch-all: %v, want ErrKeyExists", err)
	}
}

// TestIDCountsFollowTheKeyring: through random adds (some refused),
// AddAlls and deletes, the counts stay those of the keyring's MKTs, and
// the filtered check decides every add as the full check does.
func TestIDCountsFollowTheKeyring(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	prefixes := []string{"0.0.0.0/0", "10.0.0.0/8", "10.1.0.0/16", "10.1.2.0/24", "10.1.2.3/32", "192.0.2.0/24",
		"::ffff:10.1.0.0/112", "::/0", "2001:db8::/32", "2001:db8::1/128"}
	random := func() keys.AO {
		c := cfg4(prefixes[rng.IntN(len(prefixes))], uint8(rng.IntN(4)), uint8(rng.IntN(4)))
		if rng.IntN(4) == 0 {
			c.IfIndex, c.HasIfIndex = rng.IntN(2), true
		}
		return c
	}
	r := NewKeyring(nil)
	var in []*MKT
	for step := range 2000 {
		switch op := rng.IntN(10); {
		case op < 5:
			c := random()
			m, err := newMKT(&c)
			if err != nil {
				t.Fatal(err)
			}
			r.mu.Lock()
			filtered, full := r.clash(m), clash(&r.byPeer, m)
			r.mu.Unlock()
			if (filtered == nil) != (full == nil) {
				t.Fatalf("step %d: %v: filtered check %v, full check %v", step, m, filtered, full)
			}
			m.guard.Retire(m.wipe)
			if m, err := r.Add(c); err == nil {
				in = append(in, m)
			} else if !errors.Is(err, ErrKeyExists) {
				t.Fatal(err)
			}
		case op < 6:
			if ms, err := r.AddAll([]keys.AO{random(), random()}, nil); err == nil {
				in = append(in, ms...)
			}
		case len(in) > 0:
			i := rng.IntN(len(in))
			if err := r.Delete(in[i], DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			in[i] = in[len(in)-1]
			in = in[:len(in)-1]
		}
		checkIDCounts(t, r, step)
	}
}

// checkIDCounts fails t unless r.ids counts exactly r's MKTs, each count
// with a range of prefix lengths that holds those of its MKTs.
func checkIDCounts(t *testing.T, r *Keyring, step int) {
	t.Helper()
	var want idCounts
	r.byPeer.Range(func(_ netip.Prefix, _ uint32, e entry) bool {
		want.count(e.m)
		return true
	})
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ids == nil {
		if want.n != (idCounts{}).n {
			t.Fatalf("step %d: no ID counts for %d MKTs", step, r.Len())
		}
		return
	}
	if r.ids.n != want.n {
		t.Fatalf("step %d: the ID counts are not those of the keyring's %d MKTs", step, r.Len())
	}
	for f := range want.n {
		for kind := range want.n[f] {
			for id, n := range want.n[f][kind] {
				if n != 0 && (r.ids.min[f][kind][id] > want.min[f][kind][id] || r.ids.max[f][kind][id] < want.max[f][kind][id]) {
					t.Fatalf("step %d: family %d, kind %d, ID %d: lengths %d-%d, the MKTs' %d-%d", step, f, kind, id,
						r.ids.min[f][kind][id], r.ids.max[f][kind][id], want.min[f][kind][id], want.max[f][kind][id])
				}
			}
		}
	}
}

// TestAddClashAtEachLength: with MKTs at every length of a chain of
// nested prefixes (IDs of their own, so that every length is present in
// the index), an MKT at one length and one at another that share an ID clash,
// whichever is added first: the lengths the check skips are never those
// of a clashing MKT.
func TestAddClashAtEachLength(t *testing.T) {
	for _, chain := range [][]string{
		{"0.0.0.0/0", "10.0.0.0/8", "10.1.0.0/16", "10.1.2.0/24", "10.1.2.3/32"},
		{"::/0", "2001:db8::/32", "2001:db8::/64", "2001:db8::/127", "2001:db8::1/128"},
	} {
		for i, a := range chain {
			for j, b := range chain {
				if i == j {
					continue
				}
				r := NewKeyring(nil)
				for k, p := range chain {
					if k != i && k != j {
						mustAdd(t, r, cfg4(p, uint8(20+2*k), uint8(21+2*k)))
					}
				}
				mustAdd(t, r, cfg4(a, 7, 8))
				for _, c := range []keys.AO{cfg4(b, 7, 9), cfg4(b, 9, 8)} {
					if _, err := r.Add(c); !errors.Is(err, ErrKeyExists) {
						t.Errorf("%v (%d, %d) beside %v (7, 8): %v, want ErrKeyExists", c.Peer, c.SendID, c.RecvID, a, err)
					}
				}
				if _, err := r.Add(cfg4(b, 9, 10)); err != nil {
					t.Errorf("%v (9, 10) beside %v (7, 8): %v", b, a, err)
				}
			}
		}
	}
}
