//go:build unix

package tcpsig_test

// The engine's benchmarks: what one MAC costs in each way of keying it
// (BenchmarkMAC), through the sharded pool (BenchmarkPool), as TCP-AO
// Sign/Verify on an established connection (BenchmarkAO against
// BenchmarkAOBareRestore), and per new connection on a listener
// (BenchmarkNewConnection), TCP-MD5 Sign/Verify against bare crypto/md5
// (BenchmarkMD5). The ratios against the safe floor and the two-core
// scaling are in floor_bench_test.go; BENCHMARKS.md has the results.
//
// Every benchmark sets b.SetBytes to the bytes the MAC covers, so MB/s of
// two benchmarks over the same bytes can be compared directly; ratios in
// BENCHMARKS.md are computed from ns/op. Every benchmark also reports the
// process's CPU time per op (cpu-ns/op): on a shared machine wall time
// includes the time other processes held the core, CPU time does not.

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/md5"
	"encoding/binary"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"strings"
	"syscall"
	"testing"

	"github.com/tcpsig/tcpsig/ao"
	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/mac"
	"github.com/tcpsig/tcpsig/md5sig"
	"github.com/tcpsig/tcpsig/segment"
	"github.com/tcpsig/tcpsig/sigpool"
	"github.com/tcpsig/tcpsig/testvectors"
)

// macSizes are the bytes a TCP-AO MAC covers for IPv4 with a 32-byte TCP
// header (4 SNE + 12 pseudo-header + 32 header) and payloads of 0, 64,
// 536, 1448 and 8948 bytes.
var macSizes = []int{48, 112, 584, 1496, 8996}

// aoPayloads are the payloads of BenchmarkAO.
var aoPayloads = []int{0, 64, 536, 1448, 8948}

// The segments of BenchmarkAO and BenchmarkNewConnection: IPv4, a 20-byte
// base header and a TCP-AO option with a 12-byte MAC (16 bytes, no NOPs).
const (
	aoMACLen    = 12
	aoHeaderLen = segment.TCPMinimumSize + 4 + aoMACLen
)

// aoCovered is what the TCP-AO MAC of such a segment covers: SNE, IPv4
// pseudo-header, header, payload.
func aoCovered(payload int) int { return 4 + 12 + aoHeaderLen + payload }

// macLenOf is the MAC length of the benchmarks' MKTs of alg: 12, or the
// one length the draft's algorithms allow (16: a 40-byte header).
func macLenOf(alg string) int {
	if a, err := mac.Lookup(alg); err == nil && a.MACLen() != 0 {
		return a.MACLen()
	}
	return aoMACLen
}

// aoCoveredFor is aoCovered for a segment of alg's MKT.
func aoCoveredFor(alg string, payload int) int {
	return aoCovered(payload) + ao.OptionSpace(macLenOf(alg)) - ao.OptionSpace(aoMACLen)
}

var (
	client = netip.MustParseAddrPort("192.0.2.1:40000")
	server = netip.MustParseAddrPort("192.0.2.2:179")
)

// benchName makes a Linux algorithm name usable in a benchmark path:
// "hmac(sha3-512)" becomes "hmac-sha3-512".
func benchName(name string) string {
	return strings.NewReplacer("(", "-", ")", "").Replace(name)
}

// bytesOf returns n deterministic pseudo-random bytes.
func bytesOf(n int, seed uint64) []byte {
	r := rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8)})
	p := make([]byte, n)
	r.Read(p)
	return p
}

// cpuClock measures the CPU time (user + system) of the whole process
// over a benchmark's timed loop, reported per op as cpu-ns/op. Start it
// right before the loop and report right after; nothing else of the
// process should run meanwhile (the test binary runs one benchmark at a
// time).
type cpuClock struct{ start int64 }

func cpuNow(b *testing.B) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

func startCPU(b *testing.B) cpuClock { return cpuClock{cpuNow(b)} }

