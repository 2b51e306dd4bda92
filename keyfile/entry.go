package keyfile

import (
	"bytes"
	"fmt"
	"math"
	"net/netip"
	"strconv"
	"strings"

	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/mac"
)

// The parser walks a file's entries and checks each as a keyring would,
// plus what only the file as a whole shows: two entries that clash.

// idKey is what two MKTs must not share: a peer and a SendID ('s') or a
// RecvID ('r').
type idKey struct {
	peer netip.Prefix
	kind byte
	id   uint8
}

// scopeKey is what two TCP-MD5 keys must not share.
type scopeKey struct {
	peer    netip.Prefix
	bound   bool
	ifindex int
}

// parser is one Parse: the bytes, the File it fills, and what the entries so
// far hold, to find a clash with the next one.
type parser struct {
	src      []byte
	f        *File
	aoIDs    map[idKey][]int
	md5Peers map[scopeKey][]int
}

// file parses the top level: {"ao": [...], "md5": [...]} and the
// file's own settings, from bytes that are valid JSON, in order; the
// file's accept tolerance is read first, wherever it is, since entries
// take it.
func (p *parser) file() error {
	start := skipSpace(p.src, 0)
	top := p.src[start:valueEnd(p.src, start)]
	if k := kind(top); k != "an object" {
		line, col := position(p.src, int64(start)+1)
		return &Error{Err: ErrSyntax, msg: fmt.Sprintf("line %d, column %d: want a JSON object, got %s", line, col, k)}
	}
	ms := members(top)
	for _, m := range ms {
		if m.name == "accept_tolerance" {
			d, err := tolerance(m.v)
			if err != nil {
				return (&Error{}).wrap(m.name, err)
			}
			p.f.AcceptTolerance = d
			break
		}
	}
	seen := map[string]bool{}
	for _, m := range ms {
		if seen[m.name] {
			return &Error{Field: m.name, Err: ErrSyntax, msg: "given twice"}
		}
		seen[m.name] = true
		var entry func(raw []byte, i int) error
		switch m.name {
		case "ao":
			entry = p.aoEntry
		case "md5":
			entry = p.md5Entry
		case "accept_tolerance":
			continue
		case "clock_skew":
			d, err := tolerance(m.v)
			if err != nil {
				return (&Error{}).wrap(m.name, err)
			}
			p.f.ClockSkew = d
			continue
		default:
			return unknown(nil, m.name, []string{"ao", "md5", "accept_tolerance", "clock_skew"}, "top-level field")
		}
		if k := kind(m.v); k != "a list" {
			return &Error{Field: m.name, Err: ErrSyntax, msg: "want a list, got " + k}
		}
		for i, raw := range elements(m.v) {
			if err := entry(raw, i); err != nil {
				return err
			}
		}
	}
	return nil
}

// entryFields splits one entry's object into its fields, refusing
// unknown and repeated ones.
func (p *parser) entryFields(raw []byte, e *Error, known []string) (map[string][]byte, error) {
	if k := kind(raw); k != "an object" {
		return nil, e.with("", ErrSyntax, "want a JSON object, got "+k)
	}
	fields := map[string][]byte{}
	for _, m := range members(raw) {
		if _, dup := fields[m.name]; dup {
			return nil, e.with(m.name, ErrSyntax, "given twice")
		}
		if !contains(known, m.name) {
			return nil, unknown(e, m.name, known, "field")
		}
		fields[m.name] = m.v
	}
	return fields, nil
}

// aoFields are the fields an "ao" entry may have.
var aoFields = append([]string{"name", "alg", "key", "sndid", "rcvid", "peer", "maclen", "exclude_options", "ifindex"}, lifetimeFields...)

// md5Fields are the fields an "md5" entry may have.
var md5Fields = append([]string{"name", "peer", "key", "ifindex"}, lifetimeFields...)

// aoEntry parses and checks entry i of "ao". On an error the key it
// decoded is wiped.
func (p *parser) aoEntry(raw []byte, i int) (err error) {
	e := &Error{Entry: fmt.Sprintf("ao[%d]", i)}
	fields, err := p.entryFields(raw, e, aoFields)
	if err != nil {
		return err
	}
	var out AO
	defer func() {
		if err != nil {
			clear(out.Config.Key)
		}
	}()
	if out.Name, err = entryName(fields, e, "ao", i); err != nil {
		return err
	}
	if err := required(fields, e, "alg", "key", "sndid", "rcvid", "peer"); err != nil {
		return err
	}
	c := &out.Config
	alg, err := algorithm(fields["alg"], e)
	if err != nil {
		return err
	}
	c.Algorithm = alg.Name()
	if c.Key, err = masterKey(fields["key"], e, alg); err != nil {
		return err
	}
	if err := keyIDs(fields, e, c); err != nil {
		return err
	}
	if c.Peer, err = peer(fields["peer"]); err != nil {
		return e.wrap("peer", err)
	}
	if c.MACLen, err = macLen(fields, e, alg); err != nil {
		return err
	}
	if v, ok := fields["exclude_options"]; ok {
		if c.ExcludeOptions, err = boolean(v); err != nil {
			return e.wrap("exclude_options", err)
		}
	}
	if c.IfIndex, c.HasIfIndex, err = ifIndex(fields, e); err != nil {
		return err
	}
	if c.Lifetime, err = lifetime(fields, e, p.f.AcceptTolerance); err != nil {
		return err
	}
	// Everything a keyring checks but KeyID clashes, which follow: the
	// checks above name the field, this one makes sure nothing passes
	// that an ao.Keyring would refuse.
	if _, err := c.Validate(); err != nil {
		return e.with("", ErrValue, strings.TrimPrefix(err.Error(), "keys: "))
	}
	if err := p.aoClash(*c, e); err != nil {
		return err
	}
	n := len(p.f.AO)
	p.f.AO = append(p.f.AO, out)
	p.aoIDs[idKey{c.Peer, 's', c.SendID}] = append(p.aoIDs[idKey{c.Peer, 's', c.SendID}], n)
	p.aoIDs[idKey{c.Peer, 'r', c.RecvID}] = append(p.aoIDs[idKey{c.Peer, 'r', c.RecvID}], n)
	return nil
}

