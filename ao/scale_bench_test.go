//go:build unix

package ao_test

// Cost as the work grows: keyring changes and lookups as the number of MKTs
// grows, a listener's Accept with one and with many peers' MKTs, the heap
// an MKT and an established connection take, and signing on many
// connections in turn against one connection in a loop. Only the public
// API is used. BENCHMARKS.md ("Cost as the work grows") has the commands
// and the figures.
//
// Every figure is a metric of its own (b.ReportMetric); ns/op is only the
// harness's total. Comparisons are interleaved in one process: rounds of
// k calls of the measured operation and k of its reference, alternating
// which goes first, the medians over the rounds reported as op-ns and
// ref-ns, and the median of the rounds' time(op)/time(ref) as "op/ref".
// Memory is the growth of the live heap (after two collections), measured
// in a fresh process of the test binary per round (heapgrowth.Report),
// the median over rounds (at least heapgrowth.Rounds; -benchtime 1x runs
// exactly that many).
//
// The sizes that take long or much memory to set up (256k MKTs, 100k
// connections) run only when the -bench pattern names them, so that
// -bench . stays short.

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tcpsig/tcpsig/ao"
	"github.com/tcpsig/tcpsig/harness/heapgrowth"
	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/segment"
)

// growSize is one size of a benchmark; a big one is set up only when the
// -bench pattern contains its name.
type growSize struct {
	name string
	n    int
	big  bool
}

var growMKTSizes = []growSize{{"1k", 1 << 10, false}, {"16k", 16 << 10, false}, {"64k", 64 << 10, false}, {"256k", 256 << 10, true}}

// growGate skips a big size unless the -bench pattern names it.
func growGate(b *testing.B, s growSize) {
	b.Helper()
	if !s.big {
		return
	}
	if f := flag.Lookup("test.bench"); f != nil && strings.Contains(f.Value.String(), s.name) {
		return
	}
	b.Skipf("%s is set up only when the -bench pattern names it", s.name)
}

// growCPU returns the process's CPU time (all threads, the collector's
// included).
func growCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// growInterleave runs rounds of k calls of op, of ref and of each of more
// (each times its own k calls), rotating which goes first, about b.N
// calls of each in all, and reports the median ns per call of each and
// the median of the rounds' ratios to ref (op/ref, name/ref).
func growInterleave(b *testing.B, k int, op, ref func(k int) time.Duration, more ...growRun) {
	b.Helper()
	rounds := max(1, (b.N+k-1)/k)
	runs := append([]growRun{{"op", op}, {"ref", ref}}, more...)
	ns := make([][]float64, len(runs))
	ratios := make([][]float64, len(runs))
	for _, r := range runs { // warm each up outside the rounds
		r.f(k)
	}
	b.ResetTimer()
	t := make([]time.Duration, len(runs))
	for i := range rounds {
		for j := range runs { // each round rotates which goes first
			r := (i + j) % len(runs)
			t[r] = runs[r].f(k)
		}
		for r := range runs {
			ns[r] = append(ns[r], float64(t[r])/float64(k))
			ratios[r] = append(ratios[r], float64(t[r])/float64(t[1]))
		}
	}
	b.StopTimer()
	for r, run := range runs {
		b.ReportMetric(heapgrowth.Median(ns[r]), run.name+"-ns")
		if r != 1 {
			b.ReportMetric(heapgrowth.Median(ratios[r]), run.name+"/ref")
		}
	}
}

// growRun is one more operation growInterleave times in its rounds and
// reports as name-ns and name/ref.
type growRun struct {
	name string
	f    func(k int) time.Duration
}

var growKey = []byte("32 bytes of a neighbour's secret")

// growHost4 is the i-th IPv4 host, 10.0.0.0 + i; growHost6 the i-th IPv6
// host, 2001:db8:ffff:: + i.
func growHost4(i int) netip.Addr {
	return netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)})
}

func growHost6(i int) netip.Addr {
	a := [16]byte{0x20, 0x01, 0x0d, 0xb8, 0xff, 0xff}
	a[12], a[13], a[14], a[15] = byte(i>>24), byte(i>>16), byte(i>>8), byte(i)
	return netip.AddrFrom16(a)
}