func (c cpuClock) report(b *testing.B) {
	if b.N > 0 {
		b.ReportMetric(float64(cpuNow(b)-c.start)/float64(b.N), "cpu-ns/op")
	}
}

func lookup(tb testing.TB, name string) *mac.Algorithm {
	tb.Helper()
	a, err := mac.Lookup(name)
	if err != nil {
		tb.Fatal(err)
	}
	return a
}

// bareHash is the bare hash under each HMAC algorithm: the reference its
// restore mode is held to. The CMAC algorithms' reference is AES-CBC-MAC
// (cbcMAC). TestBareReferences checks that this covers mac.Algorithms().
var bareHash = testvectors.Hashes

// cbcMAC is the AES work of a CMAC alone: AES-CBC with a zero IV over the
// message zero-padded to whole blocks, the last ciphertext block being the
// MAC. It uses crypto/cipher's CBC encrypter, which calls the AES block
// function directly (no per-block interface call), into a reused buffer.
type cbcMAC struct {
	mode  cipher.BlockMode
	setIV interface{ SetIV([]byte) }
	src   []byte // the message, zero-padded
	dst   []byte
}

var zeroIV [aes.BlockSize]byte

func newCBCMAC(tb testing.TB, key, msg []byte) *cbcMAC {
	tb.Helper()
	blk, err := aes.NewCipher(key)
	if err != nil {
		tb.Fatal(err)
	}
	n := max(aes.BlockSize, (len(msg)+aes.BlockSize-1)/aes.BlockSize*aes.BlockSize)
	m := &cbcMAC{mode: cipher.NewCBCEncrypter(blk, zeroIV[:]), src: make([]byte, n), dst: make([]byte, n)}
	copy(m.src, msg)
	var ok bool
	if m.setIV, ok = m.mode.(interface{ SetIV([]byte) }); !ok {
		tb.Fatalf("%T has no SetIV", m.mode)
	}
	return m
}

func (m *cbcMAC) sum(out []byte) []byte {
	m.setIV.SetIV(zeroIV[:])
	m.mode.CryptBlocks(m.dst, m.src)
	return append(out, m.dst[len(m.dst)-aes.BlockSize:]...)
}

// TestBareReferences checks that every algorithm has a bare reference and
// that it is the right one: HMAC over the bare hash gives the MAC of the
// engine's context, and the CBC-MAC is the chain of AES blocks it claims.
func TestBareReferences(t *testing.T) {
	msg := bytesOf(1000, 2)
	for _, a := range mac.Algorithms() {
		key := bytesOf(a.Size(), 1)
		c := a.NewContext()
		if err := c.SetKey(key); err != nil {
			t.Fatalf("%s: %v", a, err)
		}
		c.Write(msg)
		got := c.Finish(nil)
		if a.IsKMAC() {
			if want := newSafeKMAC(key).sum(nil, msg); !bytes.Equal(got, want) {
				t.Errorf("%s: context MAC %x, keyed cSHAKE256 %x", a, got, want)
			}
			continue
		}
		if a.IsCMAC() {
			m := newCBCMAC(t, key, msg)
			blk, _ := aes.NewCipher(key)
			var x [aes.BlockSize]byte
			for p := m.src; len(p) > 0; p = p[aes.BlockSize:] {
				for i := range x {
					x[i] ^= p[i]
				}
				blk.Encrypt(x[:], x[:])
			}
			if s := m.sum(nil); !bytes.Equal(s, x[:]) {
				t.Errorf("%s: CBC-MAC %x, block chain %x", a, s, x)
			}
			continue
		}
		newHash, ok := bareHash[a.Name()]
		if !ok {
			t.Errorf("%s: no bare hash in bareHash", a)
			continue
		}
		h := hmac.New(newHash, key)
		h.Write(msg)
		if want := h.Sum(nil); !bytes.Equal(got, want) {
			t.Errorf("%s: context MAC %x, crypto/hmac over the bare hash %x", a, got, want)
		}
	}
}

