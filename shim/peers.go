package shim

import (
	"net/netip"
	"slices"
	"sync/atomic"
)

// otherPeer is the peer label of what no configured peer prefix contains
// (a revoked session's peer that a reload took out of the file, say).
const otherPeer = "other"

// peerCounts are one peer prefix's counts since the shim started, kept
// across reloads: its refused segments by kind and verdict, counted by the
// drop path (good and bad_mac stay zero here: the keys count them), and
// its TCP-AO sessions' key changes seen by Run's ticker.
type peerCounts struct {
	drops     [3][numVerdicts]atomic.Uint64
	rotations [2]atomic.Uint64 // a session's current key changed; its RNext changed
	// nextExplain: Unix nanoseconds before which the drop path hands the
	// explainer no other segment of this prefix (explain_linux.go).
	nextExplain atomic.Int64
}

// peerEntry is one configured peer prefix: its label, the kinds its keys
// name, and its counts.
type peerEntry struct {
	prefix  netip.Prefix
	label   string
	ao, md5 bool
	counts  *peerCounts
}

// peerTable finds the configured peer prefix of an address: immutable once
// built (one per keys file), read by the drop path without a lock. Lookup
// makes one map lookup per prefix length present, longest first, as the
// keyrings match (package prefixmap).
type peerTable struct {
	entries []*peerEntry // file order
	byKey   map[netip.Prefix]*peerEntry
	lens4   []int // prefix lengths of IPv4 peers, longest first
	lens6   []int
	other   *peerEntry
}

// canonPrefix is p masked, with an IPv4-mapped IPv6 prefix as IPv4 (as
// the keyrings match it).
func canonPrefix(p netip.Prefix) netip.Prefix {
	if a := p.Addr(); a.Is4In6() && p.Bits() >= 96 {
		p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
	}
	return p.Masked()
}

// newPeerTable builds the table of the peers of k; counts holds each
// prefix's counters since the shim started (new ones are added), other
// those of otherPeer.
func newPeerTable(k *keySet, counts map[netip.Prefix]*peerCounts, other *peerCounts) *peerTable {
	t := &peerTable{byKey: map[netip.Prefix]*peerEntry{}, other: &peerEntry{label: otherPeer, counts: other}}
	entry := func(p netip.Prefix) *peerEntry {
		p = canonPrefix(p)
		if e := t.byKey[p]; e != nil {
			return e
		}
		c := counts[p]
		if c == nil {
			c = new(peerCounts)
			counts[p] = c
		}
		e := &peerEntry{prefix: p, label: p.String(), counts: c}
		t.byKey[p] = e
		t.entries = append(t.entries, e)
		if p.Addr().Is4() {
			t.lens4 = append(t.lens4, p.Bits())
		} else {
			t.lens6 = append(t.lens6, p.Bits())
		}
		return e
	}
	for _, c := range k.AO {
		entry(c.Peer).ao = true
	}
	for _, c := range k.MD5 {
		entry(c.Peer).md5 = true
	}
	for _, l := range []*[]int{&t.lens4, &t.lens6} {
		slices.Sort(*l)
		slices.Reverse(*l)
		*l = slices.Compact(*l)
	}
	return t
}

// lookup returns the most specific configured peer prefix containing a,
// or the table's otherPeer entry.
func (t *peerTable) lookup(a netip.Addr) *peerEntry {
	if t == nil {
		return nil
	}
	a = a.Unmap()
	lens := t.lens6
	if a.Is4() {
		lens = t.lens4
	}
	for _, l := range lens {
		p, err := a.Prefix(l)
		if err != nil {
			continue
		}
		if e := t.byKey[p]; e != nil {
			return e
		}
	}
	return t.other
}

// kind is the kind label of a refusal for this peer when neither the error
// nor the segment told: the one kind its keys name, else kindUnknown.
func (e *peerEntry) kind() string {
	switch {
	case e.ao && !e.md5:
		return kindAO
	case e.md5 && !e.ao:
		return kindMD5
	}
	return kindUnknown
}