func growMKT(p netip.Prefix, id uint8) keys.AO {
	return keys.AO{Peer: p, SendID: id, RecvID: id, Algorithm: "hmac(sha1)", Key: growKey}
}

// growConfigs returns n MKTs of a set:
//   - "hosts": n distinct IPv4 /32 peers, SendID = RecvID = 100, the BGP
//     listener of Linux's bench-lookups.c;
//   - "mix": a catch-all per family (0.0.0.0/0 and ::/0, KeyID 200); per 100
//     MKTs one IPv4 /24 and one IPv6 /64 (KeyID 50); of the rest, 60 % IPv4
//     /32 peers with two MKTs each (KeyIDs 100 and 101, a rotation under
//     way) and 40 % IPv6 /128 peers with one (KeyID 100); in a shuffled
//     order, so that lookups by address visit the /32 (or /128), the /24
//     (or /64) and the /0 lengths.
func growConfigs(set string, n int) []keys.AO {
	cfgs := make([]keys.AO, 0, n)
	if set == "hosts" {
		for i := range n {
			cfgs = append(cfgs, growMKT(netip.PrefixFrom(growHost4(i), 32), 100))
		}
		return cfgs
	}
	cfgs = append(cfgs, growMKT(netip.MustParsePrefix("0.0.0.0/0"), 200), growMKT(netip.MustParsePrefix("::/0"), 200))
	nets := n / 100
	for j := range nets {
		cfgs = append(cfgs, growMKT(netip.PrefixFrom(netip.AddrFrom4([4]byte{172, 16 + byte(j>>8), byte(j), 0}), 24), 50))
		cfgs = append(cfgs, growMKT(netip.PrefixFrom(netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 0, 1, byte(j >> 8), byte(j)}), 64), 50))
	}
	rest := n - len(cfgs)
	hosts4 := rest * 6 / 10 / 2
	for i := range hosts4 {
		p := netip.PrefixFrom(growHost4(i), 32)
		cfgs = append(cfgs, growMKT(p, 100), growMKT(p, 101))
	}
	for i := 0; len(cfgs) < n; i++ {
		cfgs = append(cfgs, growMKT(netip.PrefixFrom(growHost6(i), 128), 100))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	rng.Shuffle(len(cfgs), func(i, j int) { cfgs[i], cfgs[j] = cfgs[j], cfgs[i] })
	return cfgs
}

func growFill(b *testing.B, r *ao.Keyring, cfgs []keys.AO) []*ao.MKT {
	b.Helper()
	ms := make([]*ao.MKT, len(cfgs))
	for i, c := range cfgs {
		m, err := r.Add(c)
		if err != nil {
			b.Fatalf("add %v: %v", c, err)
		}
		ms[i] = m
	}
	return ms
}

// growProbe is a lookup that finds an MKT: an address the MKT's prefix
// contains and its RecvID.
type growProbe struct {
	addr netip.Addr
	id   uint8
}

func growProbeOf(c keys.AO) growProbe {
	a := c.Peer.Addr()
	if c.Peer.Bits() < a.BitLen() {
		a = a.Next() // a host inside the prefix
	}
	return growProbe{a, c.RecvID}
}

// growStride walks all the indexes of a set (it is coprime to every size
// here) in an order that spreads consecutive steps over the set.
const growStride = 1000003

// growProbes returns 4096 probes spread over cfgs.
func growProbes(cfgs []keys.AO) []growProbe {
	ps := make([]growProbe, 4096)
	for i := range ps {
		ps[i] = growProbeOf(cfgs[i*growStride%len(cfgs)])
	}
	return ps
}

var growRef = map[string]*ao.Keyring{} // the 1k keyring of each set, the lookups' reference

func growRefRing(b *testing.B, set string) (*ao.Keyring, []keys.AO) {
	cfgs := growConfigs(set, growMKTSizes[0].n)
	r := growRef[set]
	if r == nil {
		r = ao.NewKeyring(nil)
		growFill(b, r, cfgs)
		growRef[set] = r
	}
	return r, cfgs
}