// BenchmarkMAC is one MAC over the bytes TCP-AO covers, per algorithm and
// per way of getting the keyed state:
//
//   - keyschedule: Context.SetKey (a fresh key schedule) per message;
//   - restore: Context.Restart to the keyed state per message;
//   - clone: Context.Start of a shared keyed template (mac.Key) per message
//     (not for hmac(rmd160), whose state cannot be copied: there the pool
//     re-keys instead);
//   - bare: the bare hash (Reset, Write, Sum), or for CMAC the AES-CBC-MAC
//     over the same bytes: the floor a keyed state is held to.
//
// Keys are as long as the algorithm's digest: a TCP-AO traffic key. The
// four modes of one size run one after the other (the names still read
// alg/mode/size), so that the ratios between them come from measurements
// taken close together on a noisy machine.
func BenchmarkMAC(b *testing.B) {
	for _, a := range mac.Algorithms() {
		key := bytesOf(a.Size(), 1)
		for _, n := range macSizes {
			msg := bytesOf(n, 2)
			for _, mode := range []string{"keyschedule", "restore", "clone", "bare"} {
				b.Run(fmt.Sprintf("%s/%s/%d", benchName(a.Name()), mode, n), func(b *testing.B) {
					benchMAC(b, a, mode, key, msg)
				})
			}
		}
	}
}

func benchMAC(b *testing.B, a *mac.Algorithm, mode string, key, msg []byte) {
	// the same operations BenchmarkInterleaved compares
	benchLoop(b, len(msg), macOp(b, a, mode, key, msg))
}

// benchLoop times op, which covers size bytes, with allocations and CPU
// time reported.
func benchLoop(b *testing.B, size int, op func()) {
	b.SetBytes(int64(size))
	b.ReportAllocs()
	clk := startCPU(b)
	for b.Loop() {
		op()
	}
	clk.report(b)
}

// BenchmarkPool is one 1496-byte MAC through a sigpool.Pool from every P
// at once: Start, Key (a template load with the clone backend, a key
// schedule with the rekey backend), Write, Sum into a reused buffer, End.
func BenchmarkPool(b *testing.B) {
	for _, backend := range []sigpool.Backend{sigpool.Clone, sigpool.Rekey} {
		for _, name := range []string{"hmac(sha1)", "cmac(aes128)"} {
			b.Run(backend.String()+"/"+benchName(name), func(b *testing.B) {
				a := lookup(b, name)
				p, _ := sigpool.New(sigpool.Config{Backend: backend})
				id, err := p.Alloc(a, 256)
				if err != nil {
					b.Fatal(err)
				}
				defer p.Release(id)
				raw := bytesOf(a.Size(), 1)
				var tmpl mac.Key
				if err := tmpl.Init(a, raw); err != nil {
					b.Fatal(err)
				}
				msg := bytesOf(1496, 2)
				b.SetBytes(int64(len(msg)))
				b.ReportAllocs()
				clk := startCPU(b)
				b.RunParallel(func(pb *testing.PB) {
					out := make([]byte, 0, mac.MaxSize)
					for pb.Next() {
						r, _ := p.Start(id)
						if err := r.Key(&tmpl); err != nil {
							panic(err)
						}
						r.MAC.Write(msg)
						out = r.MAC.Finish(out[:0])
						r.End()
					}
				})
				clk.report(b)
			})
		}
	}
}

// tcpHeaderLen lays out a TCP header with a TCP-AO option as a stack would,
// followed by payload; the option is for a maclen-byte MAC.
func tcpHeaderLen(maclen int, sport, dport uint16, seq, ack uint32, flags segment.Flags, payload []byte) []byte {
	opts := ao.AppendOption(nil, maclen)
	h := make([]byte, segment.TCPMinimumSize, segment.TCPMinimumSize+len(opts)+len(payload))
	binary.BigEndian.PutUint16(h[0:], sport)
	binary.BigEndian.PutUint16(h[2:], dport)
	binary.BigEndian.PutUint32(h[4:], seq)
	binary.BigEndian.PutUint32(h[8:], ack)
	h[12] = byte((segment.TCPMinimumSize + len(opts)) / 4 << 4)
	h[13] = byte(flags)
	binary.BigEndian.PutUint16(h[14:], 65535)
	h = append(h, opts...)
	return append(h, payload...)
}

