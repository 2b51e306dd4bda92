package keyfile

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/mac"
)

// MaxSize is the largest keys file accepted, in bytes: room for tens of
// thousands of entries, and a bound on what a wrong path can make a
// program read.
const MaxSize = 4 << 20

// The kinds of error, for errors.Is. Every error of Parse, Read and Load
// about the file's content is an [*Error] wrapping one of them.
var (
	ErrSyntax       = errors.New("keyfile: malformed JSON")
	ErrUnknownField = errors.New("keyfile: unknown field")
	ErrMissing      = errors.New("keyfile: missing field")
	ErrValue        = errors.New("keyfile: bad value")
	ErrDuplicate    = errors.New("keyfile: duplicate entry")
	ErrEmpty        = errors.New("keyfile: no keys")
	ErrTooLarge     = errors.New("keyfile: file too large")
	// ErrNilReader: Read was given a nil io.Reader.
	ErrNilReader = errors.New("keyfile: nil reader")
)

// File is a parsed keys file.
type File struct {
	AO  []AO  // the "ao" entries, in file order
	MD5 []MD5 // the "md5" entries, in file order
}

// AO is one "ao" entry: a TCP-AO MKT.
type AO struct {
	Name   string  // the entry's "name"; "" when it has none
	Config keys.AO // MACLen is never 0: an absent or 0 maclen is 12 (16 for the draft's algorithms)
}

// MD5 is one "md5" entry: a TCP-MD5 key.
type MD5 struct {
	Name   string // the entry's "name"; "" when it has none
	Config keys.MD5
}

// Error is an error in a keys file. Its text names the entry and field
// and never contains key bytes.
type Error struct {
	Entry string // "ao[3]" or "md5[0]", with the entry's name if it has one; "" for the file as a whole
	Field string // the field at fault; "" when not one field
	Other string // for ErrDuplicate: the earlier entry, named like Entry
	Err   error  // one of the sentinels
	msg   string
}

// Error is "entry.field: problem" (ao[3].sndid: …), or "problem" for the
// file as a whole.
func (e *Error) Error() string {
	where := e.Entry
	if e.Field != "" && e.Err != ErrUnknownField { // that message quotes the field
		where = strings.TrimPrefix(where+"."+e.Field, ".")
	}
	if where == "" {
		return e.msg
	}
	return where + ": " + e.msg
}

// Unwrap returns the kind of error.
func (e *Error) Unwrap() error { return e.Err }

// Label returns how messages name entry i of kind ("ao" or "md5"):
// ao[3], or ao[3] ("name") when it has a name; it is keys.Label, which
// the keyrings' AddAll errors use too.
func Label(kind string, i int, name string) string { return keys.Label(kind, i, name) }

// AOConfigs returns the "ao" entries' configurations and names, in file
// order, as ao.Keyring.AddAll takes them: ring.AddAll(f.AOConfigs()).
// The configurations share f's key bytes (a keyring copies them).
func (f *File) AOConfigs() (cfgs []keys.AO, names []string) {
	if f == nil {
		return nil, nil
	}
	for _, e := range f.AO {
		cfgs, names = append(cfgs, e.Config), append(names, e.Name)
	}
	return cfgs, names
}

// MD5Configs is AOConfigs for the "md5" entries, as md5sig.Keyring.AddAll
// takes them.
func (f *File) MD5Configs() (cfgs []keys.MD5, names []string) {
	if f == nil {
		return nil, nil
	}
	for _, e := range f.MD5 {
		cfgs, names = append(cfgs, e.Config), append(names, e.Name)
	}
	return cfgs, names
}

// Load reads the keys file at path. A file larger than MaxSize is refused
// before it is read. The bytes read are wiped before Load returns.
func Load(path string) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var size int64
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
		if st.Size() > MaxSize {
			return nil, &Error{Err: ErrTooLarge, msg: fmt.Sprintf("%d bytes, more than the %d a keys file may have", st.Size(), MaxSize)}
		}
		size = st.Size()
	}
	return read(f, int(size))
}

// Read reads a keys file from r, reading at most MaxSize+1 bytes. The
// bytes read are wiped before Read returns.
func Read(r io.Reader) (*File, error) {
	if r == nil {
		return nil, ErrNilReader
	}
	return read(r, 0)
}