// BenchmarkGrowKeyring: add, delete and lookup in a keyring of 1k, 16k,
// 64k and 256k MKTs, for the sets of growConfigs.
//
// fill adds the size's MKTs to a new keyring (growFillAll).
//
// churn-sync and churn-async delete a batch of MKTs (synchronously, or
// Async) and add them back, the set staying between n−n/16 and n MKTs;
// add-ns and del-ns are the wall time per add and per delete,
// add-cpu-ns and del-cpu-ns the process's CPU time (which counts the
// collector's work on the other core too).
//
// lookup-hot (one MKT over and over) and lookup-spread (4096 MKTs spread
// over the set, in turn) are LookupRecv of an existing peer and KeyID,
// interleaved with the same lookups in a keyring of 1k MKTs of the same
// set (growLookups): op/ref is the cost at this size over the cost at 1k.
func BenchmarkGrowKeyring(b *testing.B) {
	for _, set := range []string{"hosts", "mix"} {
		for _, size := range growMKTSizes {
			b.Run(fmt.Sprintf("%s/mkts=%s", set, size.name), func(b *testing.B) {
				growGate(b, size)
				cfgs := growConfigs(set, size.n)
				b.Run("fill", func(b *testing.B) { growFillAll(b, cfgs) })
				r := ao.NewKeyring(nil)
				ms := growFill(b, r, cfgs)
				runtime.GC()
				for _, async := range []bool{false, true} {
					name := "churn-sync"
					if async {
						name = "churn-async"
					}
					b.Run(name, func(b *testing.B) { growChurn(b, r, cfgs, ms, async) })
				}
				ref, refCfgs := growRefRing(b, set)
				b.Run("lookup-hot", func(b *testing.B) {
					growLookups(b, r, ref, []growProbe{growProbeOf(cfgs[7])}, []growProbe{growProbeOf(refCfgs[7])})
				})
				b.Run("lookup-spread", func(b *testing.B) {
					growLookups(b, r, ref, growProbes(cfgs), growProbes(refCfgs))
				})
				if r.Len() != size.n {
					b.Fatalf("Len %d, want %d", r.Len(), size.n)
				}
			})
		}
	}
}

// growFillAll adds cfgs to a new keyring, b.N times: add-ns is the wall
// time per add as the keyring grows from empty to the size, max-add-ns
// the longest single add (an index growing, a collection's assist, or the
// process descheduled).
func growFillAll(b *testing.B, cfgs []keys.AO) {
	var total, worst time.Duration
	b.ReportAllocs()
	for range b.N {
		r := ao.NewKeyring(nil)
		start := time.Now()
		for _, c := range cfgs {
			t := time.Now()
			if _, err := r.Add(c); err != nil {
				b.Fatal(err)
			}
			worst = max(worst, time.Since(t))
		}
		total += time.Since(start)
	}
	b.ReportMetric(float64(total)/float64(b.N*len(cfgs)), "add-ns")
	b.ReportMetric(float64(worst), "max-add-ns")
}

func growChurn(b *testing.B, r *ao.Keyring, cfgs []keys.AO, ms []*ao.MKT, async bool) {
	n := len(cfgs)
	k := min(256, n/16)
	batch := make([]int, 0, k)
	var add, del, addCPU, delCPU time.Duration
	pos := 0
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; done += len(batch) {
		batch = batch[:0]
		for range min(k, b.N-done) {
			batch = append(batch, pos*growStride%n)
			pos = (pos + 1) % n
		}
		t0, c0 := time.Now(), growCPU()
		for _, i := range batch {
			if err := r.Delete(ms[i], ao.DeleteOptions{Async: async}); err != nil {
				b.Fatal(err)
			}
		}
		t1, c1 := time.Now(), growCPU()
		for _, i := range batch {
			m, err := r.Add(cfgs[i])
			if err != nil {
				b.Fatal(err)
			}
			ms[i] = m
		}
		t2, c2 := time.Now(), growCPU()
		del += t1.Sub(t0)
		add += t2.Sub(t1)
		delCPU += c1 - c0
		addCPU += c2 - c1
	}
	b.StopTimer()
	per := func(d time.Duration) float64 { return float64(d) / float64(b.N) }
	b.ReportMetric(per(add), "add-ns")
	b.ReportMetric(per(del), "del-ns")
	b.ReportMetric(per(addCPU), "add-cpu-ns")
	b.ReportMetric(per(delCPU), "del-cpu-ns")
}