// entryName decodes the optional "name" of entry i of kind and, when
// there is one, names the entry by it in e, so that later errors do.
func entryName(fields map[string][]byte, e *Error, kind string, i int) (string, error) {
	v, ok := fields["name"]
	if !ok {
		return "", nil
	}
	s, err := name(v)
	if err != nil {
		return "", e.wrap("name", err)
	}
	e.Entry = Label(kind, i, s)
	return s, nil
}

// required is the error for the first of names that fields lacks, nil
// when it has them all.
func required(fields map[string][]byte, e *Error, names ...string) error {
	for _, f := range names {
		if _, ok := fields[f]; !ok {
			return e.with(f, ErrMissing, "missing")
		}
	}
	return nil
}

// algorithm looks up an "ao" entry's "alg"; an unknown name's error lists
// the known ones, and says where a TCP-MD5 key goes when it looks like
// one.
func algorithm(v []byte, e *Error) (*mac.Algorithm, error) {
	s, err := str(v)
	if err != nil {
		return nil, e.wrap("alg", err)
	}
	alg, err := mac.Lookup(s)
	if err != nil {
		msg := "unknown algorithm" + keyHint(s)
		if strings.Contains(strings.ToLower(s), "md5") {
			msg += ` (a TCP-MD5 key is an "md5" entry)`
		}
		return nil, e.with("alg", ErrValue, msg+" (known: "+strings.Join(mac.Names(), ", ")+")")
	}
	return alg, nil
}

// masterKey decodes an "ao" entry's "key" and checks its length against alg
// (a CMAC that does not reduce its master key takes only the cipher's
// key sizes), so that the error names the field. On an error the key is
// wiped.
func masterKey(v []byte, e *Error, alg *mac.Algorithm) ([]byte, error) {
	key, err := secret(v, keys.MaxKeyLen)
	if err != nil {
		return nil, e.wrap("key", err)
	}
	if alg.IsCMAC() && !alg.ReducesMasterKey() && !alg.KeySizeOK(len(key)) {
		var ok []string
		for n := 1; n <= keys.MaxKeyLen; n++ {
			if alg.KeySizeOK(n) {
				ok = append(ok, strconv.Itoa(n))
			}
		}
		clear(key)
		return nil, e.with("key", ErrValue, fmt.Sprintf("%d bytes, %s takes %s", len(key), alg, strings.Join(ok, " or ")))
	}
	if err := alg.CheckMasterKey(len(key)); err != nil {
		clear(key)
		return nil, e.with("key", ErrValue, strings.TrimPrefix(err.Error(), "mac: master key too short: "))
	}
	return key, nil
}

// keyIDs decodes an "ao" entry's "sndid" and "rcvid" into c.
func keyIDs(fields map[string][]byte, e *Error, c *keys.AO) error {
	for _, id := range []struct {
		name string
		dst  *uint8
	}{{"sndid", &c.SendID}, {"rcvid", &c.RecvID}} {
		n, err := integer(fields[id.name], 0, 255, "a KeyID")
		if err != nil {
			return e.wrap(id.name, err)
		}
		*id.dst = uint8(n)
	}
	return nil
}

// macLen decodes an "ao" entry's optional "maclen" for alg: absent or 0
// is alg's default, an algorithm with one MAC length takes only that one.
func macLen(fields map[string][]byte, e *Error, alg *mac.Algorithm) (int, error) {
	v, ok := fields["maclen"]
	if !ok {
		return defaultMACLen(alg), nil
	}
	hi := int64(min(keys.MaxMACLen, alg.Size()))
	n, err := integer(v, math.MinInt64, math.MaxInt64, "")
	if err != nil {
		return 0, e.wrap("maclen", err)
	}
	if fixed := alg.MACLen(); fixed != 0 && n != 0 && n != int64(fixed) {
		return 0, e.with("maclen", ErrValue, fmt.Sprintf("%d, but %s has %d-byte MACs only (0 means %d)", n, alg, fixed, fixed))
	}
	if n < 0 || n > hi {
		return 0, e.with("maclen", ErrValue, fmt.Sprintf("%d is not in 1..%d for %s (0 means %d)", n, hi, alg, defaultMACLen(alg)))
	}
	if n == 0 {
		return defaultMACLen(alg), nil
	}
	return int(n), nil
}

