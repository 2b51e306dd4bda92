package usertcp

// Engine → kernel: the endpoint against ordinary kernel sockets across a
// TUN device, inside a network namespace the test creates. Plain TCP in
// both directions and both address families proves the endpoint; TCP-MD5
// with md5sig through packetauth.Layer proves that the kernel accepts what the
// engine signs and that the engine accepts what the kernel signs — and,
// with a wrong key, that the kernel really checks (TCPMD5Failure moves,
// nothing is delivered).

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tcpsig/tcpsig/harness/kstat"
	"github.com/tcpsig/tcpsig/harness/netns"
	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/linuxsock"
)

const (
	kernelPort = 179   // the kernel's listener
	userPort   = 40000 // the endpoint's port
)

// kernelNet is the namespace a test runs in: a TUN device whose prefix is
// routed to the endpoint, the kernel's address on it, and the endpoint's.
type kernelNet struct {
	tun          *TUN
	kaddr, uaddr netip.Addr
}

var errSkipNoTUN = errors.New("no /dev/net/tun")

// inKernelNet runs f on the goroutine of a fresh network namespace where
// the kernel owns kaddr on a TUN device and the endpoint answers for
// uaddr. Sockets must be created on that goroutine.
func inKernelNet(t *testing.T, v6 bool, f func(k kernelNet) error) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("not root: the test creates a network namespace and a TUN device")
	}
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		t.Skip("no /dev/net/tun: ", err)
	}
	err := netns.Run(func() error {
		tun, err := OpenTUN("utcp0")
		if err != nil {
			if errors.Is(err, ErrNoTUN) {
				return errSkipNoTUN
			}
			return err
		}
		defer tun.Close()
		k := kernelNet{tun: tun}
		p := netip.MustParsePrefix("10.99.0.1/24")
		k.uaddr = netip.MustParseAddr("10.99.0.2")
		if v6 {
			p = netip.MustParsePrefix("2001:db8:99::1/64")
			k.uaddr = netip.MustParseAddr("2001:db8:99::2")
		}
		k.kaddr = p.Addr()
		// Up first: an IPv6 address added to a down link becomes usable
		// only when a work queue gets to it after the link comes up, and
		// a SYN arriving before that is dropped (Ip6InAddrErrors).
		if err := netns.LinkUp(tun.Name()); err != nil {
			return err
		}
		// The address with its prefix makes the kernel route the prefix,
		// and so uaddr, to the TUN device.
		if err := netns.AddAddr(tun.Name(), p); err != nil {
			return err
		}
		return f(k)
	})
	if errors.Is(err, errSkipNoTUN) {
		t.Skip("no /dev/net/tun")
	}
	if err != nil {
		t.Fatal(err)
	}
}

func needMD5(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("not root: the test creates a network namespace and a TUN device")
	}
	if err := linuxsock.ProbeMD5(); errors.Is(err, linuxsock.ErrNoMD5) {
		t.Skip("no CONFIG_TCP_MD5SIG: ", err)
	} else if err != nil {
		t.Fatal(err)
	}
}

var (
	request  = pattern(5000, 3) // several segments
	reply    = pattern(3000, 4)
	greeting = []byte("220 usertcp ESMTP ready\r\n")
)

// countingAuth counts the segments its Auth signs and verifies.
type countingAuth struct {
	Auth
	signed, verified atomic.Int64
}

func (a *countingAuth) Outbound(dst, pkt []byte) ([]byte, error) {
	a.signed.Add(1)
	return a.Auth.Outbound(dst, pkt)
}

func (a *countingAuth) Inbound(dst, pkt []byte) ([]byte, error) {
	out, err := a.Auth.Inbound(dst, pkt)
	if err == nil {
		a.verified.Add(1)
	}
	return out, err
}

func listen(k kernelNet, keys ...keys.MD5) (*net.TCPListener, error) {
	lc := net.ListenConfig{Control: linuxsock.Control(linuxsock.Keys{MD5: keys}), KeepAlive: -1}
	ln, err := lc.Listen(context.Background(), "tcp", netip.AddrPortFrom(k.kaddr, kernelPort).String())
	if err != nil {
		return nil, err
	}
	return ln.(*net.TCPListener), nil
}

