//go:build linux

package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/tcpsig/tcpsig/harness/capture"
)

// Host-side checks, independent of the guest's own parser: every capture of
// the manifest is decoded with gopacket; every packet must be TCP, every
// segment carry one TCP-AO option (kind 29, length 4+maclen) whose KeyID and
// RNextKeyID belong to the sender's MKTs, and the counts must match the
// manifest. (The MACs themselves are verified by the ao package's tests.)

type captureCheck struct {
	name   string
	errs   []string
	pkts   int
	signed int
}

func checkDir(dir string) (Manifest, []captureCheck, error) {
	var man Manifest
	b, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		return man, nil, err
	}
	if err := json.Unmarshal(b, &man); err != nil {
		return man, nil, fmt.Errorf("manifest.json: %w", err)
	}
	var out []captureCheck
	for _, c := range man.Captures {
		out = append(out, checkCapture(dir, c))
	}
	if man.LinkType != "EN10MB" {
		return man, out, fmt.Errorf("manifest link_type %q, want EN10MB", man.LinkType)
	}
	return man, out, nil
}

func checkCapture(dir string, c ManifestCapture) captureCheck {
	r := captureCheck{name: c.Name}
	fail := func(format string, a ...any) { r.errs = append(r.errs, fmt.Sprintf(format, a...)) }
	lt, pkts, err := capture.ReadFile(filepath.Join(dir, c.File))
	if err != nil {
		fail("%s: %v", c.File, err)
		return r
	}
	if lt != capture.LinkTypeEthernet {
		fail("%s: link type %v, want %v", c.File, lt, capture.LinkTypeEthernet)
		return r
	}
	type keyset struct{ snd, rcv map[uint8]int } // KeyID -> maclen
	byPeer := map[netip.Addr]*keyset{}
	for i, k := range c.Keys.AO {
		p, err := netip.ParsePrefix(k.Peer)
		if err != nil || !strings.HasPrefix(k.Key, "hex:") || k.MACLen < 1 || k.MACLen > 16 || k.Alg == "" {
			fail("keys.ao[%d]: bad entry %+v", i, k)
			continue
		}
		ks := byPeer[p.Addr()]
		if ks == nil {
			ks = &keyset{map[uint8]int{}, map[uint8]int{}}
			byPeer[p.Addr()] = ks
		}
		ks.snd[k.SndID] = k.MACLen
		ks.rcv[k.RcvID] = k.MACLen
	}
	endpoints := map[string]bool{}
	sawSYN := false
	for i, p := range pkts {
		pk := gopacket.NewPacket(p.Data, layers.LayerTypeEthernet, gopacket.Default)
		if el := pk.ErrorLayer(); el != nil {
			fail("frame %d: decode error: %v", i+1, el.Error())
			continue
		}
		tl, _ := pk.Layer(layers.LayerTypeTCP).(*layers.TCP)
		if tl == nil || pk.NetworkLayer() == nil {
			fail("frame %d: not TCP", i+1)
			continue
		}
		r.pkts++
		src, _ := netip.AddrFromSlice(pk.NetworkLayer().NetworkFlow().Src().Raw())
		dst, _ := netip.AddrFromSlice(pk.NetworkLayer().NetworkFlow().Dst().Raw())
		endpoints[netip.AddrPortFrom(src, uint16(tl.SrcPort)).String()] = true
		sawSYN = sawSYN || tl.SYN
		var ao []layers.TCPOption
		for _, o := range tl.Options {
			if o.OptionType == 29 {
				ao = append(ao, o)
			}
		}
		if len(ao) == 0 {
			fail("frame %d: no TCP-AO option", i+1)
			continue
		}
		if len(ao) > 1 {
			fail("frame %d: %d TCP-AO options", i+1, len(ao))
		}
		r.signed++
		o := ao[0]
		if len(o.OptionData) < 3 {
			fail("frame %d: TCP-AO option of length %d", i+1, o.OptionLength)
			continue
		}
		keyID, rnext := o.OptionData[0], o.OptionData[1]
		// The sender's MKT has peer = the segment's destination.
		ks := byPeer[dst]
		if ks == nil {
			fail("frame %d: no MKT for a sender whose peer is %v", i+1, dst)
			continue
		}
		ml, ok := ks.snd[keyID]
		if !ok {
			fail("frame %d: KeyID %d is no SendID of the sender's MKTs", i+1, keyID)
			continue
		}
		if int(o.OptionLength) != 4+ml {
			fail("frame %d: TCP-AO length %d, want %d", i+1, o.OptionLength, 4+ml)
		}
		if _, ok := ks.rcv[rnext]; !ok {
			fail("frame %d: RNextKeyID %d is no RecvID of the sender's MKTs", i+1, rnext)
		}
	}
	if r.pkts != c.Packets || r.signed != c.AOSigned {
		fail("%d TCP packets, %d signed; manifest says %d, %d", r.pkts, r.signed, c.Packets, c.AOSigned)
	}
	if len(c.ISN) > 0 || len(c.SNE) > 0 {
		if sawSYN {
			fail("isn/sne given although a SYN is in the capture")
		}
		for ep := range endpoints {
			if _, ok := c.ISN[ep]; !ok {
				fail("no ISN for endpoint %s", ep)
			}
		}
	} else if !sawSYN {
		fail("no handshake in the capture and no isn given")
	}
	return r
}