// growLookups interleaves blocks of 4096 lookups of probes in r with as
// many of refProbes in ref, each block after an untimed pass over its
// probes: both are measured with their own lookups' lines in the caches
// as far as they fit, not with what the other block left there.
func growLookups(b *testing.B, r, ref *ao.Keyring, probes, refProbes []growProbe) {
	lookups := func(r *ao.Keyring, ps []growProbe) func(int) time.Duration {
		pass := func(k int) {
			for i := range k {
				p := ps[i%len(ps)]
				if r.LookupRecv(p.addr, p.id, 0) == nil {
					b.Fatalf("no MKT for %v KeyID %d", p.addr, p.id)
				}
			}
		}
		return func(k int) time.Duration {
			pass(len(ps))
			t := time.Now()
			pass(k)
			return time.Since(t)
		}
	}
	growInterleave(b, 4096, lookups(r, probes), lookups(ref, refProbes))
}

// BenchmarkGrowMKTMemory is the heap an MKT takes: the growth of the live
// heap over the adds of n MKTs into a new keyring, per MKT (B/MKT), the
// median over rounds (heapgrowth.Report).
func BenchmarkGrowMKTMemory(b *testing.B) {
	for _, set := range []string{"hosts", "mix"} {
		for _, size := range growMKTSizes {
			b.Run(fmt.Sprintf("%s/mkts=%s", set, size.name), func(b *testing.B) {
				growGate(b, size)
				heapgrowth.Report(b, "B/MKT", func() float64 {
					cfgs := growConfigs(set, size.n)
					r := ao.NewKeyring(nil)
					before := heapgrowth.Live()
					growFill(b, r, cfgs)
					after := heapgrowth.Live()
					runtime.KeepAlive(r)
					return (after - before) / float64(size.n)
				})
			})
		}
	}
}

// The connections below: a client (192.0.2.1, ports from 10000 up, or
// 10.0.0.0 + i for many peers) and a server (192.0.2.2:179). The client's
// MKT has SendID 1 and RecvID 2, the server's the reverse.
var (
	growClient = netip.MustParseAddr("192.0.2.1")
	growServer = netip.AddrPortFrom(netip.MustParseAddr("192.0.2.2"), 179)
)

// growRings returns a client keyring with one MKT for peer and a server
// keyring with one for client.
func growRings(b *testing.B, alg string, client, peer netip.Prefix) (cring, sring *ao.Keyring, maclen int) {
	b.Helper()
	cring, sring = ao.NewKeyring(nil), ao.NewKeyring(nil)
	m, err := cring.Add(keys.AO{Peer: peer, SendID: 1, RecvID: 2, Algorithm: alg, Key: growKey})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := sring.Add(keys.AO{Peer: client, SendID: 2, RecvID: 1, Algorithm: alg, Key: growKey}); err != nil {
		b.Fatal(err)
	}
	return cring, sring, m.MACLen()
}

