package diagnose

import (
	"bytes"
	"fmt"
	"net/netip"

	"github.com/tcpsig/tcpsig/ao"
	"github.com/tcpsig/tcpsig/keyfile"
	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/mac"
	"github.com/tcpsig/tcpsig/md5sig"
	"github.com/tcpsig/tcpsig/segment"
)

// aoSearch is the search of one TCP-AO segment.
type aoSearch struct {
	kf   *keyfile.File
	p    *segment.Segment
	sg   seg
	opt  ao.Option
	mkts *mkts
}

// verifies reports whether the segment verifies under cfg, taken as the
// receiver's MKT for the segment's sender; entry and secret say where
// cfg comes from (the entry, and which of its secret's readings: own, an
// encoding's index, or another entry's), so that the direction's other
// segments reuse its MKT.
func (a *aoSearch) verifies(cfg keys.AO, entry, secret int) bool {
	cfg.Peer = host(a.sg.src.Addr())
	cfg.IfIndex, cfg.HasIfIndex = 0, false
	m := a.mkts.get(mktKey{a.sg.src.Addr(), entry, secret, cfg.Algorithm, cfg.SendID, cfg.RecvID, cfg.MACLen, cfg.ExcludeOptions}, cfg)
	if m == nil {
		return false
	}
	var k ao.TrafficKey
	defer k.Wipe()
	return k.Derive(m, a.sg.s.ISNs, a.p) == nil && k.Verify(a.p, a.sg.s.SNE) == nil
}

// The secrets verifies is given besides an entry's own readings.
const (
	ownSecret = -1
	aoSecret  = 1 << 10 // + the "ao" entry's index
	md5Secret = 1 << 20 // + the "md5" entry's index
)

// mktKey is what makes a candidate MKT, its secret named by where it
// comes from.
type mktKey struct {
	src            netip.Addr
	entry, secret  int
	alg            string
	sendID, recvID uint8
	maclen         int
	exclude        bool
}

// mkts are the candidate MKTs of one Explain, each in a keyring of its
// own (candidates share KeyIDs), built once for all its segments.
type mkts struct {
	m map[mktKey]mkt
}

// mkt is a candidate MKT and its keyring; m is nil when the candidate is
// not a valid MKT.
type mkt struct {
	r *ao.Keyring
	m *ao.MKT
}

// maxMKTs bounds the candidate MKTs kept at once (some kilobytes each):
// past it they are dropped and made again as needed.
const maxMKTs = 1 << 10

// get returns the MKT of cfg, made on first use; nil when cfg is not one.
func (c *mkts) get(k mktKey, cfg keys.AO) *ao.MKT {
	if e, ok := c.m[k]; ok {
		return e.m
	}
	if len(c.m) >= maxMKTs {
		c.close()
	}
	var e mkt
	if v, err := cfg.Validate(); err == nil {
		e.r = ao.NewKeyring(nil)
		if e.m, err = e.r.Add(v); err != nil {
			e.m = nil
		}
	}
	if c.m == nil {
		c.m = map[mktKey]mkt{}
	}
	c.m[k] = e
	return e.m
}

// close deletes the MKTs, wiping their keys.
func (c *mkts) close() {
	for _, e := range c.m {
		if e.m != nil {
			_ = e.r.Delete(e.m, ao.DeleteOptions{})
		}
	}
	*c = mkts{}
}

// base is entry i as the receiver's MKT: mirrored (the sender's entry)
// with its IDs swapped.
func (a *aoSearch) base(i int, mirrored bool) keys.AO {
	c := a.kf.AO[i].Config
	if mirrored {
		c.SendID, c.RecvID = c.RecvID, c.SendID
	}
	return c
}

// idField is the field that holds the KeyID a receiver expects: rcvid of
// the receiver's entry, sndid of the sender's.
func idField(mirrored bool) string {
	if mirrored {
		return "sndid"
	}
	return "rcvid"
}

