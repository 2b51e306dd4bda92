package netns

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"syscall"
	"testing"
	"time"
)

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("not root: creating a network namespace needs CAP_SYS_ADMIN")
	}
}

func TestRunIsolatesAndConfigures(t *testing.T) {
	needRoot(t)
	// A listener in the host namespace must not be reachable from inside.
	host, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()

	addr := netip.MustParsePrefix("2001:db8:5::1/128")
	err = Run(func() error {
		if err := SetMTU("lo", 1500); err != nil {
			return err
		}
		if err := AddAddr("lo", addr); err != nil {
			return err
		}
		if err := AddAddr("lo", netip.MustParsePrefix("10.77.0.1/24")); err != nil {
			return err
		}
		if err := AddRoute(netip.MustParsePrefix("10.78.0.0/16"), "lo"); err != nil {
			return err
		}
		lo, err := net.InterfaceByName("lo")
		if err != nil {
			return err
		}
		if lo.MTU != 1500 || lo.Flags&net.FlagUp == 0 {
			t.Errorf("lo: mtu %d flags %v", lo.MTU, lo.Flags)
		}
		// The new address is usable at once (no DAD).
		ln, err := net.Listen("tcp6", netip.AddrPortFrom(addr.Addr(), 0).String())
		if err != nil {
			return err
		}
		defer ln.Close()
		c, err := net.Dial("tcp6", ln.Addr().String())
		if err != nil {
			return err
		}
		c.Close()
		if c, err := net.Dial("tcp4", host.Addr().String()); err == nil {
			c.Close()
			t.Error("reached the host namespace's listener from inside")
		}
		// Adding the same address twice is refused (the request is checked).
		if err := AddAddr("lo", addr); err == nil {
			t.Error("duplicate address accepted")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Back outside, the address does not exist.
	if _, err := net.Listen("tcp6", netip.AddrPortFrom(addr.Addr(), 0).String()); err == nil {
		t.Error("namespace address visible in the host namespace")
	}
}

func TestRunReturnsError(t *testing.T) {
	needRoot(t)
	want := errors.New("from f")
	if err := Run(func() error { return want }); err != want {
		t.Errorf("Run = %v, want %v", err, want)
	}
	if err := Run(func() error { return LinkUp("no-such-if0") }); err == nil {
		t.Error("LinkUp on a missing interface succeeded")
	}
}

// AddVeth makes a pair the kernel then lists; AddVRF makes a VRF where
// the kernel has one, and SetMaster enslaves a veth end to it.
func TestLinks(t *testing.T) {
	needRoot(t)
	err := Run(func() error {
		if err := AddVeth("soveth0", "soveth1", -1); err != nil {
			return err
		}
		for _, n := range []string{"soveth0", "soveth1"} {
			if _, err := net.InterfaceByName(n); err != nil {
				return err
			}
		}
		if err := AddVRF("sovrf0", 10); errors.Is(err, syscall.EOPNOTSUPP) {
			t.Log("kernel without CONFIG_NET_VRF:", err)
			return nil
		} else if err != nil {
			return err
		}
		if _, err := net.InterfaceByName("sovrf0"); err != nil {
			return err
		}
		return SetMaster("soveth0", "sovrf0")
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestKeeper: Do and Go both run in the kept namespace (an address added
// through Do is seen by Go and not by the host), and two keepers joined by
// a veth pair reach each other.
func TestKeeper(t *testing.T) {
	needRoot(t)
	a, err := NewKeeper()
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := NewKeeper()
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	pa, pb := netip.MustParsePrefix("192.0.2.81/24"), netip.MustParsePrefix("192.0.2.82/24")
	if err := a.Do(func() error { return AddVeth("kpA", "kpB", b.FD()) }); err != nil {
		t.Fatal(err)
	}
	for _, x := range []struct {
		k   *Keeper
		dev string
		p   netip.Prefix
	}{{a, "kpA", pa}, {b, "kpB", pb}} {
		if err := x.k.Do(func() error {
			if err := LinkUp(x.dev); err != nil {
				return err
			}
			return AddAddr(x.dev, x.p)
		}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := net.InterfaceByName("kpA"); err == nil {
		t.Fatal("the host sees the kept namespace's interface")
	}
	var ln net.Listener
	if err := b.Do(func() (err error) { ln, err = net.Listen("tcp4", pb.Addr().String()+":0"); return err }); err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Close()
		}
	}()
	err = <-a.Go(func() error {
		c, err := net.DialTimeout("tcp4", ln.Addr().String(), 5*time.Second)
		if err != nil {
			return err
		}
		return c.Close()
	})
	if err != nil {
		t.Fatalf("dialing from a's Go to b's listener: %v", err)
	}
}
