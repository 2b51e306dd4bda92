package netstack

import (
	"fmt"
	"net"
	"net/netip"
	"testing"
	"time"
)

// The harness without the wrapper: a gVisor stack over TUN and a kernel
// socket exchange a stream each way, both directions of opening, with
// the tap dropping 1 % of the packets.
func TestKernelPlain(t *testing.T) {
	for _, v6 := range []bool{false, true} {
		inKernelNet(t, v6, nil, func(k *kernelNet) error {
			k.tap.drop.Store(true)
			ln, err := net.Listen("tcp", netip.AddrPortFrom(k.kaddr, kPort).String())
			if err != nil {
				return err
			}
			defer ln.Close()
			const n = 4 << 20
			type res struct {
				sent, got digest
				err       error
			}
			kc := make(chan res, 1)
			go func() {
				c, err := ln.Accept()
				if err != nil {
					kc <- res{err: err}
					return
				}
				defer c.Close()
				s, g, err := duplex(c.(*net.TCPConn), 2, n)
				kc <- res{s, g, err}
			}()
			c, err := dialGonet(k.s, netip.AddrPortFrom(k.kaddr, kPort), 10*time.Second)
			if err != nil {
				return err
			}
			defer c.Close()
			sent, got, err := duplex(c, 1, n)
			if err != nil {
				return err
			}
			r := <-kc
			if r.err != nil {
				return r.err
			}
			if sent != r.got || r.sent != got {
				return fmt.Errorf("streams differ: gonet sent %v, kernel got %v; kernel sent %v, gonet got %v", sent, r.got, r.sent, got)
			}
			t.Logf("v6=%v: %v each way; out %+v; in %+v", v6, sent, k.tap.out.stats(), k.tap.in.stats())
			return nil
		})
	}
}