// read is Read with a hint of the size to expect.
func read(r io.Reader, size int) (*File, error) {
	b, err := readAll(r, size)
	defer clear(b)
	if err != nil {
		return nil, err
	}
	return Parse(b)
}

// readAll reads r to its end, or to MaxSize+1 bytes, into a buffer that
// starts at size and, when it must grow, wipes the one it outgrows (as
// io.ReadAll does not): the caller wipes the last one.
func readAll(r io.Reader, size int) ([]byte, error) {
	b := make([]byte, 0, min(max(size, 0), MaxSize)+512)
	for {
		if len(b) == cap(b) {
			nb := make([]byte, len(b), min(2*cap(b), MaxSize+1))
			copy(nb, b)
			clear(b)
			b = nb
		}
		n, err := r.Read(b[len(b):min(cap(b), MaxSize+1)])
		b = b[:len(b)+max(n, 0)]
		if err == io.EOF || len(b) > MaxSize {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}

// Parse parses and validates a keys file. It keeps no reference to b and
// does not change it (b is the caller's to wipe): each entry's key is a
// copy of its own, and the copies Parse makes on the way are wiped. An
// error never quotes a value that may be a key: it names the entry, the
// field and what was expected.
func Parse(b []byte) (*File, error) {
	if len(b) > MaxSize {
		return nil, &Error{Err: ErrTooLarge, msg: fmt.Sprintf("more than the %d bytes a keys file may have", MaxSize)}
	}
	if msg := notJSON(b); msg != "" {
		return nil, &Error{Err: ErrSyntax, msg: msg}
	}
	if err := json.Unmarshal(b, &discard{}); err != nil {
		return nil, syntaxError(b, err)
	}
	p := parser{src: b, f: &File{}, aoIDs: map[idKey][]int{}, md5Peers: map[scopeKey]int{}}
	if err := p.file(); err != nil {
		p.f.Wipe()
		return nil, err
	}
	if len(p.f.AO) == 0 && len(p.f.MD5) == 0 {
		return nil, &Error{Err: ErrEmpty, msg: `no keys: want "ao" and/or "md5" entries`}
	}
	return p.f, nil
}

// Wipe zeroes the key of every entry of f, for a program done with f once
// keyrings or sockets hold their own copies (both copy what they are
// given). Go cannot promise that no other copy exists (a goroutine stack
// that was moved, a page swapped out), only that these are gone.
func (f *File) Wipe() {
	if f == nil {
		return
	}
	for i := range f.AO {
		clear(f.AO[i].Config.Key)
	}
	for i := range f.MD5 {
		clear(f.MD5[i].Config.Key)
	}
}

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

type parser struct {
	src      []byte
	f        *File
	aoIDs    map[idKey][]int
	md5Peers map[scopeKey]int
}

// file parses the top level: {"ao": [...], "md5": [...]}, from bytes
// that are valid JSON.
func (p *parser) file() error {
	start := skipSpace(p.src, 0)
	top := p.src[start:valueEnd(p.src, start)]
	if k := kind(top); k != "an object" {
		line, col := position(p.src, int64(start)+1)
		return &Error{Err: ErrSyntax, msg: fmt.Sprintf("line %d, column %d: want a JSON object, got %s", line, col, k)}
	}
	seen := map[string]bool{}
	for _, m := range members(top) {
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
		default:
			return unknown(nil, m.name, []string{"ao", "md5"}, "top-level field")
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

// aoEntry parses and checks entry i of "ao". On an error the key it
// decoded is wiped.
func (p *parser) aoEntry(raw []byte, i int) (err error) {
	e := &Error{Entry: fmt.Sprintf("ao[%d]", i)}
	fields, err := p.entryFields(raw, e, []string{"name", "alg", "key", "sndid", "rcvid", "peer", "maclen", "exclude_options", "ifindex"})
	if err != nil {
		return err
	}
	var out AO
	defer func() {
		if err != nil {
			clear(out.Config.Key)
		}
	}()
	if v, ok := fields["name"]; ok {
		if out.Name, err = name(v); err != nil {
			return e.wrap("name", err)
		}
		e.Entry = Label("ao", i, out.Name)
	}
	for _, f := range []string{"alg", "key", "sndid", "rcvid", "peer"} {
		if _, ok := fields[f]; !ok {
			return e.with(f, ErrMissing, "missing")
		}
	}
	c := &out.Config
	s, err := str(fields["alg"])
	if err != nil {
		return e.wrap("alg", err)
	}
	alg, err := mac.Lookup(s)
	if err != nil {
		msg := "unknown algorithm" + keyHint(s)
		if strings.Contains(strings.ToLower(s), "md5") {
			msg += ` (a TCP-MD5 key is an "md5" entry)`
		}
		return e.with("alg", ErrValue, msg+" (known: "+strings.Join(mac.Names(), ", ")+")")
	}
	c.Algorithm = alg.Name()
	if c.Key, err = secret(fields["key"], keys.MaxKeyLen); err != nil {
		return e.wrap("key", err)
	}
	if alg.IsCMAC() && !alg.ReducesMasterKey() && !alg.KeySizeOK(len(c.Key)) {
		var ok []string
		for n := 1; n <= keys.MaxKeyLen; n++ {
			if alg.KeySizeOK(n) {
				ok = append(ok, strconv.Itoa(n))
			}
		}
		return e.with("key", ErrValue, fmt.Sprintf("%d bytes, %s takes %s", len(c.Key), alg, strings.Join(ok, " or ")))
	}
	if err := alg.CheckMasterKey(len(c.Key)); err != nil {
		return e.with("key", ErrValue, strings.TrimPrefix(err.Error(), "mac: master key too short: "))
	}
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
	if c.Peer, err = peer(fields["peer"]); err != nil {
		return e.wrap("peer", err)
	}
	c.MACLen = defaultMACLen(alg)
	if v, ok := fields["maclen"]; ok {
		hi := int64(min(keys.MaxMACLen, alg.Size()))
		n, err := integer(v, math.MinInt64, math.MaxInt64, "")
		if err != nil {
			return e.wrap("maclen", err)
		}
		if fixed := alg.MACLen(); fixed != 0 && n != 0 && n != int64(fixed) {
			return e.with("maclen", ErrValue, fmt.Sprintf("%d, but %s has %d-byte MACs only (0 means %d)", n, alg, fixed, fixed))
		}
		if n < 0 || n > hi {
			return e.with("maclen", ErrValue, fmt.Sprintf("%d is not in 1..%d for %s (0 means %d)", n, hi, alg, defaultMACLen(alg)))
		}
		if n != 0 {
			c.MACLen = int(n)
		}
	}
	if v, ok := fields["exclude_options"]; ok {
		if c.ExcludeOptions, err = boolean(v); err != nil {
			return e.wrap("exclude_options", err)
		}
	}
	if v, ok := fields["ifindex"]; ok {
		n, err := integer(v, 0, math.MaxInt32, "an interface index")
		if err != nil {
			return e.wrap("ifindex", err)
		}
		c.IfIndex, c.HasIfIndex = int(n), true
	}
	// Everything a keyring checks but KeyID clashes, which follow: the
	// checks above name the field, this one makes sure nothing passes
	// that an ao.Keyring would refuse.
	if _, err := c.Validate(); err != nil {
		return e.with("", ErrValue, strings.TrimPrefix(err.Error(), "keys: "))
	}
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
			if sameAO(o.Config, *c) {
				return e.with("", ErrDuplicate, "the same MKT as "+e.Other)
			}
			return e.with(id.field, ErrDuplicate, fmt.Sprintf("KeyID %d for peer %v is also the %s of %s (a keyring holds one MKT per peer and %s)",
				id.v, c.Peer, id.field, e.Other, id.field))
		}
	}
	n := len(p.f.AO)
	p.f.AO = append(p.f.AO, out)
	p.aoIDs[idKey{c.Peer, 's', c.SendID}] = append(p.aoIDs[idKey{c.Peer, 's', c.SendID}], n)
	p.aoIDs[idKey{c.Peer, 'r', c.RecvID}] = append(p.aoIDs[idKey{c.Peer, 'r', c.RecvID}], n)
	return nil
}

func sameAO(a, b keys.AO) bool {
	return a.Peer == b.Peer && a.SendID == b.SendID && a.RecvID == b.RecvID && a.Algorithm == b.Algorithm &&
		bytes.Equal(a.Key, b.Key) && a.MACLen == b.MACLen && a.ExcludeOptions == b.ExcludeOptions &&
		a.HasIfIndex == b.HasIfIndex && a.IfIndex == b.IfIndex
}

// md5Entry parses and checks entry i of "md5". On an error the key it
// decoded is wiped.
func (p *parser) md5Entry(raw []byte, i int) (err error) {
	e := &Error{Entry: fmt.Sprintf("md5[%d]", i)}
	fields, err := p.entryFields(raw, e, []string{"name", "peer", "key", "ifindex"})
	if err != nil {
		return err
	}
	var out MD5
	defer func() {
		if err != nil {
			clear(out.Config.Key)
		}
	}()
	if v, ok := fields["name"]; ok {
		if out.Name, err = name(v); err != nil {
			return e.wrap("name", err)
		}
		e.Entry = Label("md5", i, out.Name)
	}
	for _, f := range []string{"peer", "key"} {
		if _, ok := fields[f]; !ok {
			return e.with(f, ErrMissing, "missing")
		}
	}
	c := &out.Config
	if c.Peer, err = peer(fields["peer"]); err != nil {
		return e.wrap("peer", err)
	}
	if c.Key, err = secret(fields["key"], keys.MaxKeyLen); err != nil {
		return e.wrap("key", err)
	}
	if v, ok := fields["ifindex"]; ok {
		n, err := integer(v, 0, math.MaxInt32, "an interface index")
		if err != nil {
			return e.wrap("ifindex", err)
		}
		c.IfIndex, c.HasIfIndex = int(n), true
	}
	if _, err := c.Validate(); err != nil {
		return e.with("", ErrValue, strings.TrimPrefix(err.Error(), "keys: "))
	}
	k := scopeKey{c.Peer, c.HasIfIndex, c.IfIndex}
	if j, dup := p.md5Peers[k]; dup {
		o := p.f.MD5[j]
		e.Other = Label("md5", j, o.Name)
		if bytes.Equal(o.Config.Key, c.Key) {
			return e.with("", ErrDuplicate, "the same key as "+e.Other)
		}
		return e.with("peer", ErrDuplicate, fmt.Sprintf("%v already has a key in %s (a keyring holds one key per peer)", c.Peer, e.Other))
	}
	p.md5Peers[k] = len(p.f.MD5)
	p.f.MD5 = append(p.f.MD5, out)
	return nil
}

// with returns e completed with a field, a kind and a message.
func (e *Error) with(field string, kind error, msg string) *Error {
	e.Field, e.Err, e.msg = field, kind, msg
	return e
}

// wrap returns e completed with a field and a value error.
func (e *Error) wrap(field string, err error) *Error {
	var ve valueError
	if errors.As(err, &ve) {
		return e.with(field, ve.kind, ve.msg)
	}
	return e.with(field, ErrValue, err.Error())
}

// valueError is a problem with one value, before it is placed.
type valueError struct {
	kind error
	msg  string
}

func (v valueError) Error() string { return v.msg }

func bad(format string, a ...any) error {
	return valueError{ErrValue, fmt.Sprintf(format, a...)}
}

// kind names the JSON type of a raw value.
func kind(v []byte) string {
	switch v = bytes.TrimSpace(v); {
	case len(v) == 0:
		return "nothing"
	case v[0] == '"':
		return "a string"
	case v[0] == '{':
		return "an object"
	case v[0] == '[':
		return "a list"
	case v[0] == 't' || v[0] == 'f':
		return "true or false"
	case v[0] == 'n':
		return "null"
	}
	return "a number"
}

func str(v []byte) (string, error) {
	var s string
	if kind(v) != "a string" || json.Unmarshal(v, &s) != nil {
		return "", bad("want a string, got %s", kind(v))
	}
	return s, nil
}

// keyHint is what an error about a string field adds when the value
// looks like a key, "" otherwise: the error says so instead of quoting
// it.
func keyHint(s string) string {
	for _, prefix := range []string{"hex:", "text:"} {
		if strings.HasPrefix(s, prefix) {
			return fmt.Sprintf(" (the value starts with %q, as a key does)", prefix)
		}
	}
	return ""
}

// name decodes an entry's name: any string but one that looks like a
// key, since a name is printed in every message about its entry.
func name(v []byte) (string, error) {
	s, err := str(v)
	if err != nil {
		return "", err
	}
	if h := keyHint(s); h != "" {
		return "", bad("a name is printed in messages, so it may not look like a key%s", h)
	}
	return s, nil
}

func boolean(v []byte) (bool, error) {
	var b bool
	if kind(v) != "true or false" || json.Unmarshal(v, &b) != nil {
		return false, bad("want true or false, got %s", kind(v))
	}
	return b, nil
}

// integer decodes a whole number in lo..hi; what says what it is.
func integer(v []byte, lo, hi int64, what string) (int64, error) {
	if k := kind(v); k != "a number" {
		return 0, bad("want a number, got %s", k)
	}
	s := string(bytes.TrimSpace(v))
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < lo || n > hi {
		return 0, bad("%s is not %s (%d..%d)", s, what, lo, hi)
	}
	return n, nil
}

// secret decodes "hex:…" or "text:…" of 1..maxLen bytes into a slice of
// its own, unquoting the JSON string into a buffer that it wipes (a Go
// string could not be). Errors never quote the value.
func secret(v []byte, maxLen int) ([]byte, error) {
	if k := kind(v); k != "a string" {
		return nil, bad("want a string, got %s", k)
	}
	s := unquote(v)
	defer clear(s)
	b, err := decodeSecret(s, maxLen)
	if testHook != nil {
		testHook(s, b)
	}
	return b, err
}

// testHook, when a test sets it, sees each key field's unquoted buffer
// and the key decoded from it, to check later that both were wiped.
var testHook func(unquoted, key []byte)

// decodeSecret is secret after the unquoting.
func decodeSecret(s []byte, maxLen int) ([]byte, error) {
	var b []byte
	switch {
	case bytes.HasPrefix(s, []byte("hex:")):
		h := s[len("hex:"):]
		b = make([]byte, len(h)/2)
		if _, err := hex.Decode(b, h); err != nil {
			clear(b)
			var inv hex.InvalidByteError
			if errors.As(err, &inv) {
				return nil, bad("not hex: invalid character at offset %d", bytes.IndexByte(h, byte(inv)))
			}
			return nil, bad("not hex: odd number of digits (%d)", len(h))
		}
	case bytes.HasPrefix(s, []byte("text:")):
		b = bytes.Clone(s[len("text:"):])
	default:
		return nil, bad(`want "hex:…" or "text:…"`)
	}
	if len(b) == 0 || len(b) > maxLen {
		clear(b)
		return nil, bad("%d bytes, want 1..%d", len(b), maxLen)
	}
	return b, nil
}

// peer parses an address (its host prefix) or a prefix whose host bits
// are zero, as Linux takes it; IPv4-mapped ones become IPv4. Its errors
// do not quote the value: a key pasted here must not be printed.
func peer(v []byte) (netip.Prefix, error) {
	s, err := str(v)
	if err != nil {
		return netip.Prefix{}, err
	}
	const want = "not an address or prefix (want e.g. 192.0.2.1, 192.0.2.0/24 or 2001:db8::/32)"
	if !strings.Contains(s, "/") {
		a, err := netip.ParseAddr(s)
		if err == nil && a.Zone() != "" {
			return netip.Prefix{}, bad("not an address or prefix (an address with a zone is not a peer)")
		}
		if err != nil {
			return netip.Prefix{}, bad("%s%s", want, keyHint(s))
		}
		a = a.Unmap()
		return netip.PrefixFrom(a, a.BitLen()), nil
	}
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, bad("%s%s", want, keyHint(s))
	}
	if p.Masked() != p {
		// The suggestion is the prefix the value parsed as: an address,
		// never a key.
		return netip.Prefix{}, bad("the prefix has host bits set (did you mean %v?)", p.Masked())
	}
	if p.Addr().Is4In6() && p.Bits() >= 96 {
		p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
	}
	return p, nil
}

// syntaxError is Parse's error for bytes that are not one JSON value,
// with the line and column encoding/json's scanner stopped at. Its
// message names at most the one character it stopped at.
func syntaxError(src []byte, err error) error {
	var syn *json.SyntaxError
	if !errors.As(err, &syn) {
		return &Error{Err: ErrSyntax, msg: "malformed JSON"}
	}
	msg := syn.Error()
	line, col := position(src, syn.Offset)
	switch {
	case syn.Offset >= int64(len(src)) && strings.HasPrefix(msg, "unexpected end"):
		return &Error{Err: ErrSyntax, msg: "unexpected end of the file"}
	case strings.HasSuffix(msg, "after top-level value"):
		msg = "data after the end of the keys object"
	}
	return &Error{Err: ErrSyntax, msg: fmt.Sprintf("line %d, column %d: %s", line, col, msg)}
}

// unknown is the error for an unknown field name, with the nearest known
// name as a suggestion when there is one close enough (a case or a typo
// away).
func unknown(e *Error, name string, known []string, what string) error {
	if e == nil {
		e = &Error{}
	}
	msg := fmt.Sprintf("unknown %s %q", what, name)
	if k, ok := nearest(name, known); ok {
		msg += fmt.Sprintf(" (did you mean %q?)", k)
	}
	if e.Entry == "" {
		return e.with(name, ErrUnknownField, msg+"; want \"ao\" and/or \"md5\"")
	}
	return e.with(name, ErrUnknownField, msg)
}

// nearest returns the known name closest to name by edit distance
// (ignoring case), if it is at most two edits and less than half the
// name away: "macln" and "MACLEN" give "maclen", "key" gives nothing
// else, "foo" gives nothing.
func nearest(name string, known []string) (string, bool) {
	best, bestD := "", 3
	for _, k := range known {
		d := editDistance(strings.ToLower(name), k)
		if d < bestD && 2*d < max(len(k), len(name)) {
			best, bestD = k, d
		}
	}
	return best, best != ""
}

// editDistance is the Levenshtein distance between a and b, by bytes.
func editDistance(a, b string) int {
	prev, cur := make([]int, len(b)+1), make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			sub := prev[j-1]
			if a[i-1] != b[j-1] {
				sub++
			}
			cur[j] = min(sub, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// notJSON names what a file that cannot be JSON at all looks like, from
// its first bytes; "" when it may be JSON (the parser then says what is
// wrong with it).
func notJSON(b []byte) string {
	t := bytes.TrimLeft(b, " \t\r\n")
	if len(t) == 0 || strings.IndexByte(`{["-0123456789tfn`, t[0]) >= 0 && utf8.Valid(t) {
		return ""
	}
	t = b // a pcapng file starts with "\n\r\r\n"
	// Name the format, never show the bytes: a file of raw key bytes
	// given by mistake must not leak them.
	switch {
	case len(t) >= 4 && slices.Contains([]uint32{0xa1b2c3d4, 0xd4c3b2a1, 0xa1b23c4d, 0x4d3cb2a1}, binary.BigEndian.Uint32(t)):
		return "not a JSON keys file: this is a pcap capture"
	case len(t) >= 4 && binary.BigEndian.Uint32(t) == 0x0a0d0d0a:
		return "not a JSON keys file: this is a pcapng capture"
	case len(t) >= 2 && t[0] == 0x1f && t[1] == 0x8b:
		return "not a JSON keys file: this is gzip-compressed"
	case !utf8.Valid(t):
		return "not a JSON keys file: binary data"
	}
	return "not a JSON keys file: text that does not start with {"
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// position returns the 1-based line and column of the byte before offset
// off, where a json.SyntaxError points.
func position(b []byte, off int64) (line, col int) {
	off = min(max(off, 0), int64(len(b)))
	if off > 0 {
		off-- // the offset is just past the offending byte
	}
	pre := b[:off]
	line = bytes.Count(pre, []byte{'\n'}) + 1
	col = int(off) - bytes.LastIndexByte(pre, '\n')
	return line, col
}

// describe finishes an entry's String: its L3 scope, its key's length
// (never its bytes) and its name in front.
func describe(name, s string, hasIfIndex bool, ifindex, keyLen int) string {
	if hasIfIndex {
		s += fmt.Sprintf(" ifindex %d", ifindex)
	}
	s += fmt.Sprintf(" key [%d bytes]", keyLen)
	if name != "" {
		s = strconv.Quote(name) + " " + s
	}
	return s
}

// defaultMACLen is what an absent or 0 maclen means for alg: 12 (RFC 5926,
// Linux), or the one length the draft's algorithms take (16).
func defaultMACLen(alg *mac.Algorithm) int {
	if n := alg.MACLen(); n != 0 {
		return n
	}
	return keys.DefaultMACLen
}
