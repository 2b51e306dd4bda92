package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
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
func runLive(ctx context.Context, lo liveOptions, vs verifySetup) int {
	name, rep, stderr := lo.iface+" (live)", vs.rep, vs.stderr
	v, err := pcapverify.NewVerifier(vs.keys, vs.opts, func(r *pcapverify.Result) { rep.segment(name, r) })
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
	var out *pcapngOut
	if lo.write != "" {
		if out, err = createPcapng(lo.write, lo.iface); err != nil {
			src.Close()
			return failf(stderr, "verify: %v", err)
		}
		defer out.close()
	}

	// Closing the socket is what ends a read blocked in the kernel.
	stop := context.AfterFunc(ctx, func() { src.Close() })
	defer stop()
	rep.begin(name, fmt.Sprintf("Verifying the packets that pass %s as they come (Ctrl-C to stop); the flow table every %v.", lo.iface, lo.every))
	r := liveRun{lo: lo, name: name, src: src, v: v, out: out, rep: rep}
	runErr := r.loop(ctx)
	if err := out.flush(); err != nil && runErr == nil {
		runErr = fmt.Errorf("-w %s: %v", lo.write, err)
	}
	if ds := v.Diagnoses(); ds != nil {
		rep.explain(name, ds)
		vs.noteDiagnoses(ds)
	}
	rep.end(name, v.Totals(), v.Flows(), runErr)
	vs.opts.WarnUnseen()
	failed := 0
	if runErr != nil {
		failed = 1
		fmt.Fprintf(stderr, "tcpsig verify: -i %s: %v\n", lo.iface, runErr)
	}
	o := vs.ending(v.Totals(), 1, failed)
	rep.summary(v.Totals(), o)
	return o.exit
}

// liveRun is one live capture under way: where packets come from, the
// verifier that judges them, where -w writes them and the report.
type liveRun struct {
	lo   liveOptions
	name string // the capture's name in the report
	src  packetSource
	v    *pcapverify.Verifier
	out  *pcapngOut // nil without -w
	rep  reporter
}

// loop reads, keeps (-w) and judges packets until ctx ends or a read or
// a write fails, which is its error; it prints the flow table every
// lo.every, flushing -w's file first so that it holds what the table
// counts.
func (r *liveRun) loop(ctx context.Context) error {
	buf := make([]byte, liveSnapLen)
	next := time.Now().Add(r.lo.every)
	for frame := 1; ; {
		if err := r.src.SetDeadline(next); err != nil && ctx.Err() == nil {
			return err
		}
		n, err := r.src.Read(buf)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
			return err
		}
		if err == nil && keepPort(buf[:n], r.lo.port) {
			if err := r.out.write(buf[:n]); err != nil {
				return fmt.Errorf("-w %s: %v", r.lo.write, err)
			}
			r.v.Packet(frame, buf[:n], n == len(buf))
			frame++
		}
		if now := time.Now(); !now.Before(next) {
			if err := r.out.flush(); err != nil {
				return fmt.Errorf("-w %s: %v", r.lo.write, err)
			}
			if ds := r.v.Diagnoses(); ds != nil {
				r.rep.explain(r.name, ds)
			}
			r.rep.table(r.name, r.v.Totals(), r.v.Flows(), now)
			next = now.Add(r.lo.every)
		}
	}
}

// pcapngOut is -w FILE: the packets a live capture keeps, written as
// pcapng (raw IP, no link header) as they come. A nil *pcapngOut writes
// nothing.
type pcapngOut struct {
	f   *os.File
	buf *bufio.Writer
	w   *pcapgo.NgWriter
}

// createPcapng creates path and writes the header of a pcapng capture of
// iface to it.
func createPcapng(path, iface string) (*pcapngOut, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("-w: %v", unwrapPath(err))
	}
	p := &pcapngOut{f: f, buf: bufio.NewWriter(f)}
	if p.w, err = pcapgo.NewNgWriterInterface(p.buf, pcapgo.NgInterface{Name: iface, LinkType: layers.LinkTypeRaw, SnapLength: liveSnapLen},
		pcapgo.DefaultNgWriterOptions); err != nil {
		f.Close()
		return nil, fmt.Errorf("-w %s: %v", path, err)
	}
	return p, nil
}

// write adds one packet, stamped now.
func (p *pcapngOut) write(b []byte) error {
	if p == nil {
		return nil
	}
	ci := gopacket.CaptureInfo{Timestamp: time.Now(), CaptureLength: len(b), Length: len(b), InterfaceIndex: 0}
	return p.w.WritePacket(ci, b)
}

// flush writes what is buffered to the file.
func (p *pcapngOut) flush() error {
	if p == nil {
		return nil
	}
	if err := p.w.Flush(); err != nil {
		return err
	}
	return p.buf.Flush()
}

// close closes the file; flush first to keep what is buffered.
func (p *pcapngOut) close() { p.f.Close() }

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
		tcp = seg.Header()
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