// kernelServer accepts one connection, reads the request, sends the
// reply, waits for the endpoint's FIN and closes.
func kernelServer(ln *net.TCPListener) error {
	ln.SetDeadline(time.Now().Add(30 * time.Second))
	c, err := ln.Accept()
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	got := make([]byte, len(request))
	if _, err := io.ReadFull(c, got); err != nil {
		return fmt.Errorf("kernel read: %w", err)
	}
	if !bytes.Equal(got, request) {
		return errors.New("kernel: request differs")
	}
	if _, err := c.Write(reply); err != nil {
		return err
	}
	if n, err := c.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		return fmt.Errorf("kernel: want EOF, got %d, %v", n, err)
	}
	return nil
}

// activeOpen: the endpoint connects to a kernel listener, sends the
// request, reads the reply and closes.
func activeOpen(k kernelNet, auth Auth, keys ...keys.MD5) (Stats, error) {
	ln, err := listen(k, keys...)
	if err != nil {
		return Stats{}, err
	}
	defer ln.Close()
	errc := make(chan error, 1)
	go func() { errc <- kernelServer(ln) }()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := Dial(ctx, k.tun, Config{
		Local:  netip.AddrPortFrom(k.uaddr, userPort),
		Remote: netip.AddrPortFrom(k.kaddr, kernelPort),
		Auth:   auth,
	})
	if err != nil {
		return Stats{}, fmt.Errorf("dial: %w", err)
	}
	c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := c.Write(request); err != nil {
		return c.Stats(), fmt.Errorf("write: %w", err)
	}
	got := make([]byte, len(reply))
	if _, err := io.ReadFull(c, got); err != nil {
		return c.Stats(), fmt.Errorf("read: %w", err)
	}
	if !bytes.Equal(got, reply) {
		return c.Stats(), errors.New("reply differs")
	}
	if err := c.Close(); err != nil {
		return c.Stats(), fmt.Errorf("close: %w", err)
	}
	return c.Stats(), <-errc
}

// passiveOpen: the kernel connects to the endpoint, which greets in its
// SYN-ACK; the kernel reads the greeting, sends the request, reads the
// reply and closes.
func passiveOpen(k kernelNet, auth Auth, keys ...keys.MD5) (Stats, error) {
	type result struct {
		st  Stats
		err error
	}
	done := make(chan result, 1)
	tp := &tap{Link: k.tun}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	go func() {
		c, err := Accept(ctx, tp, Config{Local: netip.AddrPortFrom(k.uaddr, userPort), Auth: auth, Greeting: greeting})
		if err != nil {
			done <- result{err: fmt.Errorf("accept: %w", err)}
			return
		}
		err = func() error {
			c.SetDeadline(time.Now().Add(30 * time.Second))
			got := make([]byte, len(request))
			if _, err := io.ReadFull(c, got); err != nil {
				return fmt.Errorf("read: %w", err)
			}
			if !bytes.Equal(got, request) {
				return errors.New("request differs")
			}
			if _, err := c.Write(reply); err != nil {
				return fmt.Errorf("write: %w", err)
			}
			if n, err := c.Read(make([]byte, 1)); n != 0 || err != io.EOF {
				return fmt.Errorf("want EOF, got %d, %v", n, err)
			}
			return c.Close()
		}()
		done <- result{c.Stats(), err}
	}()

	// The kernel side, on the namespace's goroutine.
	kerr := func() error {
		d := net.Dialer{Control: linuxsock.Control(linuxsock.Keys{MD5: keys}), KeepAlive: -1, Timeout: 20 * time.Second}
		c, err := d.Dial("tcp", netip.AddrPortFrom(k.uaddr, userPort).String())
		if err != nil {
			return err
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(30 * time.Second))
		g := make([]byte, len(greeting))
		if _, err := io.ReadFull(c, g); err != nil || !bytes.Equal(g, greeting) {
			return fmt.Errorf("kernel: greeting %q, %v", g, err)
		}
		if _, err := c.Write(request); err != nil {
			return err
		}
		got := make([]byte, len(reply))
		if _, err := io.ReadFull(c, got); err != nil {
			return fmt.Errorf("kernel read: %w", err)
		}
		if !bytes.Equal(got, reply) {
			return errors.New("kernel: reply differs")
		}
		return c.Close()
	}()
	if kerr != nil {
		cancel()
	}
	r := <-done
	if err := errors.Join(kerr, r.err); err != nil {
		return r.st, err
	}
	// The greeting rode on the SYN-ACK. Linux (without TCP Fast Open)
	// discards data on a SYN-ACK and acknowledges only the SYN, so the
	// endpoint sent it again as data, right after the SYN.
	pkts := tp.packets()
	synack, err := parse(pkts[0])
	if err != nil || synack.flags != flagSYN|flagACK || !bytes.Equal(synack.payload, greeting) {
		return r.st, fmt.Errorf("first packet is not a SYN-ACK with the greeting: %+v, %v", synack, err)
	}
	for _, p := range pkts[1:] {
		if s, err := parse(p); err == nil && s.flags&flagSYN == 0 && s.seq == synack.seq+1 && bytes.Equal(s.payload, greeting) {
			return r.st, nil
		}
	}
	return r.st, errors.New("the greeting was not sent again as data")
}