// search diagnoses the segment under the entries idx that judge it.
func (a *aoSearch) search(idx []int, mirrored bool) Diagnosis {
	k, wire := a.opt.KeyID, len(a.opt.MAC)
	var match []int
	for _, i := range idx {
		if a.base(i, mirrored).RecvID == k {
			match = append(match, i)
		}
	}
	for _, i := range match {
		if c := a.base(i, mirrored); c.MACLen != wire {
			return a.fix(MACLength, i, fmt.Sprintf(`set "maclen": %d (the peer's MACs are %d bytes, the entry's %d)`, wire, wire, c.MACLen))
		}
	}
	if len(match) == 0 {
		for _, i := range idx {
			c := a.base(i, mirrored)
			swapped := c.SendID == k
			c.RecvID, c.MACLen = k, wire
			if !a.verifies(c, i, ownSecret) {
				continue
			}
			if swapped {
				return a.fix(KeyID, i, fmt.Sprintf(`swap "sndid" and "rcvid" (the peer sends KeyID %d, the entry's %s)`, k, idField(!mirrored)))
			}
			return a.fix(KeyID, i, fmt.Sprintf(`set %q: %d (the peer sends KeyID %d, the entry expects %d)`, idField(mirrored), k, k, a.base(i, mirrored).RecvID))
		}
		match = idx // the other variations, under the KeyID on the wire
	}
	for _, i := range match {
		if d, ok := a.variations(i, mirrored); ok {
			return d
		}
	}
	i := match[0]
	return a.fix(Secret, i, fmt.Sprintf(`the secrets differ: no configured secret verifies KeyID %d under any tried variation: set the same "key" on both ends`, k))
}

// variations tries entry i with one field other than the KeyID changed.
func (a *aoSearch) variations(i int, mirrored bool) (Diagnosis, bool) {
	c := a.base(i, mirrored)
	c.RecvID, c.MACLen = a.opt.KeyID, len(a.opt.MAC)
	for _, name := range mac.Names() {
		alg, _ := mac.Lookup(c.Algorithm)
		if alg != nil && alg.Name() == name {
			continue
		}
		v := c
		v.Algorithm = name
		if a.verifies(v, i, ownSecret) {
			return a.fix(Algorithm, i, fmt.Sprintf(`set "alg": %q (the peer signs with %s)`, name, name)), true
		}
	}
	v := c
	v.ExcludeOptions = !c.ExcludeOptions
	if a.verifies(v, i, ownSecret) {
		what := "excludes"
		if !v.ExcludeOptions {
			what = "includes"
		}
		return a.fix(Options, i, fmt.Sprintf(`set "exclude_options": %v (the peer %s options)`, v.ExcludeOptions, what)), true
	}
	for n, e := range encodings(c.Key) {
		v := c
		v.Key = e.key
		ok := a.verifies(v, i, n)
		clear(e.key)
		if ok {
			return a.fix(KeyEncoding, i, e.fix), true
		}
	}
	if j, ok := a.otherSecret(c, i); ok {
		return a.fix(Secret, i, fmt.Sprintf(`the peer uses the secret of %s: set the same "key" on both ends`, j)), true
	}
	return Diagnosis{}, false
}

// otherSecret looks for another entry's secret that verifies under c.
func (a *aoSearch) otherSecret(c keys.AO, i int) (string, bool) {
	for j, e := range a.kf.AO {
		if j != i && !bytes.Equal(e.Config.Key, c.Key) {
			v := c
			v.Key = e.Config.Key
			if a.verifies(v, i, aoSecret+j) {
				return label("ao", j, e.Name), true
			}
		}
	}
	for j, e := range a.kf.MD5 {
		v := c
		v.Key = e.Config.Key
		if a.verifies(v, i, md5Secret+j) {
			return label("md5", j, e.Name), true
		}
	}
	return "", false
}