// growSeg lays out a TCP header with a TCP-AO option in buf and makes a
// Segment of it and the payload frags.
func growSeg(b *testing.B, buf []byte, src, dst netip.AddrPort, seq, ack uint32, flags segment.Flags, maclen int, frags [][]byte) segment.Segment {
	b.Helper()
	var opt [segment.MaxOptionsLen]byte
	tcp := segment.AppendTCP(buf[:0], segment.Fields{SrcPort: src.Port(), DstPort: dst.Port(), Seq: seq, Ack: ack, Flags: flags, Window: 65535,
		Options: [][]byte{ao.AppendOption(opt[:0], maclen)}})
	s, err := segment.FromTCP(src.Addr(), dst.Addr(), tcp, frags...)
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkGrowAccept is Listener.Accept of a signed SYN (and the Close of
// its connection, untimed) on a listener whose keyring holds 10,000
// peers' MKTs (op), interleaved with one whose keyring holds one peer's
// MKT (ref). syn=one-peer: the same peer's SYN every time;
// syn=spread: SYNs of 1024 of the 10,000 peers, in turn.
func BenchmarkGrowAccept(b *testing.B) {
	const peers = 10000
	for _, spread := range []bool{false, true} {
		name := "syn=one-peer"
		if spread {
			name = "syn=spread"
		}
		b.Run("alg=hmac(sha1)/"+name, func(b *testing.B) {
			server := netip.PrefixFrom(growServer.Addr(), 32)
			cring, _, maclen := growRings(b, "hmac(sha1)", netip.PrefixFrom(growHost4(0), 32), server)
			big, one := ao.NewKeyring(nil), ao.NewKeyring(nil)
			for i := range peers {
				if _, err := big.Add(keys.AO{Peer: netip.PrefixFrom(growHost4(i), 32), SendID: 2, RecvID: 1, Algorithm: "hmac(sha1)", Key: growKey}); err != nil {
					b.Fatal(err)
				}
			}
			from := []int{peers / 2}
			if spread {
				from = make([]int, 1024)
				for j := range from {
					from[j] = j * growStride % peers
				}
			}
			if _, err := one.Add(keys.AO{Peer: netip.PrefixFrom(growHost4(from[0]), 32), SendID: 2, RecvID: 1, Algorithm: "hmac(sha1)", Key: growKey}); err != nil {
				b.Fatal(err)
			}
			syns := make([]segment.Segment, len(from))
			for j, i := range from {
				var c ao.Conn
				local := netip.AddrPortFrom(growHost4(i), 40000)
				if err := c.Init(cring, ao.Endpoint{Local: local, Remote: growServer, LocalISN: 1000 + uint32(i)}, ao.Policy{}); err != nil {
					b.Fatal(err)
				}
				syns[j] = growSeg(b, make([]byte, 0, segment.MaxHeaderLen), local, growServer, 1000+uint32(i), 0, segment.SYN, maclen, nil)
				if err := c.Sign(&syns[j]); err != nil {
					b.Fatal(err)
				}
				c.Close()
			}
			conns := make([]ao.Conn, 32)
			accept := func(l *ao.Listener, syns []segment.Segment) func(int) time.Duration {
				i := 0
				return func(k int) time.Duration {
					t := time.Now()
					for j := range k {
						if signed, err := l.Accept(&syns[i%len(syns)], &conns[j]); !signed || err != nil {
							b.Fatalf("Accept: %v %v", signed, err)
						}
						i++
					}
					d := time.Since(t)
					for j := range k {
						conns[j].Close()
					}
					return d
				}
			}
			b.ReportAllocs()
			growInterleave(b, len(conns), accept(ao.NewListener(big, ao.Policy{}, 0), syns), accept(ao.NewListener(one, ao.Policy{}, 0), syns[:1]))
		})
	}
}

// growAlgs are the algorithms of the memory figures: the three of RFC
// 5926 and Linux, and draft-ietf-tcpm-tcp-ao-algs' KMAC.
var growAlgs = []string{"hmac(sha1)", "hmac(sha256)", "cmac(aes128)", "kmac256-128"}

// BenchmarkGrowConnMemory is the heap an established connection takes:
// 10,000 mirrored pairs of client and server Conns over one pair of
// keyrings (one MKT each), each Conn having signed one segment its peer
// verified, both ways; B/conn is the growth of the live heap over the
// pairs' making, divided by the 20,000 Conns (the Conn structs
// included), the median over rounds (heapgrowth.Report).
//
// setup=handshake: the client signs a SYN, the server's Listener.Accept
// verifies it and its Conn signs the SYN-ACK, then each end a pure ACK.
// setup=established: both ends start with Conn.Init of an Established
// Endpoint, then each signs a pure ACK.
//
// A round starts from the heap after one pair made and closed (what the
// first derivation of an MKT makes once is not the connections').
//
// mode=pool is Policy.Contexts ContextsPerSegment (each segment's context
// from a pool shard), mode=lease ContextsLeased (a context kept per
// direction); the default, ContextsAdaptive, is mode=pool for these
// connections, which carry a segment each way.
func BenchmarkGrowConnMemory(b *testing.B) {
	const pairs = 10000
	for _, alg := range growAlgs {
		for _, setup := range []string{"handshake", "established"} {
			for _, mode := range []string{"pool", "lease"} {
				pol := ao.Policy{Contexts: ao.ContextsPerSegment}
				if mode == "lease" {
					pol.Contexts = ao.ContextsLeased
				}
				b.Run(fmt.Sprintf("alg=%s/setup=%s/pairs=%d/mode=%s", alg, setup, pairs, mode), func(b *testing.B) {
					heapgrowth.Report(b, "B/conn", func() float64 { return growConnRound(b, alg, setup, pairs, pol) })
				})
			}
		}
	}
}

// growConnRound makes the pairs of BenchmarkGrowConnMemory under pol and
// returns the heap they take per Conn.
func growConnRound(b *testing.B, alg, setup string, pairs int, pol ao.Policy) float64 {
	cring, sring, maclen := growRings(b, alg, netip.PrefixFrom(growClient, 32), netip.PrefixFrom(growServer.Addr(), 32))
	l := ao.NewListener(sring, pol, 0)
	buf := make([]byte, 0, segment.MaxHeaderLen)
	pair := func(c, s *ao.Conn, i int) {
		local := netip.AddrPortFrom(growClient, uint16(10000+i))
		cisn, sisn := 1000+uint32(i)*7919, 5000+uint32(i)*104729
		if setup == "handshake" {
			if err := c.Init(cring, ao.Endpoint{Local: local, Remote: growServer, LocalISN: cisn}, pol); err != nil {
				b.Fatal(err)
			}
			syn := growSeg(b, buf, local, growServer, cisn, 0, segment.SYN, maclen, nil)
			if err := c.Sign(&syn); err != nil {
				b.Fatal(err)
			}
			if signed, err := l.Accept(&syn, s); !signed || err != nil {
				b.Fatalf("Accept: %v %v", signed, err)
			}
			synack := growSeg(b, buf, growServer, local, sisn, cisn+1, segment.SYN|segment.ACK, maclen, nil)
			if err := s.Sign(&synack); err != nil {
				b.Fatal(err)
			}
			if err := c.Verify(&synack); err != nil {
				b.Fatal(err)
			}
		} else {
			ep := ao.Endpoint{Local: local, Remote: growServer, LocalISN: cisn, Established: true, RemoteISN: sisn, CurrentSendID: 1, RNextRecvID: 2}
			if err := c.Init(cring, ep, pol); err != nil {
				b.Fatal(err)
			}
			ep = ao.Endpoint{Local: growServer, Remote: local, LocalISN: sisn, Established: true, RemoteISN: cisn, CurrentSendID: 2, RNextRecvID: 1}
			if err := s.Init(sring, ep, pol); err != nil {
				b.Fatal(err)
			}
		}
		ack := growSeg(b, buf, local, growServer, cisn+1, sisn+1, segment.ACK, maclen, nil)
		if err := c.Sign(&ack); err != nil {
			b.Fatal(err)
		}
		if err := s.Verify(&ack); err != nil {
			b.Fatal(err)
		}
		ack = growSeg(b, buf, growServer, local, sisn+1, cisn+1, segment.ACK, maclen, nil)
		if err := s.Sign(&ack); err != nil {
			b.Fatal(err)
		}
		if err := c.Verify(&ack); err != nil {
			b.Fatal(err)
		}
	}
	var warm [2]ao.Conn
	pair(&warm[0], &warm[1], pairs)
	warm[0].Close()
	warm[1].Close()
	base := heapgrowth.Live()
	conns := make([]ao.Conn, 2*pairs)
	for i := range pairs {
		pair(&conns[2*i], &conns[2*i+1], i)
	}
	v := (heapgrowth.Live() - base) / float64(len(conns))
	for i := range conns {
		conns[i].Close()
	}
	return v
}

var growConnSizes = []growSize{{"1k", 1000, false}, {"10k", 10000, false}, {"100k", 100000, true}}

// BenchmarkGrowRoundRobin is Conn.Sign on n established connections in
// turn, each with a segment of its own (a server, 192.0.2.2:179, signing
// to n clients, 10.0.0.0 + i, under one MKT for 10.0.0.0/8, in a shuffled
// order), interleaved with Sign on one more connection over and over:
// op-ns is the cost of a segment round-robin, ref-ns on the one
// connection, op/ref their ratio. A pure ACK and a 1448-byte payload, all
// segments' payload in one buffer; segment=own signs each connection's
// segment made beforehand, segment=built writes each into one buffer
// just before its Sign, as a stack does. contexts=default is the default
// Policy (the one connection, busy, leases its context; the n take a
// shard's, unless they are few enough to lease too), contexts=segment
// ContextsPerSegment for all. memfloor-ns is what the round-robin would
// cost if a connection's state were one cache line: one line read from
// each of n cold 1 KiB blocks in the same order, then a Sign on the one
// connection; memfloor/ref bounds from below what any layout of per-
// connection state gets on this machine.
func BenchmarkGrowRoundRobin(b *testing.B) {
	for _, size := range growConnSizes {
		for _, mode := range []string{"default", "segment"} {
			pol := ao.Policy{}
			if mode == "segment" {
				pol.Contexts = ao.ContextsPerSegment
			}
			growRoundRobin(b, size, mode, pol)
		}
	}
}

// growRoundRobin is one size and policy of BenchmarkGrowRoundRobin.
func growRoundRobin(b *testing.B, size growSize, mode string, pol ao.Policy) {
	b.Run("alg=hmac(sha1)/conns="+size.name+"/contexts="+mode, func(b *testing.B) {
		growGate(b, size)
		n := size.n
		clients := netip.MustParsePrefix("10.0.0.0/8")
		signer, mirror, maclen := growRings(b, "hmac(sha1)", netip.PrefixFrom(growServer.Addr(), 32), clients)
		payload := make([]byte, 1448)
		for i := range payload {
			payload[i] = byte(i)
		}
		conns := make([]ao.Conn, n+1) // conns[n] is the one signing in a loop
		endpoint := func(i int) (remote netip.AddrPort, lisn, risn uint32) {
			return netip.AddrPortFrom(growHost4(i), 40000), 5000 + uint32(i)*104729, 1000 + uint32(i)*7919
		}
		for i := range conns {
			remote, lisn, risn := endpoint(i)
			ep := ao.Endpoint{Local: growServer, Remote: remote, LocalISN: lisn, Established: true, RemoteISN: risn, CurrentSendID: 1, RNextRecvID: 2}
			if err := conns[i].Init(signer, ep, pol); err != nil {
				b.Fatal(err)
			}
		}
		hdrs := make([]byte, (n+1)*segment.MaxHeaderLen)
		segs := make([]segment.Segment, n+1)
		order := rand.New(rand.NewPCG(3, 4)).Perm(n)
		// blocks are n connection-sized blocks for the floor, every line
		// written (an untouched page would read as the one zero page).
		blocks := make([][1024]byte, n)
		for i := range blocks {
			for j := 0; j < len(blocks[i]); j += 64 {
				blocks[i][j] = 1
			}
		}
		for _, size := range []int{0, 1448} {
			b.Run(fmt.Sprintf("payload=%d", size), func(b *testing.B) {
				var frags [][]byte
				flags := segment.ACK
				if size > 0 {
					frags, flags = [][]byte{payload[:size]}, segment.ACK|segment.PSH
				}
				for i := range segs {
					remote, lisn, risn := endpoint(i)
					h := hdrs[i*segment.MaxHeaderLen : i*segment.MaxHeaderLen : (i+1)*segment.MaxHeaderLen]
					segs[i] = growSeg(b, h, growServer, remote, lisn+1, risn+1, flags, maclen, frags)
				}
				for i := range conns { // the first Sign of a segment kind derives its traffic key
					if err := conns[i].Sign(&segs[i]); err != nil {
						b.Fatal(err)
					}
				}
				for _, i := range []int{n, order[0], order[n/2], order[n-1]} {
					growCheck(b, mirror, &conns[i], &segs[i])
				}
				for _, built := range []bool{false, true} {
					name := "segment=own"
					if built {
						name = "segment=built"
					}
					b.Run(name, func(b *testing.B) {
						if built { // a built segment is signed as its own would be
							i := order[n/2]
							seg := growBuilder(flags, maclen, frags, endpoint)(i)
							growCheck(b, mirror, &conns[i], &seg)
						}
						sign := growSigner(b, conns, segs, flags, maclen, frags, endpoint, built)
						growRoundRobinRun(b, order, blocks, sign)
					})
				}
			})
		}
		for i := range conns {
			conns[i].Close()
		}
	})
}

// growSigner returns what signs connection i's segment: with built,
// the segment is written into one buffer just before Sign, as a stack
// builds each segment it sends (the buffer stays in the caches, the
// connection's state does not); without, each connection signs the
// segment of its own made beforehand (cold too, like its state).
func growSigner(b *testing.B, conns []ao.Conn, segs []segment.Segment, flags segment.Flags, maclen int, frags [][]byte,
	endpoint func(int) (netip.AddrPort, uint32, uint32), built bool) func(i int) {
	if !built {
		return func(i int) {
			if err := conns[i].Sign(&segs[i]); err != nil {
				b.Fatal(err)
			}
		}
	}
	build := growBuilder(flags, maclen, frags, endpoint)
	return func(i int) {
		seg := build(i)
		if err := conns[i].Sign(&seg); err != nil {
			b.Fatal(err)
		}
	}
}

// growBuilder returns what writes connection i's segment into one buffer
// (each call overwrites the last), as a stack builds the segment it sends.
func growBuilder(flags segment.Flags, maclen int, frags [][]byte, endpoint func(int) (netip.AddrPort, uint32, uint32)) func(i int) segment.Segment {
	var hot [segment.MaxHeaderLen]byte
	var opt [segment.MaxOptionsLen]byte
	f := segment.Fields{SrcPort: growServer.Port(), Flags: flags, Window: 65535, Options: [][]byte{ao.AppendOption(opt[:0], maclen)}}
	return func(i int) segment.Segment {
		remote, lisn, risn := endpoint(i)
		f.DstPort, f.Seq, f.Ack = remote.Port(), lisn+1, risn+1
		seg, err := segment.FromTCP(growServer.Addr(), remote.Addr(), segment.AppendTCP(hot[:0], f), frags...)
		if err != nil {
			panic(err) // the fields are the benchmark's own: a bug in it
		}
		return seg
	}
}

// growRoundRobinRun times sign (of connection i) round-robin over
// order against the one connection len(order) signing over and over,
// and the floor: one line read from each of blocks in the same order,
// then the one connection's sign, as if a connection's state were one
// cache line and signing needed nothing else.
func growRoundRobinRun(b *testing.B, order []int, blocks [][1024]byte, sign func(i int)) {
	n := len(order)
	turn := func(each func(i int)) func(k int) time.Duration {
		next := 0
		return func(k int) time.Duration {
			t := time.Now()
			for range k {
				each(order[next])
				if next++; next == n {
					next = 0
				}
			}
			return time.Since(t)
		}
	}
	rr := turn(sign)
	one := turn(func(int) { sign(n) })
	floor := turn(func(i int) { sign(n + 1 - int(blocks[i][0])) }) // blocks[i][0] is 1
	b.ReportAllocs()
	growInterleave(b, 32, rr, one, growRun{"memfloor", floor})
}

// growCheck signs seg on s and verifies it on a mirror of s made on ring:
// the round-robin's segments are really signed.
func growCheck(b *testing.B, ring *ao.Keyring, s *ao.Conn, seg *segment.Segment) {
	b.Helper()
	if err := s.Sign(seg); err != nil {
		b.Fatal(err)
	}
	ep := s.Endpoint()
	var c ao.Conn
	mirror := ao.Endpoint{Local: ep.Remote, Remote: ep.Local, LocalISN: ep.RemoteISN, Established: true, RemoteISN: ep.LocalISN,
		CurrentSendID: ep.RNextRecvID, RNextRecvID: ep.CurrentSendID}
	if err := c.Init(ring, mirror, ao.Policy{}); err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	if err := c.Verify(seg); err != nil {
		b.Fatalf("%v: %v", ep.Remote, err)
	}
}
