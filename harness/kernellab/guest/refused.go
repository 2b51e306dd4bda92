//go:build linux

package main

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/tcpsig/tcpsig/ao"
	"github.com/tcpsig/tcpsig/harness/capture"
	"github.com/tcpsig/tcpsig/segment"
)

// refusedSegments verifies, with the engine and the MKTs by KeyID, every
// TCP-AO segment a capture holds from src to dst (one connection, its
// handshake captured) and describes what it found: a summary, the
// segments around the first one src sent with sequence number stuck (where
// dst's kernel stopped accepting), the capture's tail, and each segment that
// does not verify with its neighbours. A case prints it when the kernel
// counted TCPAOBad or the case failed.
func refusedSegments(pkts []capture.Packet, lt capture.LinkType, src, dst netip.Addr, mkts map[uint8]*ao.MKT, stuck uint32) []string {
	type rec struct {
		s   seg
		why string // why the segment does not verify; "" if it does or is not src's
		raw []byte
	}
	var (
		recs           []rec
		srcISN, dstISN uint32
		haveS, haveD   bool
		sne, basis     uint32
	)
	if lt != capture.LinkTypeEthernet {
		return []string{"not an Ethernet capture: cannot verify"}
	}
	for _, p := range pkts {
		ip := lt.IP(p.Data)
		if ip == nil {
			continue
		}
		s, err := parseFrame(p.Data)
		if err != nil {
			continue
		}
		if s.flags.Has(segment.SYN) {
			switch s.src {
			case src:
				srcISN, haveS, sne, basis = s.seq, true, 0, s.seq
			case dst:
				dstISN, haveD = s.seq, true
			}
		}
		recs = append(recs, rec{s: s, raw: ip})
	}
	if !haveS || !haveD {
		return []string{"handshake not captured: cannot verify"}
	}
	var bad []int
	checked, last := 0, -1
	for i := range recs {
		r := &recs[i]
		if r.s.src != src || !r.s.hasAO {
			continue
		}
		m := mkts[r.s.keyID]
		if m == nil {
			r.why = "no MKT"
			bad = append(bad, i)
			continue
		}
		p, err := segment.ParsePacket(r.raw)
		if err != nil {
			r.why = err.Error()
			bad = append(bad, i)
			continue
		}
		checked, last = checked+1, i
		seqSNE := ao.ComputeSNE(sne, basis, r.s.seq)
		if int32(r.s.seq-basis) > 0 {
			sne, basis = seqSNE, r.s.seq
		}
		var k ao.TrafficKey
		err = k.Derive(m, ao.ISNs{Src: srcISN, Dst: dstISN}, &p)
		if err == nil {
			err = k.Verify(&p, seqSNE)
		}
		k.Wipe()
		if err != nil {
			r.why = err.Error()
			if errors.Is(err, ao.ErrBadMAC) {
				r.why = fmt.Sprintf("%v (SNE %d)", err, seqSNE)
			}
			bad = append(bad, i)
		}
	}
	out := []string{fmt.Sprintf("%d packets captured, %d TCP-AO segments from %v checked, %d do not verify (ISNs %d/%d, SNE now %d)",
		len(recs), checked, src, len(bad), srcISN, dstISN, sne)}
	// Around the first time src sent the sequence number dst is stuck at.
	for i, r := range recs {
		if r.s.src == src && r.s.seq == stuck && r.s.payload > 0 {
			for j := max(0, i-8); j < min(len(recs), i+5); j++ {
				mark := "   "
				if j == i {
					mark = ">> "
				}
				out = append(out, fmt.Sprintf("  first %s%d %v opts %v %s", mark, j+1, recs[j].s, recs[j].s.opts, recs[j].why))
			}
			break
		}
	}
	if last >= 0 {
		for j := max(0, last-6); j < len(recs); j++ {
			out = append(out, fmt.Sprintf("  tail %d %v", j+1, recs[j].s))
		}
	}
	for n, i := range bad {
		if n == 10 {
			out = append(out, fmt.Sprintf("... %d more", len(bad)-n))
			break
		}
		out = append(out, fmt.Sprintf("segment %d of %d does not verify: %s", i+1, len(recs), recs[i].why))
		for j := max(0, i-4); j < min(len(recs), i+3); j++ {
			mark := "   "
			if j == i {
				mark = ">> "
			}
			out = append(out, fmt.Sprintf("  %s%d %v opts %v", mark, j+1, recs[j].s, recs[j].s.opts))
		}
	}
	return out
}