func TestKernelPlain(t *testing.T) {
	for _, v6 := range []bool{false, true} {
		for _, passive := range []bool{false, true} {
			name := map[bool]string{false: "v4", true: "v6"}[v6] + map[bool]string{false: "-active", true: "-passive"}[passive]
			t.Run(name, func(t *testing.T) {
				inKernelNet(t, v6, func(k kernelNet) error {
					open := activeOpen
					if passive {
						open = passiveOpen
					}
					st, err := open(k, nil)
					if err != nil {
						return err
					}
					t.Logf("%+v", st)
					if st.Received == 0 {
						t.Error("no packet received")
					}
					return nil
				})
			})
		}
	}
}

const md5Key = "bgp-secret-42"

// TestKernelMD5 is the engine → kernel proof for TCP-MD5: every segment
// the endpoint sends is signed by md5sig and every one it receives is
// verified, the kernel's TCP-MD5 counters do not move, and the data gets
// through both ways.
func TestKernelMD5(t *testing.T) {
	needMD5(t)
	for _, v6 := range []bool{false, true} {
		for _, passive := range []bool{false, true} {
			name := map[bool]string{false: "v4", true: "v6"}[v6] + map[bool]string{false: "-active", true: "-passive"}[passive]
			t.Run(name, func(t *testing.T) {
				inKernelNet(t, v6, func(k kernelNet) error {
					kkey := keys.MD5{Peer: netip.PrefixFrom(k.uaddr, k.uaddr.BitLen()), Key: []byte(md5Key)}
					auth := &countingAuth{Auth: newMD5Auth(k.kaddr, md5Key)}
					before, err := kstat.ReadMD5()
					if err != nil {
						return err
					}
					open := activeOpen
					if passive {
						open = passiveOpen
					}
					st, err := open(k, auth, kkey)
					if err != nil {
						return err
					}
					after, err := kstat.ReadMD5()
					if err != nil {
						return err
					}
					t.Logf("endpoint %+v; kernel counters %+v -> %+v", st, before, after)
					if after != before {
						t.Errorf("kernel TCP-MD5 counters moved: %+v -> %+v", before, after)
					}
					if st.AuthDropped != 0 || st.Received == 0 || auth.verified.Load() != int64(st.Received) {
						t.Errorf("verified %d of %d received, %d dropped", auth.verified.Load(), st.Received, st.AuthDropped)
					}
					if auth.signed.Load() != int64(st.Sent) {
						t.Errorf("signed %d of %d sent", auth.signed.Load(), st.Sent)
					}
					return nil
				})
			})
		}
	}
}

// failFast bounds the wrong-key cases: 1 + 3 transmissions of a segment.
var failFast = Config{RTO: 100 * time.Millisecond, MaxRetries: 3}

// TestKernelMD5WrongKey proves the kernel checks what the engine signs:
// with a wrong key, or none, the kernel drops every segment, counts it,
// and neither completes the handshake nor delivers data.
func TestKernelMD5WrongKey(t *testing.T) {
	needMD5(t)
	for _, v6 := range []bool{false, true} {
		fam := map[bool]string{false: "v4", true: "v6"}[v6]
		t.Run(fam+"-handshake", func(t *testing.T) {
			inKernelNet(t, v6, func(k kernelNet) error {
				return wrongKeyHandshake(t, k, newMD5Auth(k.kaddr, "not-the-key"),
					func(b, a kstat.MD5) uint64 { return a.Failure - b.Failure })
			})
		})
		t.Run(fam+"-unsigned", func(t *testing.T) {
			inKernelNet(t, v6, func(k kernelNet) error {
				return wrongKeyHandshake(t, k, nil,
					func(b, a kstat.MD5) uint64 { return a.NotFound - b.NotFound })
			})
		})
		t.Run(fam+"-data", func(t *testing.T) {
			inKernelNet(t, v6, func(k kernelNet) error { return wrongKeyData(t, k) })
		})
	}
}