func fromTCP(tb testing.TB, src, dst netip.Addr, tcp []byte) segment.Segment {
	tb.Helper()
	seg, err := segment.FromTCP(src, dst, tcp)
	if err != nil {
		tb.Fatal(err)
	}
	return seg
}

// masterKey returns the master key of a benchmark MKT: 16 bytes, or 32 for
// cmac(aes), which exists for AES-256 master keys, and for the draft's
// algorithms, which need at least 32.
func masterKey(alg string) []byte {
	if a, err := mac.Lookup(alg); alg == "cmac(aes)" || (err == nil && a.MinMasterKey() > 16) {
		return bytesOf(32, 3)
	}
	return bytesOf(16, 3)
}

// rings returns a client and a server keyring with one MKT each for alg:
// the client sends KeyID 1 and receives 2, the server the other way round.
func rings(tb testing.TB, alg string) (cring, sring *ao.Keyring) {
	tb.Helper()
	mkt := func(peer netip.Addr, send, recv uint8) keys.AO {
		return keys.AO{Peer: netip.PrefixFrom(peer, 32), SendID: send, RecvID: recv,
			Algorithm: alg, Key: masterKey(alg), MACLen: macLenOf(alg)}
	}
	cring, sring = ao.NewKeyring(nil), ao.NewKeyring(nil)
	if _, err := cring.Add(mkt(server.Addr(), 1, 2)); err != nil {
		tb.Fatal(err)
	}
	if _, err := sring.Add(mkt(client.Addr(), 2, 1)); err != nil {
		tb.Fatal(err)
	}
	return cring, sring
}

// established returns the two ends of a TCP-AO connection after its
// handshake: the client signed its SYN, the server accepted it and signed
// a SYN-ACK, the client verified that (and so learnt the server's ISN).
func established(tb testing.TB, alg string) (c, s *ao.Conn) {
	tb.Helper()
	cring, sring := rings(tb, alg)
	return establishedOn(tb, cring, sring)
}

// benchContexts is the Policy.Contexts of the benchmarks' connections:
// go test -bench Floor -args -contexts segment.
var benchContexts = flag.String("contexts", "adaptive", "the benchmark connections' ao.Policy.Contexts: adaptive, segment or leased")

// benchPolicy is the benchmarks' Policy, from -contexts.
func benchPolicy(tb testing.TB) ao.Policy {
	modes := map[string]ao.Contexts{"adaptive": ao.ContextsAdaptive, "segment": ao.ContextsPerSegment, "leased": ao.ContextsLeased}
	m, ok := modes[*benchContexts]
	if !ok {
		tb.Fatalf("-contexts %q: want adaptive, segment or leased", *benchContexts)
	}
	return ao.Policy{Contexts: m}
}

// establishedOn is established on the given keyrings.
func establishedOn(tb testing.TB, cring, sring *ao.Keyring) (c, s *ao.Conn) {
	tb.Helper()
	c, s = new(ao.Conn), new(ao.Conn)
	pol := benchPolicy(tb)
	if err := c.Init(cring, ao.Endpoint{Local: client, Remote: server, LocalISN: 1000}, pol); err != nil {
		tb.Fatal(err)
	}
	maclen := cring.LookupSend(server.Addr(), 1, 0).MACLen()
	syn := fromTCP(tb, client.Addr(), server.Addr(), tcpHeaderLen(maclen, client.Port(), server.Port(), 1000, 0, segment.SYN, nil))
	if err := c.Sign(&syn); err != nil {
		tb.Fatal(err)
	}
	if signed, err := ao.NewListener(sring, pol, 0).Accept(&syn, s); !signed || err != nil {
		tb.Fatalf("accept: %v %v", signed, err)
	}
	synack := fromTCP(tb, server.Addr(), client.Addr(), tcpHeaderLen(maclen, server.Port(), client.Port(), 5000, 1001, segment.SYN|segment.ACK, nil))
	if err := s.Sign(&synack); err != nil {
		tb.Fatal(err)
	}
	if err := c.Verify(&synack); err != nil {
		tb.Fatal(err)
	}
	return c, s
}

