package md5sig

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/segment"
	"github.com/tcpsig/tcpsig/sigpool"
)

// Signers and verifiers run while keys are added, replaced and deleted
// synchronously and asynchronously. Every digest Sign produces is checked
// against crypto/md5 under each key that may legitimately have been
// chosen, and Verify is given segments whose only possible keys all have
// the same bytes, so a digest computed from wiped or half-wiped key bytes
// (or a key freed under a reader) shows up as a mismatch, and the race
// detector sees any unsynchronised access to key bytes.
func TestConcurrentKeyChanges(t *testing.T) {
	pool, _ := sigpool.New(sigpool.Config{Shards: 2}) // fewer shards than goroutines: Start contends too
	r := NewKeyring(pool)
	local := addr("192.0.2.1")
	const (
		nSign   = 6               // 10.0.0.1..6: host keys, a /24 key and a /24 key bound to L3 3, all different
		nVerify = 6               // 10.0.1.1..6: host keys only, and a key bound to L3 3 with the same bytes
		stable  = "10.0.1.100"    // only ever replaced (same bytes), never deleted: always has a key
		vrf     = 3               // the L3 index of the bound keys
		writes  = 3000            // operations per writer
		signNet = "10.0.0.0/24"   // covers the signers' peers
		signAny = "10.0.0.128/25" // covers none of them
	)
	keyBytes := func(name string) []byte {
		// Lengths from 1 to 80, contents distinct per name.
		n := 1 + int(crc(name))%keys.MaxKeyLen
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(crc(name) >> (i % 4 * 8))
			b[i] ^= byte(i)
		}
		return b
	}
	signPeer := func(i int) netip.Addr { return netip.AddrFrom4([4]byte{10, 0, 0, byte(i + 1)}) }
	verifyPeer := func(i int) netip.Addr { return netip.AddrFrom4([4]byte{10, 0, 1, byte(i + 1)}) }
	hostKey := func(a netip.Addr) []byte { return keyBytes("host " + a.String()) }
	netKey, vrfKey := keyBytes("net"), keyBytes("vrf")

	mustAdd(t, r, keys.MD5{Peer: pfx(stable + "/32"), Key: hostKey(addr(stable))})
	mustAdd(t, r, keys.MD5{Peer: pfx(signAny), Key: keyBytes("unused")})

	var (
		stop                    atomic.Bool
		wg, writers             sync.WaitGroup
		signed, verified, noKey atomic.Int64
		syncDel, asyncDel, repl atomic.Int64
	)
	fail := func(format string, args ...any) {
		t.Errorf(format, args...)
		stop.Store(true)
	}

	// Writers.
	for w := range 2 {
		writers.Add(1)
		go func() {
			defer writers.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for n := 0; n < writes && !stop.Load(); n++ {
				var cfg keys.MD5
				switch rng.IntN(5) {
				case 0, 1:
					a := signPeer(rng.IntN(nSign))
					cfg = keys.MD5{Peer: netip.PrefixFrom(a, 32), Key: hostKey(a)}
				case 2:
					a := verifyPeer(rng.IntN(nVerify))
					cfg = keys.MD5{Peer: netip.PrefixFrom(a, 32), Key: hostKey(a)}
					if rng.IntN(2) == 0 {
						cfg.IfIndex, cfg.HasIfIndex = vrf, true
					}
				case 3:
					cfg = keys.MD5{Peer: pfx(signNet), Key: netKey}
					if rng.IntN(2) == 0 {
						cfg.Key, cfg.IfIndex, cfg.HasIfIndex = vrfKey, vrf, true
					}
				case 4:
					cfg = keys.MD5{Peer: pfx(stable + "/32"), Key: hostKey(addr(stable))}
					if _, err := r.Add(cfg); err != nil {
						fail("replace: %v", err)
					}
					repl.Add(1)
					continue
				}
				if k := r.Find(cfg.Peer, cfg.IfIndex, cfg.HasIfIndex); k != nil && rng.IntN(3) > 0 {
					async := rng.IntN(2) == 0
					switch err := r.Delete(k, DeleteOptions{Async: async}); {
					case errors.Is(err, ErrNoSuchKey): // the other writer got there first
					case err != nil:
						fail("Delete: %v", err)
					case async:
						asyncDel.Add(1)
					default:
						syncDel.Add(1)
					}
					continue
				}
				if _, err := r.Add(cfg); err != nil {
					fail("Add: %v", err)
				}
			}
		}()
	}

	// Signers: any digest must be one of the keys that could have been
	// chosen for the peer in that domain.
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 2))
			payload := make([]byte, 4096) // long enough that a delete often lands mid-digest
			for !stop.Load() {
				a := signPeer(rng.IntN(nSign))
				l3 := 0
				if rng.IntN(2) == 0 {
					l3 = vrf
				}
				p := payload[:rng.IntN(len(payload))]
				for i := range p {
					p[i] = byte(rng.Uint32())
				}
				seg := mustSeg(t, local, a, tcpHeader(179, 40000, rng.Uint32(), rng.Uint32(), segment.ACK, true), p)
				err := r.Sign(&seg, l3)
				if errors.Is(err, ErrNoKey) {
					noKey.Add(1)
					continue
				}
				if err != nil {
					fail("Sign: %v", err)
					return
				}
				allowed := [][]byte{hostKey(a), netKey}
				if l3 == vrf {
					allowed = append(allowed, vrfKey)
				}
				got, ok := digestOf(t, &seg), false
				for _, k := range allowed {
					if want := refDigest(local, a, whole(&seg), k); bytes.Equal(got, want[:]) {
						ok = true
					}
				}
				if !ok {
					fail("Sign to %v in L3 %d: digest %x matches no key that covers the peer", a, l3, got)
					return
				}
				signed.Add(1)
			}
		}()
	}

	// Verifiers: segments from the verify peers, signed with the only
	// bytes any of their keys ever has.
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 3))
			payload := bytes.Repeat([]byte("update"), 700)
			for !stop.Load() {
				a, always := verifyPeer(rng.IntN(nVerify)), false
				if rng.IntN(4) == 0 {
					a, always = addr(stable), true
				}
				l3 := rng.IntN(2) * vrf
				seg := mustSeg(t, a, local, tcpHeader(40000, 179, rng.Uint32(), 1, segment.ACK|segment.PSH, true), payload[:rng.IntN(len(payload))])
				copy(digestOf(t, &seg), refDigestSlice(a, local, whole(&seg), hostKey(a)))
				switch err := r.Verify(&seg, l3); {
				case err == nil:
					verified.Add(1)
				case errors.Is(err, ErrUnexpected) && !always:
				default:
					fail("Verify from %v in L3 %d: %v", a, l3, err)
					return
				}
			}
		}()
	}

	writers.Wait()
	stop.Store(true)
	wg.Wait()
	t.Logf("signed %d, no key %d, verified %d; deletes: %d sync, %d async; %d replacements",
		signed.Load(), noKey.Load(), verified.Load(), syncDel.Load(), asyncDel.Load(), repl.Load())
	if signed.Load() == 0 || verified.Load() == 0 || syncDel.Load() == 0 || asyncDel.Load() == 0 {
		t.Error("a kind of operation never happened")
	}

	// Every key still present verifies segments; delete them all and
	// check that each is wiped and the pool entry released.
	var keys []*Key
	r.keys.Range(func(_ netip.Prefix, _ uint32, k *Key) bool {
		keys = append(keys, k)
		return true
	})
	for _, k := range keys {
		if err := r.Delete(k, DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if !k.secret.Empty() {
			t.Fatalf("%v not wiped", k)
		}
	}
	if r.Len() != 0 {
		t.Fatalf("%d keys left", r.Len())
	}
	// Each key held a reference on the pool's TCP-MD5 entry: with the
	// last one wiped, the entry and its contexts are gone.
	if _, err := pool.Start(keys[0].poolID); !errors.Is(err, sigpool.ErrNotAllocated) {
		t.Fatalf("the pool's TCP-MD5 entry outlived its last key: %v", err)
	}
}

// crc is a small deterministic hash for deriving test keys from names.
func crc(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h = (h ^ uint32(s[i])) * 16777619
	}
	return h
}