// wrongKeyHandshake: the endpoint's SYNs carry a bad signature (or none);
// each is dropped and counted, no connection is accepted.
func wrongKeyHandshake(t *testing.T, k kernelNet, auth Auth, moved func(b, a kstat.MD5) uint64) error {
	ln, err := listen(k, keys.MD5{Peer: netip.PrefixFrom(k.uaddr, k.uaddr.BitLen()), Key: []byte(md5Key)})
	if err != nil {
		return err
	}
	defer ln.Close()
	before, err := kstat.ReadMD5()
	if err != nil {
		return err
	}
	cfg := failFast
	cfg.Local, cfg.Remote, cfg.Auth = netip.AddrPortFrom(k.uaddr, userPort), netip.AddrPortFrom(k.kaddr, kernelPort), auth
	tap := &tap{Link: k.tun}
	_, err = Dial(context.Background(), tap, cfg)
	if !errors.Is(err, ErrTimeout) {
		t.Errorf("Dial = %v, want ErrTimeout", err)
	}
	after, err := kstat.ReadMD5()
	if err != nil {
		return err
	}
	syns := uint64(len(tap.packets()))
	t.Logf("%d SYNs sent; kernel counters %+v -> %+v", syns, before, after)
	if syns != uint64(1+cfg.MaxRetries) {
		t.Errorf("%d SYNs sent, want %d", syns, 1+cfg.MaxRetries)
	}
	if n := moved(before, after); n != syns {
		t.Errorf("the kernel counted %d drops for %d SYNs", n, syns)
	}
	if kstat.Pending(ln) {
		t.Error("the kernel completed a connection")
	}
	return nil
}

// wrongKeyData: the handshake is signed correctly, then the data with a
// wrong key: the kernel drops every data segment, counts it, and the
// application reads nothing.
func wrongKeyData(t *testing.T, k kernelNet) error {
	ln, err := listen(k, keys.MD5{Peer: netip.PrefixFrom(k.uaddr, k.uaddr.BitLen()), Key: []byte(md5Key)})
	if err != nil {
		return err
	}
	defer ln.Close()
	auth := &SwitchAuth{Good: newMD5Auth(k.kaddr, md5Key)}
	cfg := failFast
	cfg.Local, cfg.Remote, cfg.Auth = netip.AddrPortFrom(k.uaddr, userPort), netip.AddrPortFrom(k.kaddr, kernelPort), auth
	c, err := Dial(context.Background(), k.tun, cfg)
	if err != nil {
		return fmt.Errorf("dial with the right key: %w", err)
	}
	ln.SetDeadline(time.Now().Add(20 * time.Second))
	kc, err := ln.Accept()
	if err != nil {
		return err
	}
	defer kc.Close()
	before, err := kstat.ReadMD5()
	if err != nil {
		return err
	}
	auth.Switch(newMD5Auth(k.kaddr, "not-the-key"))
	if _, err := c.Write([]byte("must not arrive")); !errors.Is(err, ErrTimeout) {
		t.Errorf("Write = %v, want ErrTimeout", err)
	}
	after, err := kstat.ReadMD5()
	if err != nil {
		return err
	}
	t.Logf("kernel counters %+v -> %+v", before, after)
	if n := after.Failure - before.Failure; n != uint64(1+cfg.MaxRetries) {
		t.Errorf("TCPMD5Failure moved by %d, want %d", n, 1+cfg.MaxRetries)
	}
	// Nothing was delivered: a non-blocking read finds no data.
	rc, err := kc.(*net.TCPConn).SyscallConn()
	if err != nil {
		return err
	}
	var n int
	var rerr error
	rc.Control(func(fd uintptr) {
		n, _, rerr = syscall.Recvfrom(int(fd), make([]byte, 64), syscall.MSG_DONTWAIT)
	})
	if !errors.Is(rerr, syscall.EAGAIN) {
		t.Errorf("kernel read %d bytes, err %v; want nothing (EAGAIN)", n, rerr)
	}
	return nil
}
