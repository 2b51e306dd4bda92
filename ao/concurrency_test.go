package ao

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tcpsig/tcpsig/kdf"
	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/segment"
)

// churnKey is ID slot k of the concurrency test: the client's MKT sends
// KeyID k+1 and receives 101+k, the server's the reverse; both sides use
// the same master key and algorithm for a slot, whenever it is (re-)added.
type churnKey struct {
	alg    string
	master []byte
}

func churnKeys(n int) []churnKey {
	algs := []string{"hmac(sha1)", "cmac(aes128)", "hmac(sha256)", "hmac(sha512)"}
	ks := make([]churnKey, n)
	for k := range ks {
		ks[k] = churnKey{algs[k%len(algs)], testKey(100 + k)}
	}
	return ks
}

// churnSide is one keyring of the concurrency test and what its churner
// knows about it.
type churnSide struct {
	name       string
	ring       *Keyring
	peer       netip.Addr
	client     bool
	conns      []*Conn
	mu         sync.Mutex
	present    map[int]*MKT // slot -> MKT, as this side's only churner added it
	asyncGone  []*MKT       // asynchronously deleted: must be wiped by the end
	syncGone   []*MKT
	stats      map[string]int
	unexpected []string
}

func (s *churnSide) cfg(k int, ks []churnKey) keys.AO {
	send, recv := uint8(k+1), uint8(101+k)
	if !s.client {
		send, recv = recv, send
	}
	return keys.AO{Peer: host(s.peer), SendID: send, RecvID: recv, Algorithm: ks[k].alg, Key: ks[k].master}
}

// slotOf maps a KeyID seen on the wire (the sender's SendID) to its slot.
func slotOf(keyID uint8) int {
	if keyID > 100 {
		return int(keyID) - 101
	}
	return int(keyID) - 1
}

func (s *churnSide) fail(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.unexpected) < 20 {
		s.unexpected = append(s.unexpected, fmt.Sprintf(s.name+": "+format, args...))
	}
}

func (s *churnSide) count(what string) {
	s.mu.Lock()
	s.stats[what]++
	s.mu.Unlock()
}

// churn adds, rotates, and deletes keys (sync, async, plain and forced)
// until stop is closed, at least minOps times.
func (s *churnSide) churn(t *testing.T, ks []churnKey, seed uint64, minOps int, stop <-chan struct{}) {
	r := rand.New(rand.NewPCG(seed, 7))
	for i := 0; ; i++ {
		if i >= minOps {
			select {
			case <-stop:
				return
			default:
			}
		}
		k := r.IntN(len(ks))
		s.mu.Lock()
		m := s.present[k]
		var others []*MKT
		for j, o := range s.present {
			if j != k {
				others = append(others, o)
			}
		}
		s.mu.Unlock()
		if m == nil {
			nm, err := s.ring.Add(s.cfg(k, ks))
			if err != nil {
				s.fail("Add slot %d: %v", k, err)
				continue
			}
			s.mu.Lock()
			s.present[k] = nm
			s.mu.Unlock()
			s.count("add")
			continue
		}
		if len(others) < 2 {
			continue // keep a couple of keys
		}
		var opts DeleteOptions
		forced := r.IntN(2) == 0
		if forced {
			opts.Current, opts.RNext = others[r.IntN(len(others))], others[r.IntN(len(others))]
		}
		opts.Async = r.IntN(3) == 0
		err := s.ring.Delete(m, opts)
		switch {
		case err == nil:
		case errors.Is(err, ErrKeyBusy) && !forced:
			s.count("busy")
			continue
		default:
			s.fail("Delete slot %d forced=%v: %v", k, forced, err)
			continue
		}
		s.mu.Lock()
		delete(s.present, k)
		if opts.Async {
			s.asyncGone = append(s.asyncGone, m)
		} else {
			s.syncGone = append(s.syncGone, m)
		}
		s.mu.Unlock()
		if opts.Async {
			s.count("async delete")
			continue
		}
		s.count("sync delete")
		// A synchronous delete returns after the wipe of the master key;
		// connections wipe the traffic keys they derived from it
		// themselves (checked at the end, after Close).
		if !masterWiped(m) {
			s.fail("sync delete of %v returned before its master key was wiped", m)
		}
	}
}