// runCheck is "guest check": the host half of run-qemu.sh.
func runCheck(args []string) int {
	fs := flag.NewFlagSet("check", flag.ExitOnError)
	dir := fs.String("dir", ".", "directory with manifest.json, results.json and the pcaps")
	kb := fs.String("kernel-build", "", "kernel build seconds (for the summary)")
	qs := fs.String("qemu", "", "qemu wall seconds (for the summary)")
	gb := fs.String("guest-build", "", "guest+initramfs build seconds (for the summary)")
	fs.String("console", "", "guest console log (for reference)")
	fs.Parse(args)

	var res Results
	if b, err := os.ReadFile(filepath.Join(*dir, "results.json")); err == nil {
		if err := json.Unmarshal(b, &res); err != nil {
			fmt.Printf("results.json: %v\n", err)
			return 1
		}
	}
	man, checks, err := checkDir(*dir)
	failed := err != nil
	if err != nil {
		fmt.Printf("manifest: %v\n", err)
	}
	byCapture := map[string]captureCheck{}
	for _, c := range checks {
		byCapture[c.name] = c
	}
	entry := map[string]ManifestCapture{}
	for _, c := range man.Captures {
		entry[c.Name] = c
	}
	kinds := map[string]int{}
	for _, r := range res.Cases {
		kinds[r.Kind]++
	}
	for _, c := range checks {
		if !slices.ContainsFunc(res.Cases, func(r CaseResult) bool { return slices.Contains(r.Captures, c.name) }) {
			kinds["kernel-kernel"]++ // a capture without a guest result
		}
	}
	fmt.Printf("\nTCP-AO against Linux %s: %d kernel<->kernel cases (captures on lo), %d live engine<->kernel cases (no captures)\n",
		man.Kernel, kinds["kernel-kernel"], kinds[liveKind])
	fmt.Printf("%-48s %-6s %-6s %5s %5s %7s  %s\n", "case", "guest", "host", "pkts", "ao", "secs", "features")
	seen := map[string]bool{}
	pass, total, skipped := 0, 0, 0
	for _, r := range res.Cases {
		total++
		if r.Skipped != "" {
			skipped++
			fmt.Printf("%-48s %-6s %-6s %5s %5s %7.2f  %s\n", r.Name, "skip", "-", "", "", r.Seconds, "skipped: "+r.Skipped)
			continue
		}
		g := "pass"
		if r.Retried {
			g = "pass*" // passed on the retry
		}
		if !r.Pass {
			g, failed = "FAIL", true
		}
		h, pk, ao, feats := "-", "", "", ""
		ok := r.Pass
		for _, cn := range r.Captures {
			seen[cn] = true
			c := byCapture[cn]
			h = "pass"
			if len(c.errs) > 0 {
				h, failed, ok = "FAIL", true, false
			}
			pk, ao = fmt.Sprint(c.pkts), fmt.Sprint(c.signed)
			feats = strings.Join(entry[cn].Features, ",")
		}
		if r.Kind == liveKind {
			feats = "live engine<->kernel (no capture)"
		}
		if r.Kind == "kernel-kernel" && len(r.Captures) == 0 {
			h, failed, ok = "FAIL", true, false
		}
		if ok {
			pass++
		}
		fmt.Printf("%-48s %-6s %-6s %5s %5s %7.2f  %s\n", r.Name, g, h, pk, ao, r.Seconds, feats)
		for _, e := range r.FirstErrors {
			fmt.Printf("    guest, first attempt: %s\n", firstLine(e))
		}
		for _, e := range r.Errors {
			fmt.Printf("    guest: %s\n", firstLine(e))
		}
		for _, cn := range r.Captures {
			for _, e := range byCapture[cn].errs {
				fmt.Printf("    host: %s\n", e)
			}
		}
	}
	for _, c := range checks { // captures without a guest result (e.g. go test on the committed set)
		if seen[c.name] {
			continue
		}
		total++
		h := "pass"
		if len(c.errs) > 0 {
			h, failed = "FAIL", true
		} else {
			pass++
		}
		fmt.Printf("%-48s %-6s %-6s %5d %5d %7s  %s\n", c.name, "-", h, c.pkts, c.signed, "", strings.Join(entry[c.name].Features, ","))
		for _, e := range c.errs {
			fmt.Printf("    host: %s\n", e)
		}
	}
	for _, s := range res.SetupFailures {
		fmt.Printf("guest setup: %s\n", s)
		failed = true
	}
	fmt.Printf("\n%d/%d cases passed (pass* = passed on the one retry)", pass, total)
	if skipped > 0 {
		fmt.Printf(", %d skipped (not passed: the reasons are in the table)", skipped)
	}
	fmt.Println()
	if *kb != "" {
		if *kb != "cached" {
			*kb += "s"
		}
		fmt.Printf("timing: kernel build %s, guest+initramfs build %ss, qemu %ss (kernel boot to first case %.1fs, cases %.1fs)\n",
			*kb, *gb, *qs, res.BootSeconds, res.CasesSeconds)
	}
	if failed || total == 0 {
		return 1
	}
	return 0
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " ..."
	}
	return s
}