// BenchmarkAO is Conn.Sign and Conn.Verify of a data segment of an
// established connection (IPv4, 36-byte header, maclen 12), per algorithm
// and payload; SetBytes is what the MAC covers (SNE, pseudo-header,
// header, payload), as in BenchmarkAOBareRestore.
func BenchmarkAO(b *testing.B) {
	for _, a := range mac.Algorithms() {
		for _, op := range []string{"sign", "verify"} {
			for _, n := range aoPayloads {
				b.Run(fmt.Sprintf("%s/%s/%d", benchName(a.Name()), op, n), func(b *testing.B) {
					c, s := established(b, a.Name())
					defer c.Close()
					defer s.Close()
					tcp := tcpHeaderLen(macLenOf(a.Name()), client.Port(), server.Port(), 1001, 5001, segment.ACK|segment.PSH, bytesOf(n, 4))
					seg := fromTCP(b, client.Addr(), server.Addr(), tcp)
					if err := c.Sign(&seg); err != nil {
						b.Fatal(err)
					}
					if err := s.Verify(&seg); err != nil {
						b.Fatal(err)
					}
					b.SetBytes(int64(aoCoveredFor(a.Name(), n)))
					b.ReportAllocs()
					clk := startCPU(b)
					if op == "sign" {
						for b.Loop() {
							if err := c.Sign(&seg); err != nil {
								b.Fatal(err)
							}
						}
					} else {
						for b.Loop() {
							if err := s.Verify(&seg); err != nil {
								b.Fatal(err)
							}
						}
					}
					clk.report(b)
				})
			}
		}
	}
}

// BenchmarkAOBareRestore is the restore-to-keyed-state MAC (Reset, one
// Write, Sum) over as many bytes as BenchmarkAO's MAC covers at a
// 1448-byte payload: the throughput Sign and Verify are held to.
func BenchmarkAOBareRestore(b *testing.B) {
	const payload = 1448
	for _, a := range mac.Algorithms() {
		b.Run(fmt.Sprintf("%s/%d", benchName(a.Name()), payload), func(b *testing.B) {
			benchMAC(b, a, "restore", bytesOf(a.Size(), 1), bytesOf(aoCoveredFor(a.Name(), payload), 2))
		})
	}
}

// BenchmarkNewConnection is what a new connection costs a listener: per
// iteration a SYN it has not seen (its own port and ISN, signed by a
// client beforehand) is accepted into a reused Conn (Accept closes and
// resets it: derive the Receive_SYN key from the MKT's prepared KDF state,
// verify the SYN), and the SYN-ACK, carrying an 11-byte greeting, is
// signed (derive Send_other, MAC). SetBytes is what the two MACs cover.
func BenchmarkNewConnection(b *testing.B) {
	for _, a := range mac.Algorithms() {
		b.Run(benchName(a.Name()), func(b *testing.B) { benchNewConnection(b, a.Name()) })
	}
}