// rotate moves random connections' current and RNext keys.
func (s *churnSide) rotate(ks []churnKey, seed uint64, stop <-chan struct{}) {
	r := rand.New(rand.NewPCG(seed, 9))
	for {
		select {
		case <-stop:
			return
		default:
		}
		c := s.conns[r.IntN(len(s.conns))]
		k := r.IntN(len(ks))
		cfg := s.cfg(k, ks)
		var err error
		if r.IntN(2) == 0 {
			err = c.SetCurrent(cfg.SendID)
		} else {
			err = c.SetRNext(cfg.RecvID)
		}
		switch {
		case err == nil:
			s.count("rotate")
		case errors.Is(err, ErrNoSuchKey):
		default:
			s.fail("rotate: %v", err)
		}
	}
}

// TestConcurrentChurn is issue 7's concurrency test: goroutines sign and
// verify on shared connections (both ways) and run whole handshakes on
// connections of their own, while others add keys, rotate current and RNext
// keys, and delete keys synchronously and asynchronously, forced and not.
// Every MAC that Sign produces is recomputed independently from the master
// key bytes (kdf + mac, not this package) of the KeyID it carries: a signer
// that computed with wiped or wrong key bytes would not match. Every signed
// segment verifies at the peer unless the peer has no key with its KeyID
// at that moment. A synchronous delete returns with the key's bytes and its
// traffic keys wiped; an asynchronous one leaves them wiped by the end.
func TestConcurrentChurn(t *testing.T) {
	const (
		nKeys    = 8
		nPairs   = 4
		perDir   = 2 // signing goroutines per pair and direction
		nSegs    = 150
		minChurn = 150
	)
	if testing.Short() {
		t.Skip("short")
	}
	ks := churnKeys(nKeys)
	cli := &churnSide{name: "client", ring: NewKeyring(nil), peer: srv4.Addr(), client: true, present: map[int]*MKT{}, stats: map[string]int{}}
	srv := &churnSide{name: "server", ring: NewKeyring(nil), peer: cli4.Addr(), present: map[int]*MKT{}, stats: map[string]int{}}
	for _, s := range []*churnSide{cli, srv} {
		for k := 0; k < 3; k++ {
			s.present[k] = mustAdd(t, s.ring, s.cfg(k, ks))
		}
	}
	type pairT struct {
		c, s         *Conn
		caddr, saddr netip.AddrPort
		cisn, sisn   uint32
		cseq, sseq   atomic.Uint32
	}
	pairs := make([]*pairT, nPairs)
	for i := range pairs {
		caddr := netip.AddrPortFrom(cli4.Addr(), uint16(40000+i))
		cisn, sisn := uint32(1000000*(i+1)), uint32(0x80000000+1000000*i)
		p := newPair(t, cli.ring, srv.ring, caddr, srv4, cisn, sisn, 0, cisn+1, 0, sisn+1, 1, 101, 101, 1)
		pairs[i] = &pairT{c: p.c, s: p.s, caddr: caddr, saddr: srv4, cisn: cisn, sisn: sisn}
		pairs[i].cseq.Store(cisn + 1)
		pairs[i].sseq.Store(sisn + 1)
		cli.conns = append(cli.conns, p.c)
		srv.conns = append(srv.conns, p.s)
	}

	var (
		signed, verified, notFound atomic.Int64
		wg, churners               sync.WaitGroup
	)
	stop := make(chan struct{})
	// check recomputes a signed segment's MAC from the master key bytes
	// of the slot its KeyID names.
	check := func(side *churnSide, seg *segment.Segment, in kdf.Input) bool {
		o := aoOpt(t, seg)
		k := slotOf(o.KeyID)
		if k < 0 || k >= nKeys {
			side.fail("signed with KeyID %d", o.KeyID)
			return false
		}
		want := refMAC(t, ks[k].alg, ks[k].master, in, seg, 0, 12, false)
		if !bytes.Equal(o.MAC, want) {
			side.fail("KeyID %d seq %#x: MAC %x, the key's reference MAC %x", o.KeyID, seg.Header().Seq(), o.MAC, want)
			return false
		}
		return true
	}
	deliver := func(to *churnSide, c *Conn, seg *segment.Segment) {
		switch err := c.Verify(seg); {
		case err == nil:
			verified.Add(1)
		case errors.Is(err, ErrKeyNotFound):
			notFound.Add(1) // the receiver has no key for this KeyID right now
		default:
			to.fail("verify KeyID %d: %v", aoOpt(t, seg).KeyID, err)
		}
	}
	for _, p := range pairs {
		for _, dir := range []struct {
			from, to      *churnSide
			sc, rc        *Conn
			src, dst      netip.AddrPort
			srcISN, dstIS uint32
			seq           *atomic.Uint32
		}{
			{cli, srv, p.c, p.s, p.caddr, p.saddr, p.cisn, p.sisn, &p.cseq},
			{srv, cli, p.s, p.c, p.saddr, p.caddr, p.sisn, p.cisn, &p.sseq},
		} {
			for g := 0; g < perDir; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					in := sendOtherInput(dir.src, dir.dst, dir.srcISN, dir.dstIS)
					for i := 0; i < nSegs; i++ {
						seq := dir.seq.Add(16) - 16
						seg := testSeg(t, dir.src, dir.dst, seq, dir.dstIS+1, segment.ACK, 12, []byte("sixteen bytes..."))
						if err := dir.sc.Sign(seg); err != nil {
							dir.from.fail("sign: %v", err)
							continue
						}
						signed.Add(1)
						if check(dir.from, seg, in) {
							deliver(dir.to, dir.rc, seg)
						}
					}
				}()
			}
		}
	}
	// Handshakes on connections of their own: Init, SYN, Accept, SYN-ACK
	// (with a retransmitted SYN signed concurrently), data, Close; the
	// Conns are reused.
	for h := 0; h < 2; h++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var c, s Conn
			defer c.Close()
			defer s.Close()
			l := NewListener(srv.ring, Policy{}, 0)
			caddr := netip.AddrPortFrom(cli4.Addr(), uint16(50000+h))
			for i := 0; i < nSegs/5; i++ {
				cisn, sisn := uint32(i*7919+h), uint32(i*104729+h)
				if err := c.Init(cli.ring, Endpoint{Local: caddr, Remote: srv4, LocalISN: cisn}, Policy{}); errors.Is(err, ErrNoCurrentKey) {
					continue // the best key was being deleted
				} else if err != nil {
					cli.fail("Init: %v", err)
					continue
				}
				syn := testSeg(t, caddr, srv4, cisn, 0, segment.SYN, 12, nil)
				if err := c.Sign(syn); err != nil {
					cli.fail("sign SYN: %v", err)
					continue
				}
				signed.Add(1)
				if !check(cli, syn, kdf.Input{Src: caddr.Addr(), Dst: srv4.Addr(), SrcPort: caddr.Port(), DstPort: srv4.Port(), SrcISN: cisn}) {
					continue
				}
				ok, err := l.Accept(syn, &s)
				if errors.Is(err, ErrKeyNotFound) {
					notFound.Add(1)
					continue
				}
				if !ok || err != nil {
					srv.fail("Accept: %v %v", ok, err)
					continue
				}
				verified.Add(1)
				synack := testSeg(t, srv4, caddr, sisn, cisn+1, segment.SYN|segment.ACK, 12, []byte("hello"))
				if err := s.Sign(synack); err != nil {
					srv.fail("sign SYN-ACK: %v", err)
					continue
				}
				signed.Add(1)
				if !check(srv, synack, sendOtherInput(srv4, caddr, sisn, cisn)) {
					continue
				}
				// The SYN is retransmitted while the SYN-ACK arrives.
				var rw sync.WaitGroup
				rw.Add(1)
				go func() {
					defer rw.Done()
					re := testSeg(t, caddr, srv4, cisn, 0, segment.SYN, 12, nil)
					if err := c.Sign(re); err != nil {
						cli.fail("sign retransmitted SYN: %v", err)
					}
				}()
				deliver(cli, &c, synack)
				rw.Wait()
				data := testSeg(t, caddr, srv4, cisn+1, sisn+6, segment.ACK, 12, []byte("data"))
				err = c.Sign(data)
				if errors.Is(err, ErrNoISN) {
					continue // the SYN-ACK's key was missing
				}
				if err != nil {
					cli.fail("sign data: %v", err)
					continue
				}
				signed.Add(1)
				if check(cli, data, sendOtherInput(caddr, srv4, cisn, sisn)) {
					deliver(srv, &s, data)
				}
			}
		}()
	}
	for i, s := range []*churnSide{cli, srv} {
		churners.Add(2)
		go func() { defer churners.Done(); s.churn(t, ks, uint64(i+1), minChurn, stop) }()
		go func() { defer churners.Done(); s.rotate(ks, uint64(i+10), stop) }()
	}
	wg.Wait()
	close(stop)
	churners.Wait()

	for _, s := range []*churnSide{cli, srv} {
		for _, u := range s.unexpected {
			t.Error(u)
		}
		t.Logf("%s: %v", s.name, s.stats)
	}
	t.Logf("signed %d (all matching the reference MAC), verified %d, peer had no key %d", signed.Load(), verified.Load(), notFound.Load())
	if verified.Load() == 0 {
		t.Fatal("nothing verified")
	}

	// With every reader gone, every deleted key is wiped, however it was
	// deleted; then the rest go too once the connections close.
	for _, p := range pairs {
		p.c.Close()
		p.s.Close()
		for _, c := range []*Conn{p.c, p.s} {
			for _, l := range []*lane{&c.send, &c.recv} {
				for _, k := range l.entries() {
					if !connKeyWiped(k) {
						t.Errorf("a closed connection kept traffic keys of %v", k.mkt)
					}
				}
			}
		}
	}
	for _, s := range []*churnSide{cli, srv} {
		for _, m := range append(s.asyncGone, s.syncGone...) {
			if !masterWiped(m) {
				t.Errorf("%s: deleted %v not wiped", s.name, m)
			}
		}
		for _, m := range s.present {
			if err := s.ring.Delete(m, DeleteOptions{}); err != nil {
				t.Errorf("%s: final delete of %v: %v", s.name, m, err)
			} else if !masterWiped(m) {
				t.Errorf("%s: %v not wiped", s.name, m)
			}
		}
		if s.ring.Len() != 0 {
			t.Errorf("%s: %d keys left", s.name, s.ring.Len())
		}
	}
}