// otherAddress diagnoses a segment no "ao" entry covers: an entry for
// another address that verifies it, as the receiver's or the sender's.
func (a *aoSearch) otherAddress() Diagnosis {
	k, wire := a.opt.KeyID, len(a.opt.MAC)
	for _, mirrored := range []bool{false, true} {
		for i := range a.kf.AO {
			c := a.base(i, mirrored)
			if c.RecvID != k {
				continue
			}
			c.MACLen = wire
			if !a.verifies(c, i, ownSecret) {
				continue
			}
			addr, whose := a.sg.src.Addr(), "the sender"
			if mirrored {
				addr, whose = a.sg.dst.Addr(), "the receiver"
			}
			return a.fix(PeerAddress, i, fmt.Sprintf(`set "peer": %q (its secret verifies %s's segments, and no entry covers %s %v)`,
				addr.String(), a.sg.src, whose, addr))
		}
	}
	return Diagnosis{Cause: Secret, Fix: fmt.Sprintf("no entry covers %v or %v, and no entry's secret verifies its segments: add an entry for the peer", a.sg.src.Addr(), a.sg.dst.Addr())}
}

// fix is a diagnosis that names "ao" entry i.
func (a *aoSearch) fix(c Cause, i int, what string) Diagnosis {
	e := a.kf.AO[i]
	return Diagnosis{Cause: c, Entry: entry("ao", i, e.Name), Fix: label("ao", i, e.Name) + ": " + what}
}

// md5Verifies reports whether p, from src, verifies under a TCP-MD5 key.
func md5Verifies(p *segment.Segment, sg seg, key []byte) bool {
	r := md5sig.NewKeyring(nil)
	k, err := r.Add(keys.MD5{Peer: host(sg.src.Addr()), Key: key})
	if err != nil {
		return false
	}
	defer r.Delete(k, md5sig.DeleteOptions{})
	return r.Verify(p, 0) == nil
}

// explainMD5 diagnoses a TCP-MD5 segment under the entries idx that
// cover its ends (none: another address's).
func explainMD5(kf *keyfile.File, p *segment.Segment, sg seg, idx []int) Diagnosis {
	fix := func(c Cause, i int, what string) Diagnosis {
		e := kf.MD5[i]
		return Diagnosis{Cause: c, Entry: entry("md5", i, e.Name), Fix: label("md5", i, e.Name) + ": " + what}
	}
	if len(idx) == 0 {
		for i, e := range kf.MD5 {
			if md5Verifies(p, sg, e.Config.Key) {
				return fix(PeerAddress, i, fmt.Sprintf(`set "peer": %q (its secret verifies %v's segments, and no entry covers %v)`,
					sg.src.Addr().String(), sg.src, sg.src.Addr()))
			}
		}
		return Diagnosis{Cause: Secret, Fix: fmt.Sprintf("no entry covers %v or %v, and no entry's secret verifies its segments: add an entry for the peer", sg.src.Addr(), sg.dst.Addr())}
	}
	for _, i := range idx {
		for _, e := range encodings(kf.MD5[i].Config.Key) {
			ok := md5Verifies(p, sg, e.key)
			clear(e.key)
			if ok {
				return fix(KeyEncoding, i, e.fix)
			}
		}
	}
	for _, i := range idx {
		for j, e := range kf.MD5 {
			if j != i && !bytes.Equal(e.Config.Key, kf.MD5[i].Config.Key) && md5Verifies(p, sg, e.Config.Key) {
				return fix(Secret, i, fmt.Sprintf(`the peer uses the secret of %s: set the same "key" on both ends`, label("md5", j, e.Name)))
			}
		}
		for j, e := range kf.AO {
			if md5Verifies(p, sg, e.Config.Key) {
				return fix(Secret, i, fmt.Sprintf(`the peer uses the secret of %s: set the same "key" on both ends`, label("ao", j, e.Name)))
			}
		}
	}
	return fix(Secret, idx[0], `the secrets differ: no configured secret verifies under any tried variation: set the same "key" on both ends`)
}