func benchNewConnection(b *testing.B, alg string) {
	cring, sring := rings(b, alg)
	l := ao.NewListener(sring, ao.Policy{}, 0)
	isn := func(i int) uint32 { return uint32(i)*2654435761 + 12345 }

	// The SYNs, each of a connection of its own. The client Conn of the
	// first stays open to check the SYN-ACK.
	syns := make([]segment.Segment, 256)
	var c0 ao.Conn
	for i := range syns {
		local := netip.AddrPortFrom(client.Addr(), uint16(33000+i))
		var c ao.Conn
		cc := &c
		if i == 0 {
			cc = &c0
		}
		if err := cc.Init(cring, ao.Endpoint{Local: local, Remote: server, LocalISN: isn(i)}, ao.Policy{}); err != nil {
			b.Fatal(err)
		}
		syns[i] = fromTCP(b, client.Addr(), server.Addr(), tcpHeaderLen(macLenOf(alg), local.Port(), server.Port(), isn(i), 0, segment.SYN, nil))
		if err := cc.Sign(&syns[i]); err != nil {
			b.Fatal(err)
		}
		if i != 0 {
			c.Close()
		}
	}
	defer c0.Close()

	synack := fromTCP(b, server.Addr(), client.Addr(), tcpHeaderLen(macLenOf(alg), server.Port(), 0, 0, 0, segment.SYN|segment.ACK, []byte("220 ready\r\n")))
	var s ao.Conn
	defer s.Close()
	accept := func(i int) {
		syn := &syns[i%len(syns)]
		localISN := isn(i) ^ 0x5a5a5a5a
		if signed, err := l.Accept(syn, &s); !signed || err != nil {
			b.Fatalf("accept: %v %v", signed, err)
		}
		h := synack.Header()
		binary.BigEndian.PutUint16(h[2:], syn.Header().SrcPort())
		binary.BigEndian.PutUint32(h[4:], localISN)
		binary.BigEndian.PutUint32(h[8:], syn.Header().Seq()+1)
		if err := s.Sign(&synack); err != nil {
			b.Fatal(err)
		}
	}
	accept(0)
	if err := c0.Verify(&synack); err != nil {
		b.Fatalf("client cannot verify the SYN-ACK: %v", err)
	}

	i := 1
	benchLoop(b, aoCoveredFor(alg, 0)+aoCoveredFor(alg, len(synack.Payload())), func() {
		accept(i)
		i++
	})
}

// BenchmarkMD5 is md5sig's Keyring.Sign and Keyring.Verify of a segment
// (IPv4, 20-byte header and the MD5 option, a 16-byte key) per payload,
// and bare crypto/md5 (Reset, one Write, Sum) over as many bytes as the
// digest covers: pseudo-header 12 + header 20 + payload + key 16. The
// three of one payload run one after the other; SetBytes is those bytes
// in all three.
func BenchmarkMD5(b *testing.B) {
	key := bytesOf(16, 5)
	for _, n := range aoPayloads {
		covered := 12 + segment.TCPMinimumSize + n + len(key)
		for _, op := range []string{"sign", "verify", "bare"} {
			b.Run(fmt.Sprintf("%s/%d", op, n), func(b *testing.B) {
				if op == "bare" {
					h, msg, out := md5.New(), bytesOf(covered, 2), make([]byte, 0, md5.Size)
					benchLoop(b, covered, func() {
						h.Reset()
						h.Write(msg)
						out = h.Sum(out[:0])
					})
					return
				}
				r := md5sig.NewKeyring(nil)
				if _, err := r.Add(keys.MD5{Peer: netip.PrefixFrom(server.Addr(), 32), Key: key}); err != nil {
					b.Fatal(err)
				}
				tcp := md5Header(client.Port(), server.Port(), 1001, 5001, bytesOf(n, 4))
				seg := fromTCP(b, client.Addr(), server.Addr(), tcp)
				if err := r.Sign(&seg, 0); err != nil {
					b.Fatal(err)
				}
				if op == "verify" { // the receiver's keyring: its key is for the client
					r = md5sig.NewKeyring(nil)
					if _, err := r.Add(keys.MD5{Peer: netip.PrefixFrom(client.Addr(), 32), Key: key}); err != nil {
						b.Fatal(err)
					}
					if err := r.Verify(&seg, 0); err != nil {
						b.Fatal(err)
					}
				}
				b.SetBytes(int64(covered))
				b.ReportAllocs()
				clk := startCPU(b)
				if op == "sign" {
					for b.Loop() {
						if err := r.Sign(&seg, 0); err != nil {
							b.Fatal(err)
						}
					}
				} else {
					for b.Loop() {
						if err := r.Verify(&seg, 0); err != nil {
							b.Fatal(err)
						}
					}
				}
				clk.report(b)
			})
		}
	}
}

