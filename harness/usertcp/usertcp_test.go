package usertcp

import (
	"bytes"
	"context"
	"errors"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var (
	ap4a = netip.MustParseAddrPort("192.0.2.1:40000")
	ap4b = netip.MustParseAddrPort("192.0.2.2:25")
	ap6a = netip.MustParseAddrPort("[2001:db8::1]:40000")
	ap6b = netip.MustParseAddrPort("[2001:db8::2]:25")
)

func TestBuildParse(t *testing.T) {
	for _, tc := range []struct {
		name     string
		src, dst netip.AddrPort
	}{{"v4", ap4a, ap4b}, {"v6", ap6a, ap6b}} {
		t.Run(tc.name, func(t *testing.T) {
			buf := make([]byte, maxPacket)
			payload := []byte("hello, odd length")
			h := header{src: tc.src, dst: tc.dst, seq: 0xfffffff0, ack: 7, flags: flagSYN | flagACK,
				wnd: 1234, mss: 1400, ipID: 9}
			pkt, off := build(buf, h, payload)
			finish(pkt, off)
			s, err := parse(pkt)
			if err != nil {
				t.Fatal(err)
			}
			if s.src != tc.src || s.dst != tc.dst || s.seq != h.seq || s.ack != 7 || s.flags != h.flags ||
				s.wnd != 1234 || s.mss != 1400 || !bytes.Equal(s.payload, payload) {
				t.Errorf("parsed %+v", s)
			}
			opts := pkt[off+20 : off+24]
			if !bytes.Equal(opts, []byte{2, 4, 0x05, 0x78}) {
				t.Errorf("options %x", opts)
			}
			for i := range pkt {
				bad := append([]byte(nil), pkt...)
				bad[i] ^= 0x40
				if _, err := parse(bad); err == nil && i != 1 && !(tc.name == "v6" && i < 8 && i != 4 && i != 5 && i != 6) {
					// Only IPv4's TOS byte and IPv6's traffic class and
					// flow label are covered by no checksum.
					t.Errorf("byte %d flipped: still parses", i)
				}
			}
		})
	}
}

func TestChecksumKnown(t *testing.T) {
	// RFC 1071 §3's example bytes: sum 0xddf2, checksum 0x220d.
	if got := checksum([]byte{0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7}, 0); got != 0x220d {
		t.Errorf("checksum = %#x, want 0x220d", got)
	}
}

// tap wraps a Link, recording what is written and dropping packets chosen
// by drop (numbered from 1 per direction).
type tap struct {
	Link
	mu      sync.Mutex
	written [][]byte
	n       int
	drop    func(n int, pkt []byte) bool
}

func (t *tap) WritePacket(pkt []byte) error {
	t.mu.Lock()
	t.n++
	n := t.n
	t.written = append(t.written, append([]byte(nil), pkt...))
	drop := t.drop != nil && t.drop(n, pkt)
	t.mu.Unlock()
	if drop {
		return nil
	}
	return t.Link.WritePacket(pkt)
}

func (t *tap) packets() [][]byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([][]byte(nil), t.written...)
}

func pattern(n, salt int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*13 + salt)
	}
	return b
}

// exchange is Exchange with a greeting and patterned request and reply
// of the given lengths, failing t on an error.
func exchange(t *testing.T, a, b Link, ccfg, scfg Config, reqLen, repLen int) (client, server Stats) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, server, err := Exchange(ctx, a, b, ccfg, scfg, []byte("220 usertcp ready\r\n"), pattern(reqLen, 1), pattern(repLen, 2))
	if err != nil {
		t.Fatal(err)
	}
	return client, server
}

func TestPipeExchange(t *testing.T) {
	for _, tc := range []struct {
		name string
		a, b netip.AddrPort
	}{{"v4", ap4a, ap4b}, {"v6", ap6a, ap6b}} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := Pipe()
			ta := &tap{Link: a}
			cs, ss := exchange(t, ta, b, Config{Local: tc.a, Remote: tc.b}, Config{Local: tc.b}, 100000, 70000)
			if cs.Retransmits != 0 || ss.Retransmits != 0 || cs.AuthDropped+ss.AuthDropped+cs.Ignored+ss.Ignored != 0 {
				t.Errorf("lossless link: client %+v, server %+v", cs, ss)
			}
			// The SYN carries the MSS option only; data segments are
			// at most MSS long.
			pkts := ta.packets()
			syn, _ := parse(pkts[0])
			if syn.flags != flagSYN || syn.mss != Config.withDefaults(Config{Local: tc.a}).MSS {
				t.Errorf("first packet %+v", syn)
			}
			for _, p := range pkts {
				s, err := parse(p)
				if err != nil {
					t.Fatal(err)
				}
				if len(s.payload) > syn.mss {
					t.Errorf("segment of %d bytes, MSS %d", len(s.payload), syn.mss)
				}
			}
		})
	}
}