// TestConcurrentSYNRetransmit signs a retransmitted SYN, with a current key
// whose SYN traffic key is not derived yet, while the SYN-ACK that teaches
// the peer's ISN is verified on another goroutine: a stack's retransmit
// timer racing its receive path. Under -race this must be clean, and both
// must succeed.
func TestConcurrentSYNRetransmit(t *testing.T) {
	cring, sring := NewKeyring(nil), NewKeyring(nil)
	for _, k := range []uint8{1, 3} {
		mustAdd(t, cring, keys.AO{Peer: host(srv4.Addr()), SendID: k, RecvID: k + 1, Algorithm: "hmac(sha1)", Key: testKey(int(k))})
		mustAdd(t, sring, keys.AO{Peer: host(cli4.Addr()), SendID: k + 1, RecvID: k, Algorithm: "hmac(sha1)", Key: testKey(int(k))})
	}
	for i := 0; i < 50; i++ {
		var c, s Conn
		if err := c.Init(cring, Endpoint{Local: cli4, Remote: srv4, LocalISN: uint32(i)}, Policy{}); err != nil {
			t.Fatal(err)
		}
		if err := c.SetCurrent(1); err != nil {
			t.Fatal(err)
		}
		syn := testSeg(t, cli4, srv4, uint32(i), 0, segment.SYN, 12, nil)
		if err := c.Sign(syn); err != nil {
			t.Fatal(err)
		}
		if ok, err := NewListener(sring, Policy{}, 0).Accept(syn, &s); !ok || err != nil {
			t.Fatal(ok, err)
		}
		synack := testSeg(t, srv4, cli4, 7000, uint32(i)+1, segment.SYN|segment.ACK, 12, nil)
		if err := s.Sign(synack); err != nil {
			t.Fatal(err)
		}
		if err := c.SetCurrent(3); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			re := testSeg(t, cli4, srv4, uint32(i), 0, segment.SYN, 12, nil)
			if err := c.Sign(re); err != nil {
				t.Error(err)
			}
			in := kdf.Input{Src: cli4.Addr(), Dst: srv4.Addr(), SrcPort: cli4.Port(), DstPort: srv4.Port(), SrcISN: uint32(i)}
			// The verified SYN-ACK's RNextKeyID (1) may switch the
			// current key back first: the KeyID says which key signed.
			o := aoOpt(t, re)
			if want := refMAC(t, "hmac(sha1)", testKey(int(o.KeyID)), in, re, 0, 12, false); !bytes.Equal(o.MAC, want) {
				t.Errorf("retransmitted SYN with KeyID %d: wrong MAC", o.KeyID)
			}
		}()
		if err := c.Verify(synack); err != nil {
			t.Error(err)
		}
		wg.Wait()
		c.Close()
		s.Close()
	}
}
