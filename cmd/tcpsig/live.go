package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/tcpsig/tcpsig/pcapverify"
	"github.com/tcpsig/tcpsig/segment"
)

// liveOptions are the flags of "tcpsig verify -i IFACE".
type liveOptions struct {
	iface string        // -i
	port  int           // -port; 0: every port
	write string        // -w; "": none
	every time.Duration // -every: how often the flow table is printed
}

// liveSnapLen is the largest packet read whole: GRO and BIG TCP make
// packets larger than any MTU.
const liveSnapLen = 256 << 10

// packetSource reads IP packets (no link header) from an interface as
// they pass, each sent and received packet once. Read returns an error
// wrapping os.ErrDeadlineExceeded when the deadline passes first.
type packetSource interface {
	Read(b []byte) (int, error)
	SetDeadline(t time.Time) error
	Close() error
}

// liveReady, when set (by tests), is called once the packet socket is
// open: packets sent after it returns are seen.
var liveReady func()

// runLive verifies the packets that pass an interface until ctx ends,
// printing the segments that are not good as they come and the flow table
// every lo.every and at the end. It returns the exit status.
func runLive(ctx context.Context, lo liveOptions, ks *pcapverify.Keys, opts *pcapverify.Options, rep reporter, stderr io.Writer) int {
	name := lo.iface + " (live)"
	v, err := pcapverify.NewVerifier(ks, opts, func(r *pcapverify.Result) { rep.segment(name, r) })
	if err != nil {
		return failf(stderr, "verify: %v", err)
	}
	defer v.Close()
	src, err := openInterface(lo.iface)
	if err != nil {
		return failf(stderr, "verify: -i %s: %v", lo.iface, err)
	}
	if liveReady != nil {
		liveReady()
	}
	var w *pcapgo.NgWriter
	var out *bufio.Writer
	if lo.write != "" {
		f, err := os.Create(lo.write)
		if err != nil {
			src.Close()
			return failf(stderr, "verify: -w: %v", unwrapPath(err))
		}
		defer f.Close()
		out = bufio.NewWriter(f)
		if w, err = pcapgo.NewNgWriterInterface(out, pcapgo.NgInterface{Name: lo.iface, LinkType: layers.LinkTypeRaw, SnapLength: liveSnapLen},
			pcapgo.DefaultNgWriterOptions); err != nil {
			src.Close()
			return failf(stderr, "verify: -w %s: %v", lo.write, err)
		}
	}
	flush := func() error {
		if w == nil {
			return nil
		}
		if err := w.Flush(); err != nil {
			return err
		}
		return out.Flush()
	}

	// Closing the socket is what ends a read blocked in the kernel.
	stop := context.AfterFunc(ctx, func() { src.Close() })
	defer stop()
	rep.begin(name, fmt.Sprintf("Verifying the packets that pass %s as they come (Ctrl-C to stop); the flow table every %v.", lo.iface, lo.every))
	buf := make([]byte, liveSnapLen)
	next := time.Now().Add(lo.every)
	var runErr error
	for frame := 1; ; {
		if err := src.SetDeadline(next); err != nil && ctx.Err() == nil {
			runErr = err
			break
		}
		n, err := src.Read(buf)
		if ctx.Err() != nil {
			break
		}
		if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
			runErr = err
			break
		}
		if err == nil && keepPort(buf[:n], lo.port) {
			if w != nil {
				ci := gopacket.CaptureInfo{Timestamp: time.Now(), CaptureLength: n, Length: n, InterfaceIndex: 0}
				if err := w.WritePacket(ci, buf[:n]); err != nil {
					runErr = fmt.Errorf("-w %s: %v", lo.write, err)
					break
				}
			}
			v.Packet(frame, buf[:n], n == len(buf))
			frame++
		}
		if now := time.Now(); !now.Before(next) {
			if err := flush(); err != nil {
				runErr = fmt.Errorf("-w %s: %v", lo.write, err)
				break
			}
			rep.table(name, v.Totals(), v.Flows(), now)
			next = now.Add(lo.every)
		}
	}
	if err := flush(); err != nil && runErr == nil {
		runErr = fmt.Errorf("-w %s: %v", lo.write, err)
	}
	rep.end(name, v.Totals(), v.Flows(), runErr)
	opts.WarnUnseen()
	failed := 0
	if runErr != nil {
		failed = 1
		fmt.Fprintf(stderr, "tcpsig verify: -i %s: %v\n", lo.iface, runErr)
	}
	exit, why := exitStatus(v.Totals(), failed)
	rep.summary(v.Totals(), 1, failed, exit, why)
	return exit
}

// keepPort reports whether an IP packet is TCP from or to port (any
// packet when port is 0).
func keepPort(ip []byte, port int) bool {
	if port == 0 {
		return true
	}
	var tcp []byte
	switch {
	case len(ip) >= 20 && ip[0]>>4 == 4 && ip[9] == 6:
		hl := int(ip[0]&0x0f) * 4
		if len(ip) < hl+4 || binary.BigEndian.Uint16(ip[6:])&0x1fff != 0 {
			return false
		}
		tcp = ip[hl:]
	case len(ip) >= 44 && ip[0]>>4 == 6 && ip[6] == 6:
		tcp = ip[40:]
	case len(ip) >= 40 && ip[0]>>4 == 6: // extension headers first
		seg, err := segment.ParsePacket(ip)
		if err != nil {
			return false
		}
		tcp = seg.Header
	default:
		return false
	}
	return int(binary.BigEndian.Uint16(tcp)) == port || int(binary.BigEndian.Uint16(tcp[2:])) == port
}

// interfaceNames lists the interfaces, for an error about a wrong name.
func interfaceNames() string {
	ifs, err := net.Interfaces()
	if err != nil || len(ifs) == 0 {
		return "none"
	}
	s := ""
	for i, ifi := range ifs {
		if i > 0 {
			s += ", "
		}
		s += ifi.Name
	}
	return s
}