// ifIndex decodes an entry's optional "ifindex": the index and whether
// the entry is bound to it.
func ifIndex(fields map[string][]byte, e *Error) (int, bool, error) {
	v, ok := fields["ifindex"]
	if !ok {
		return 0, false, nil
	}
	n, err := integer(v, 0, math.MaxInt32, "an interface index")
	if err != nil {
		return 0, false, e.wrap("ifindex", err)
	}
	return int(n), true, nil
}

// aoClash is the error for an MKT c that shares a peer (in the same L3
// domain, or either unbound) and a SendID or RecvID with an earlier
// entry, which a keyring would refuse; nil when it shares none.
func (p *parser) aoClash(c keys.AO, e *Error) error {
	for _, id := range []struct {
		field string
		kind  byte
		v     uint8
	}{{"sndid", 's', c.SendID}, {"rcvid", 'r', c.RecvID}} {
		k := idKey{c.Peer, id.kind, id.v}
		for _, j := range p.aoIDs[k] {
			o := p.f.AO[j]
			if c.HasIfIndex && o.Config.HasIfIndex && c.IfIndex != o.Config.IfIndex {
				continue
			}
			e.Other = Label("ao", j, o.Name)
			if sameAO(o.Config, c) {
				return e.with("", ErrDuplicate, "the same MKT as "+e.Other)
			}
			return e.with(id.field, ErrDuplicate, fmt.Sprintf("KeyID %d for peer %v is also the %s of %s (a keyring holds one MKT per peer and %s)",
				id.v, c.Peer, id.field, e.Other, id.field))
		}
	}
	return nil
}

// sameAO reports whether a and b are the same MKT in every field, the
// key included: a duplicate, not a clash.
func sameAO(a, b keys.AO) bool {
	return a.Peer == b.Peer && a.SendID == b.SendID && a.RecvID == b.RecvID && a.Algorithm == b.Algorithm &&
		bytes.Equal(a.Key, b.Key) && a.MACLen == b.MACLen && a.ExcludeOptions == b.ExcludeOptions &&
		a.HasIfIndex == b.HasIfIndex && a.IfIndex == b.IfIndex
}

// md5Entry parses and checks entry i of "md5". On an error the key it
// decoded is wiped.
func (p *parser) md5Entry(raw []byte, i int) (err error) {
	e := &Error{Entry: fmt.Sprintf("md5[%d]", i)}
	fields, err := p.entryFields(raw, e, md5Fields)
	if err != nil {
		return err
	}
	var out MD5
	defer func() {
		if err != nil {
			clear(out.Config.Key)
		}
	}()
	if out.Name, err = entryName(fields, e, "md5", i); err != nil {
		return err
	}
	if err := required(fields, e, "peer", "key"); err != nil {
		return err
	}
	c := &out.Config
	if c.Peer, err = peer(fields["peer"]); err != nil {
		return e.wrap("peer", err)
	}
	if c.Key, err = secret(fields["key"], keys.MaxKeyLen); err != nil {
		return e.wrap("key", err)
	}
	if c.IfIndex, c.HasIfIndex, err = ifIndex(fields, e); err != nil {
		return err
	}
	if c.Lifetime, err = lifetime(fields, e, p.f.AcceptTolerance); err != nil {
		return err
	}
	if _, err := c.Validate(); err != nil {
		return e.with("", ErrValue, strings.TrimPrefix(err.Error(), "keys: "))
	}
	k := scopeKey{c.Peer, c.HasIfIndex, c.IfIndex}
	for _, j := range p.md5Peers[k] {
		// Keys of one peer that both have lifetimes are a schedule
		// (RFC 8177: a key chain), not a clash.
		o := p.f.MD5[j]
		if bytes.Equal(o.Config.Key, c.Key) {
			e.Other = Label("md5", j, o.Name)
			return e.with("", ErrDuplicate, "the same key as "+e.Other)
		}
		if !o.Config.Lifetime.Scheduled() || !c.Lifetime.Scheduled() {
			e.Other = Label("md5", j, o.Name)
			return e.with("peer", ErrDuplicate, fmt.Sprintf("%v already has a key in %s (a keyring holds one key per peer; two keys of a peer need lifetimes)", c.Peer, e.Other))
		}
	}
	p.md5Peers[k] = append(p.md5Peers[k], len(p.f.MD5))
	p.f.MD5 = append(p.f.MD5, out)
	return nil
}

// defaultMACLen is what an absent or 0 maclen means for alg: 12 (RFC 5926,
// Linux), or the one length the draft's algorithms take (16).
func defaultMACLen(alg *mac.Algorithm) int {
	if n := alg.MACLen(); n != 0 {
		return n
	}
	return keys.DefaultMACLen
}

// contains reports whether list holds s.
func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
