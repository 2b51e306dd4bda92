//go:build linux

package nfrules

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"github.com/google/nftables/xt"
	"golang.org/x/sys/unix"
)

// ErrNoPeers: a rule set needs at least one peer prefix.
var ErrNoPeers = errors.New("nfrules: no peer prefixes")

// Spec is the rule set: TCP with any of Peers goes to queue Queue, or with
// Queues > 1 to one of the queues Queue .. Queue+Queues-1 by a symmetric
// hash of its addresses and ports, so that both directions of a connection
// go to the same queue; the ICMP hard errors quoting a packet to one of
// Peers (RFC 5925 §7.8) go to queue Queue.
type Spec struct {
	Table  string // name of the tables (ip and ip6) holding the rules
	Queue  uint16
	Queues uint16 // 0 or 1: one queue
	Peers  []netip.Prefix
}

// Method says how the installed rules queue packets.
type Method string

// The two ways of queueing.
const (
	NativeQueue Method = "nft queue"           // nftables' queue statement (nft_queue)
	XTQueue     Method = "xt NFQUEUE (compat)" // xtables NFQUEUE target through nft_compat
)

// Install replaces the tables named spec.Table (left by an earlier run, or
// by this one: a reload) by the rules of spec, atomically per family, in the
// network namespace of the calling thread. Where the table already has its
// two chains only their rules are replaced, so that packets in the queue
// are not lost. It returns how packets are queued.
func Install(spec Spec) (Method, error) {
	if len(spec.Peers) == 0 {
		return "", ErrNoPeers
	}
	if spec.Table == "" {
		return "", errors.New("nfrules: empty table name")
	}
	if int(spec.Queue)+max(int(spec.Queues), 1) > 1<<16 {
		return "", fmt.Errorf("nfrules: queues %d..%d: past 65535", spec.Queue, int(spec.Queue)+int(spec.Queues)-1)
	}
	var errs []error
	for _, m := range []Method{NativeQueue, XTQueue} {
		err := install(spec, m)
		if err == nil {
			return m, nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", m, err))
	}
	return "", fmt.Errorf("nfrules: install table %s: %w", spec.Table, errors.Join(errs...))
}

// Remove deletes the tables named table, if they exist.
func Remove(table string) error {
	c, err := nftables.New()
	if err != nil {
		return fmt.Errorf("nfrules: %w", err)
	}
	for _, fam := range []nftables.TableFamily{nftables.TableFamilyIPv4, nftables.TableFamilyIPv6} {
		present, err := exists(c, table, fam)
		if err != nil {
			return err
		}
		if !present {
			continue
		}
		c.DelTable(&nftables.Table{Name: table, Family: fam})
		if err := c.Flush(); err != nil {
			return fmt.Errorf("nfrules: delete table %s: %w", table, err)
		}
	}
	return nil
}

// Exists reports whether a table named table exists in either family.
func Exists(table string) (bool, error) {
	c, err := nftables.New()
	if err != nil {
		return false, fmt.Errorf("nfrules: %w", err)
	}
	for _, fam := range []nftables.TableFamily{nftables.TableFamilyIPv4, nftables.TableFamilyIPv6} {
		if ok, err := exists(c, table, fam); err != nil || ok {
			return ok, err
		}
	}
	return false, nil
}

func exists(c *nftables.Conn, table string, fam nftables.TableFamily) (bool, error) {
	ts, err := c.ListTablesOfFamily(fam)
	if err != nil {
		return false, fmt.Errorf("nfrules: list tables: %w", err)
	}
	for _, t := range ts {
		if t.Name == table {
			return true, nil
		}
	}
	return false, nil
}

func install(spec Spec, m Method) error {
	c, err := nftables.New()
	if err != nil {
		return err
	}
	for _, fam := range []nftables.TableFamily{nftables.TableFamilyIPv4, nftables.TableFamilyIPv6} {
		var peers []netip.Prefix
		for _, p := range spec.Peers {
			if p.Addr().Unmap().Is4() == (fam == nftables.TableFamilyIPv4) {
				peers = append(peers, netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-unmapBits(p)).Masked())
			}
		}
		present, err := exists(c, spec.Table, fam)
		if err != nil {
			return err
		}
		t := &nftables.Table{Name: spec.Table, Family: fam}
		if len(peers) == 0 {
			if present {
				c.DelTable(t)
				if err := c.Flush(); err != nil {
					return err
				}
			}
			continue
		}
		var out, in *nftables.Chain
		if present {
			out, in, err = ourChains(c, t)
			if err != nil {
				return err
			}
		}
		if out != nil && in != nil {
			// Our chains are there (a reload, or a killed run): replace
			// their rules in one batch and keep the chains, whose hooks
			// would otherwise go and come back. The kernel drops the
			// packets queued from a hook that goes, and sends packets
			// reinjected meanwhile through the new hooks from the wrong
			// place.
			c.FlushChain(out)
			c.FlushChain(in)
		} else {
			// One batch: the old table goes and the new one comes at once.
			if present {
				c.DelTable(t)
			}
			t = c.AddTable(t)
			accept := nftables.ChainPolicyAccept
			out = c.AddChain(&nftables.Chain{Name: "out", Table: t, Type: nftables.ChainTypeFilter,
				Hooknum: nftables.ChainHookOutput, Priority: nftables.ChainPriorityRef(300), Policy: &accept})
			in = c.AddChain(&nftables.Chain{Name: "in", Table: t, Type: nftables.ChainTypeFilter,
				Hooknum: nftables.ChainHookInput, Priority: nftables.ChainPriorityMangle, Policy: &accept})
		}
		outRules, inRules := rules(spec, m, peers)
		for _, r := range outRules {
			c.AddRule(&nftables.Rule{Table: t, Chain: out, Exprs: r})
		}
		for _, r := range inRules {
			c.AddRule(&nftables.Rule{Table: t, Chain: in, Exprs: r})
		}
		if err := c.Flush(); err != nil {
			return err
		}
	}
	return nil
}

