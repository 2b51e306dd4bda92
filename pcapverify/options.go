package pcapverify

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
)

// Options are what a capture cannot tell, given by its user: the ISNs
// and SNEs of endpoints whose handshake is missing, and how many flows
// to track. The messages name them as tcpsig's -isn and -sne flags. One
// Options may serve several captures; it remembers which endpoints a
// segment was from or to.
type Options struct {
	ISN map[netip.AddrPort]uint32 // -isn
	SNE map[netip.AddrPort]uint32 // -sne

	Warn func(string) // prints a warning line; nil: none

	// MaxFlows bounds the flows that keys cover a Verifier tracks, and
	// so its memory (0 or less: DefaultMaxFlows). The segments of a flow
	// that comes after that many are Untracked.
	MaxFlows int

	// Explain keeps the first few failing segments of each flow
	// direction, so that Verifier.Diagnoses can name why they failed. A
	// segment from a peer no entry covers that carries an option is
	// judged no-key as without it, and diagnosed too. With a keys file
	// of no entry (Verifier.Keyless) only what the wire shows is
	// diagnosed: unsigned, isn and auth-kind.
	Explain bool

	seen   map[netip.AddrPort]bool // ISN/SNE endpoints some segment was from or to
	warned map[string]bool         // warnings already given
}

// note records that a segment was from or to ap.
func (o *Options) note(ap netip.AddrPort) {
	_, a := o.ISN[ap]
	_, b := o.SNE[ap]
	if (a || b) && !o.seen[ap] {
		if o.seen == nil {
			o.seen = map[netip.AddrPort]bool{}
		}
		o.seen[ap] = true
	}
}

// maxWarnings bounds the warnings given: a capture can contradict -isn
// with a new ISN in every SYN, and each would be remembered.
const maxWarnings = 1000

// warnf prints a warning once, and none past maxWarnings.
func (o *Options) warnf(format string, a ...any) {
	if o.Warn == nil || len(o.warned) > maxWarnings {
		return
	}
	msg := fmt.Sprintf(format, a...)
	if o.warned[msg] {
		return
	}
	if o.warned == nil {
		o.warned = map[string]bool{}
	}
	o.warned[msg] = true
	if len(o.warned) > maxWarnings {
		msg = fmt.Sprintf("more than %d warnings: the rest are not shown", maxWarnings)
	}
	o.Warn(msg)
}

// WarnUnseen warns about the ISN and SNE endpoints that no segment was
// from or to: they changed nothing. Call it after the last capture. Nil
// Options warn of nothing.
func (o *Options) WarnUnseen() {
	if o == nil {
		return
	}
	for _, f := range []struct {
		name string
		m    map[netip.AddrPort]uint32
	}{{"-isn", o.ISN}, {"-sne", o.SNE}} {
		for _, ap := range slices.SortedFunc(maps.Keys(f.m), func(a, b netip.AddrPort) int { return a.Compare(b) }) {
			if !o.seen[ap] {
				o.warnf("%s %v=%d: no segment of the capture is from or to %v: ignored (check the address and port)", f.name, ap, f.m[ap], ap)
			}
		}
	}
}