// md5Header lays out a TCP header with the MD5 option, then payload.
func md5Header(sport, dport uint16, seq, ack uint32, payload []byte) []byte {
	opts := md5sig.AppendOption(nil)
	for len(opts)%4 != 0 {
		opts = append(opts, segment.OptionKindNOP)
	}
	h := make([]byte, segment.TCPMinimumSize, segment.TCPMinimumSize+len(opts)+len(payload))
	binary.BigEndian.PutUint16(h[0:], sport)
	binary.BigEndian.PutUint16(h[2:], dport)
	binary.BigEndian.PutUint32(h[4:], seq)
	binary.BigEndian.PutUint32(h[8:], ack)
	h[12] = byte((segment.TCPMinimumSize + len(opts)) / 4 << 4)
	h[13] = byte(segment.ACK | segment.PSH)
	binary.BigEndian.PutUint16(h[14:], 65535)
	h = append(h, opts...)
	return append(h, payload...)
}

// macOp returns one MAC of msg in the given mode of BenchmarkMAC, as a
// function, its state set up.
func macOp(b *testing.B, a *mac.Algorithm, mode string, key, msg []byte) func() {
	out := make([]byte, 0, mac.MaxSize)
	switch mode {
	case "keyschedule":
		c := a.NewContext()
		return func() {
			if err := c.SetKey(key); err != nil {
				b.Fatal(err)
			}
			c.Write(msg)
			out = c.Finish(out[:0])
		}
	case "clone":
		var tmpl mac.Key
		if err := tmpl.Init(a, key); err != nil {
			b.Fatal(err)
		}
		c := a.NewContext()
		return func() {
			c.Start(&tmpl)
			c.Write(msg)
			out = c.Finish(out[:0])
		}
	case "restore":
		c := a.NewContext()
		if err := c.SetKey(key); err != nil {
			b.Fatal(err)
		}
		return func() {
			c.Restart()
			c.Write(msg)
			out = c.Finish(out[:0])
		}
	case "bare":
		if a.IsKMAC() {
			k := newBareKMAC()
			return func() { out = k.sum(out[:0], msg) }
		}
		if a.IsCMAC() {
			m := newCBCMAC(b, key, msg)
			return func() { out = m.sum(out[:0]) }
		}
		h := bareHash[a.Name()]()
		return func() {
			h.Reset()
			h.Write(msg)
			out = h.Sum(out[:0])
		}
	}
	b.Fatalf("unknown mode %q", mode)
	return nil
}

// Example shows the three ways a context gets its keyed state, which
// BenchmarkMAC times: a key schedule, a restore, a clone of a template.
func Example() {
	alg, err := mac.Lookup("hmac(sha256)")
	if err != nil {
		panic(err)
	}
	key := []byte("a traffic key")
	msg := []byte("SNE | pseudo-header | TCP header | payload")

	c := alg.NewContext()
	if err := c.SetKey(key); err != nil { // key schedule
		panic(err)
	}
	c.Write(msg)
	fresh := c.Finish(nil)

	c.Restart() // restore: no key schedule
	c.Write(msg)
	restored := c.Finish(nil)

	var tmpl mac.Key // a template, shared by any number of contexts
	if err := tmpl.Init(alg, key); err != nil {
		panic(err)
	}
	d := alg.NewContext()
	d.Start(&tmpl) // clone
	d.Write(msg)
	cloned := d.Finish(nil)

	fmt.Println(mac.Equal(fresh, restored), mac.Equal(fresh, cloned))
	// Output: true true
}