// rules returns the expressions of the output and input chains' rules for
// one family's peers: TCP to and from each peer, by queue, and the ICMP
// hard errors (RFC 5925 §7.8) that quote a packet to it.
func rules(spec Spec, m Method, peers []netip.Prefix) (out, in [][]expr.Any) {
	for _, p := range peers {
		for i := range max(spec.Queues, 1) {
			out = append(out, match(p, false, queueTo(m, spec, i)...))
			in = append(in, match(p, true, queueTo(m, spec, i)...))
		}
		// The first queue: the layer's ICMP path only reads the
		// connection (each queue's reader sees all), so no hash is needed
		// to keep it in order with the connection's segments.
		for _, r := range icmpMatches(p) {
			in = append(in, append(r, queueExpr(m, spec.Queue)))
		}
	}
	if len(peers) > 0 && peers[0].Addr().Is6() {
		in = append(in, append(firstFragments(), queueExpr(m, spec.Queue)))
	}
	return out, in
}

// ourChains returns the table's "out" and "in" chains if they are base
// chains of the output and input hooks at our priorities, else nils.
func ourChains(c *nftables.Conn, t *nftables.Table) (out, in *nftables.Chain, err error) {
	chains, err := c.ListChainsOfTableFamily(t.Family)
	if err != nil {
		return nil, nil, err
	}
	for _, ch := range chains {
		if ch.Table == nil || ch.Table.Name != t.Name || ch.Hooknum == nil || ch.Priority == nil {
			continue
		}
		switch {
		case ch.Name == "out" && *ch.Hooknum == *nftables.ChainHookOutput && *ch.Priority == 300:
			out = ch
		case ch.Name == "in" && *ch.Hooknum == *nftables.ChainHookInput && *ch.Priority == *nftables.ChainPriorityMangle:
			in = ch
		}
	}
	if len(chains) == 0 || out == nil || in == nil {
		return nil, nil, nil
	}
	return out, in, nil
}

// unmapBits is 96 for an IPv4-mapped IPv6 prefix, whose IPv4 rule matches
// the last 32 bits.
func unmapBits(p netip.Prefix) int {
	if p.Addr().Is4In6() {
		return 96
	}
	return 0
}

// match is "meta l4proto tcp ip[6] saddr|daddr p" followed by then.
func match(p netip.Prefix, src bool, then ...expr.Any) []expr.Any {
	off, n := uint32(16), uint32(4) // IPv4 daddr
	if p.Addr().Is6() {
		off, n = 24, 16
	}
	if src {
		off -= n // saddr precedes daddr in both headers
	}
	return append(append([]expr.Any{
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{unix.IPPROTO_TCP}},
	}, addrIn(p, expr.PayloadBaseNetworkHeader, off)...), then...)
}