func TestPipeLoss(t *testing.T) {
	a, b := Pipe()
	// Drop the first SYN, the first SYN-ACK, and a few more packets each
	// way: a finite set, so that no segment can be lost more often than
	// MaxRetries (a periodic pattern can starve go-back-N forever).
	drops := map[int]bool{1: true, 4: true, 7: true, 15: true, 26: true, 27: true, 40: true}
	lossy := func(n int, pkt []byte) bool { return drops[n] }
	ta, tb := &tap{Link: a, drop: lossy}, &tap{Link: b, drop: lossy}
	fast := 20 * time.Millisecond
	cs, ss := exchange(t, ta, tb,
		Config{Local: ap4a, Remote: ap4b, RTO: fast, MaxRetries: 8},
		Config{Local: ap4b, RTO: fast, MaxRetries: 8}, 50000, 50000)
	if cs.Retransmits == 0 || ss.Retransmits == 0 {
		t.Errorf("no retransmissions: client %+v, server %+v", cs, ss)
	}
}

func TestDialTimeout(t *testing.T) {
	a, b := Pipe()
	ta := &tap{Link: a}
	_, err := Dial(context.Background(), ta, Config{Local: ap4a, Remote: ap4b, RTO: 5 * time.Millisecond, MaxRetries: 3})
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("Dial = %v, want ErrTimeout", err)
	}
	if n := len(ta.packets()); n != 4 {
		t.Errorf("%d SYNs sent, want 1 + 3 retries", n)
	}
	_ = b
}

func TestDialRefused(t *testing.T) {
	a, b := Pipe()
	go func() {
		buf := make([]byte, maxPacket)
		n, err := b.ReadPacket(buf, time.Now().Add(10*time.Second))
		if err != nil {
			return
		}
		syn, _ := parse(buf[:n])
		rst, off := build(make([]byte, maxPacket), header{src: syn.dst, dst: syn.src, ack: syn.seq + 1, flags: flagRST | flagACK}, nil)
		finish(rst, off)
		b.WritePacket(rst)
	}()
	_, err := Dial(context.Background(), a, Config{Local: ap4a, Remote: ap4b})
	if !errors.Is(err, ErrRefused) {
		t.Fatalf("Dial = %v, want ErrRefused", err)
	}
}

func TestAcceptContext(t *testing.T) {
	a, _ := Pipe()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	if _, err := Accept(ctx, a, Config{Local: ap4b}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Accept = %v, want context.DeadlineExceeded", err)
	}
}

func TestReadDeadlineAndAbort(t *testing.T) {
	a, b := Pipe()
	var srv atomic.Pointer[Conn]
	done := make(chan error, 1)
	go func() {
		c, err := Accept(context.Background(), b, Config{Local: ap6b})
		srv.Store(c)
		if err == nil {
			// The client's RST ends the server's Read.
			_, err = c.Read(make([]byte, 1))
		}
		done <- err
	}()
	c, err := Dial(context.Background(), a, Config{Local: ap6a, Remote: ap6b})
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(20 * time.Millisecond))
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("Read = %v, want deadline exceeded", err)
	}
	if err := c.Abort(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, ErrReset) {
		t.Errorf("server Read = %v, want ErrReset", err)
	}
	if _, err := c.Write([]byte("x")); !errors.Is(err, ErrClosed) {
		t.Errorf("Write after Abort = %v", err)
	}
}

// The Auth hook: segments carry the option where the Auth put it, a peer
// with the same key verifies everything, a peer with another key drops
// everything and the handshake fails.
func TestAuthHook(t *testing.T) {
	t.Run("same key", func(t *testing.T) {
		a, b := Pipe()
		ta := &tap{Link: a}
		cs, ss := exchange(t, ta, b,
			Config{Local: ap4a, Remote: ap4b, Auth: newMD5Auth(ap4b.Addr(), "k")},
			Config{Local: ap4b, Auth: newMD5Auth(ap4a.Addr(), "k")}, 3000, 3000)
		if cs.AuthDropped != 0 || ss.AuthDropped != 0 {
			t.Errorf("dropped: client %+v server %+v", cs, ss)
		}
		for i, p := range ta.packets() {
			_, _, tcp, _ := splitIP(p)
			if !bytes.Equal(tcp[20:24], []byte{1, 1, 19, 18}) {
				t.Errorf("packet %d options %x", i, tcp[20:24])
			}
			if s, _ := parse(p); s.flags&flagSYN != 0 && !bytes.Equal(tcp[40:44], []byte{2, 4, 0x05, 0xb4}) {
				t.Errorf("SYN: MSS option not after the auth option: %x", tcp[20:44])
			}
		}
	})
	t.Run("other key", func(t *testing.T) {
		a, b := Pipe()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		srvStats := make(chan Stats, 1)
		go func() {
			_, err := Accept(ctx, b, Config{Local: ap4b, Auth: newMD5Auth(ap4a.Addr(), "right")})
			srvStats <- Stats{}
			_ = err
		}()
		_, err := Dial(context.Background(), a, Config{Local: ap4a, Remote: ap4b,
			Auth: newMD5Auth(ap4b.Addr(), "wrong"), RTO: 5 * time.Millisecond, MaxRetries: 2})
		if !errors.Is(err, ErrTimeout) {
			t.Errorf("Dial with the wrong key = %v, want ErrTimeout", err)
		}
		cancel()
		<-srvStats
	})
}

func TestConfigErrors(t *testing.T) {
	a, _ := Pipe()
	for _, cfg := range []Config{
		{},
		{Local: ap4a},
		{Local: ap4a, Remote: ap6b},
		{Local: ap4a, Remote: ap4b, MSS: 70000},
	} {
		if _, err := Dial(context.Background(), a, cfg); err == nil {
			t.Errorf("Dial(%+v) succeeded", cfg)
		}
	}
}