// icmpMatches are the matches of the ICMP hard errors of RFC 5925 §7.8
// (those Linux's tcp_ao_ignore_icmp ignores) that quote a TCP packet to p:
// "icmp type 3 code 2-4" with the quoted header's protocol TCP, or
// "icmpv6 type 1 code 1" and "... code 4" with any quoted next header
// (extension headers may precede TCP), its destination in p. The quoted
// header starts 8 bytes into the ICMP message; an IPv4 one's destination
// is at its offset 16 whatever its IHL.
func icmpMatches(p netip.Prefix) [][]expr.Any {
	th := func(off, n uint32) expr.Any {
		return &expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: off, Len: n}
	}
	if p.Addr().Is4() {
		return [][]expr.Any{append([]expr.Any{
			&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{unix.IPPROTO_ICMP}},
			th(0, 2), // type and code, compared as one big-endian number
			&expr.Range{Op: expr.CmpOpEq, Register: 1, FromData: []byte{3, 2}, ToData: []byte{3, 4}},
			th(8+9, 1), // the quoted header's protocol
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{unix.IPPROTO_TCP}},
		}, addrIn(p, expr.PayloadBaseTransportHeader, 8+16)...)}
	}
	var rs [][]expr.Any
	for _, code := range []byte{1, 4} { // administratively prohibited, port unreachable
		rs = append(rs, append([]expr.Any{
			&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{unix.IPPROTO_ICMPV6}},
			th(0, 2),
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{1, code}},
			// Any quoted next header: extension headers may come
			// before TCP (Linux's icmpv6_notify skips them), so the
			// layer, which skips them too, tells.
		}, addrIn(p, expr.PayloadBaseTransportHeader, 8+24)...))
	}
	return rs
}

// firstFragments matches the first fragments (fragment offset 0) of
// IPv6 packets whose fragment header is followed by anything but TCP,
// UDP or ESP: "exthdr frag frag-off 0 exthdr frag nexthdr != { tcp, udp,
// esp }". An ICMPv6 error in fragments passes the input hook in pieces,
// before the kernel reassembles it (ipv6_frag_rcv, unless conntrack's
// nf_defrag_ipv6 did so earlier), and its first fragment may stop short
// of the quoted address icmpMatches reads; its source is any router's,
// so every such first fragment goes to the layer, which drops a hard
// error it cannot clear, and without its first fragment the kernel
// never reassembles the message. TCP from a peer is queued by its own
// rule, UDP cannot carry ICMPv6, and ESP is decrypted before the
// packet it carries goes through the hooks again.
func firstFragments() []expr.Any {
	frag := func(off, n uint32) expr.Any {
		return &expr.Exthdr{DestRegister: 1, Op: expr.ExthdrOpIpv6, Type: unix.IPPROTO_FRAGMENT, Offset: off, Len: n}
	}
	return []expr.Any{
		frag(2, 2), // the offset, in the top 13 bits
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 2, Mask: []byte{0xff, 0xf8}, Xor: []byte{0, 0}},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{0, 0}},
		frag(0, 1), // the next header
		&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: []byte{unix.IPPROTO_TCP}},
		&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: []byte{unix.IPPROTO_UDP}},
		&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: []byte{unix.IPPROTO_ESP}},
	}
}

// addrIn matches the address of p's family at offset off of base against p.
func addrIn(p netip.Prefix, base expr.PayloadBase, off uint32) []expr.Any {
	n := uint32(p.Addr().BitLen() / 8)
	mask := make([]byte, n)
	for i := 0; i < p.Bits(); i++ {
		mask[i/8] |= 0x80 >> (i % 8)
	}
	return []expr.Any{
		&expr.Payload{DestRegister: 1, Base: base, Offset: off, Len: n},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: n, Mask: mask, Xor: make([]byte, n)},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: p.Masked().Addr().AsSlice()},
	}
}

// queueTo is the rule's end for the i-th of spec's queues: with one
// queue, "queue"; with more, "symhash mod Queues == i queue Queue+i".
// symhash (skb_get_hash_symmetric) hashes the addresses and ports sorted,
// so a connection's packets both ways go to one queue, which answers them
// in order.
func queueTo(m Method, spec Spec, i uint16) []expr.Any {
	q := queueExpr(m, spec.Queue+i)
	if spec.Queues <= 1 {
		return []expr.Any{q}
	}
	return []expr.Any{
		&expr.Hash{DestRegister: 1, Modulus: uint32(spec.Queues), Type: expr.HashTypeSym},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: binary.NativeEndian.AppendUint32(nil, uint32(i))},
		q,
	}
}

func queueExpr(m Method, num uint16) expr.Any {
	if m == NativeQueue {
		return &expr.Queue{Num: num, Total: 1} // no bypass: fail-closed
	}
	// struct xt_NFQ_info (revision 0): the queue number, host byte order.
	info := xt.Unknown(binary.NativeEndian.AppendUint16(nil, num))
	return &expr.Target{Name: "NFQUEUE", Rev: 0, Info: &info}
}
