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
// ao[3], or ao[3] ("name") when it has a name.
func Label(kind string, i int, name string) string {
	if name == "" {
		return fmt.Sprintf("%s[%d]", kind, i)
	}
	return fmt.Sprintf("%s[%d] (%q)", kind, i, name)
}

// Load reads the keys file at path. A file larger than MaxSize is refused
// before it is read.
func Load(path string) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() && st.Size() > MaxSize {
		return nil, &Error{Err: ErrTooLarge, msg: fmt.Sprintf("%d bytes, more than the %d a keys file may have", st.Size(), MaxSize)}
	}
	return Read(f)
}

// Read reads a keys file from r, reading at most MaxSize+1 bytes.
func Read(r io.Reader) (*File, error) {
	b, err := io.ReadAll(io.LimitReader(r, MaxSize+1))
	if err != nil {
		return nil, err
	}
	return Parse(b)
}

// Parse parses and validates a keys file.
func Parse(b []byte) (*File, error) {
	if len(b) > MaxSize {
		return nil, &Error{Err: ErrTooLarge, msg: fmt.Sprintf("more than the %d bytes a keys file may have", MaxSize)}
	}
	if msg := notJSON(b); msg != "" {
		return nil, &Error{Err: ErrSyntax, msg: msg}
	}
	p := parser{src: b, f: &File{}, aoIDs: map[idKey][]int{}, md5Peers: map[scopeKey]int{}}
	if err := p.file(); err != nil {
		return nil, err
	}
	if len(p.f.AO) == 0 && len(p.f.MD5) == 0 {
		return nil, &Error{Err: ErrEmpty, msg: `no keys: want "ao" and/or "md5" entries`}
	}
	return p.f, nil
}

// String describes the entry without its key.
func (e AO) String() string {
	c := e.Config
	s := fmt.Sprintf("%s peer %v sndid %d rcvid %d maclen %d", c.Algorithm, c.Peer, c.SendID, c.RecvID, c.MACLen)
	if c.ExcludeOptions {
		s += " exclude_options"
	}
	return describe(e.Name, s, c.HasIfIndex, c.IfIndex, len(c.Key))
}

// Format prints String for every verb, so no verb shows the key.
func (e AO) Format(f fmt.State, _ rune) { fmt.Fprint(f, e.String()) }

// String describes the entry without its key.
func (e MD5) String() string {
	c := e.Config
	s := fmt.Sprintf("peer %v", c.Peer)
	return describe(e.Name, s, c.HasIfIndex, c.IfIndex, len(c.Key))
}

// Format prints String for every verb, so no verb shows the key.
func (e MD5) Format(f fmt.State, _ rune) { fmt.Fprint(f, e.String()) }

// String lists the entries, one a line, without their keys.
func (f *File) String() string {
	var b strings.Builder
	for i, e := range f.AO {
		fmt.Fprintf(&b, "ao[%d] %s\n", i, e)
	}
	for i, e := range f.MD5 {
		fmt.Fprintf(&b, "md5[%d] %s\n", i, e)
	}
	return b.String()
}

// Format prints String for every verb, so no verb shows a key.
func (f *File) Format(s fmt.State, _ rune) { fmt.Fprint(s, f.String()) }

// Marshal returns the file as JSON, keys in hex: the one way keys leave
// this package. It refuses a File that Parse would refuse.
func (f *File) Marshal() ([]byte, error) {
	type aoJSON struct {
		Name    string `json:"name,omitempty"`
		Alg     string `json:"alg"`
		Key     string `json:"key"`
		SndID   uint8  `json:"sndid"`
		RcvID   uint8  `json:"rcvid"`
		Peer    string `json:"peer"`
		MACLen  int    `json:"maclen"`
		Exclude bool   `json:"exclude_options"`
		IfIndex *int   `json:"ifindex,omitempty"`
	}
	type md5JSON struct {
		Name    string `json:"name,omitempty"`
		Peer    string `json:"peer"`
		Key     string `json:"key"`
		IfIndex *int   `json:"ifindex,omitempty"`
	}
	var out struct {
		AO  []aoJSON  `json:"ao,omitempty"`
		MD5 []md5JSON `json:"md5,omitempty"`
	}
	ifindex := func(has bool, n int) *int {
		if has {
			return &n
		}
		return nil
	}
	for _, e := range f.AO {
		c := e.Config
		maclen := c.MACLen
		if v, err := c.Validate(); maclen == 0 && err == nil {
			maclen = v.MACLen
		} else if maclen == 0 {
			maclen = keys.DefaultMACLen
		}
		out.AO = append(out.AO, aoJSON{Name: e.Name, Alg: c.Algorithm, Key: "hex:" + hex.EncodeToString(c.Key),
			SndID: c.SendID, RcvID: c.RecvID, Peer: c.Peer.String(), MACLen: maclen, Exclude: c.ExcludeOptions,
			IfIndex: ifindex(c.HasIfIndex, c.IfIndex)})
	}
	for _, e := range f.MD5 {
		c := e.Config
		out.MD5 = append(out.MD5, md5JSON{Name: e.Name, Peer: c.Peer.String(), Key: "hex:" + hex.EncodeToString(c.Key),
			IfIndex: ifindex(c.HasIfIndex, c.IfIndex)})
	}
	b, err := json.MarshalIndent(&out, "", "  ")
	if err != nil {
		return nil, err
	}
	if _, err := Parse(b); err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
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

// file parses the top level: {"ao": [...], "md5": [...]}.
func (p *parser) file() error {
	dec := json.NewDecoder(bytes.NewReader(p.src))
	if err := p.delim(dec, '{', "the file", nil); err != nil {
		return err
	}
	seen := map[string]bool{}
	for dec.More() {
		name, err := p.key(dec, nil)
		if err != nil {
			return err
		}
		if seen[name] {
			return &Error{Field: name, Err: ErrSyntax, msg: "given twice"}
		}
		seen[name] = true
		var entry func(raw json.RawMessage, i int) error
		switch name {
		case "ao":
			entry = p.aoEntry
		case "md5":
			entry = p.md5Entry
		default:
			return unknown(nil, name, []string{"ao", "md5"}, "top-level field")
		}
		if err := p.delim(dec, '[', name, nil); err != nil {
			return err
		}
		for i := 0; dec.More(); i++ {
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				return p.syntax(err, nil)
			}
			if err := entry(raw, i); err != nil {
				return err
			}
		}
		if _, err := dec.Token(); err != nil { // ']'
			return p.syntax(err, nil)
		}
	}
	if _, err := dec.Token(); err != nil { // '}'
		return p.syntax(err, nil)
	}
	if _, err := dec.Token(); err != io.EOF {
		if err != nil {
			return p.syntax(err, nil)
		}
		line, col := position(p.src, dec.InputOffset())
		return &Error{Err: ErrSyntax, msg: fmt.Sprintf("line %d, column %d: data after the end of the keys object", line, col)}
	}
	return nil
}

// entryFields splits one entry's object into its fields, refusing
// unknown and repeated ones.
func (p *parser) entryFields(raw json.RawMessage, e *Error, known []string) (map[string]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := p.delim(dec, '{', "an entry", e); err != nil {
		return nil, err
	}
	fields := map[string]json.RawMessage{}
	for dec.More() {
		name, err := p.key(dec, e)
		if err != nil {
			return nil, err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, p.syntax(err, e)
		}
		if _, dup := fields[name]; dup {
			return nil, e.with(name, ErrSyntax, "given twice")
		}
		if !contains(known, name) {
			return nil, unknown(e, name, known, "field")
		}
		fields[name] = v
	}
	return fields, nil
}

func (p *parser) aoEntry(raw json.RawMessage, i int) error {
	e := &Error{Entry: fmt.Sprintf("ao[%d]", i)}
	fields, err := p.entryFields(raw, e, []string{"name", "alg", "key", "sndid", "rcvid", "peer", "maclen", "exclude_options", "ifindex"})
	if err != nil {
		return err
	}
	var out AO
	if v, ok := fields["name"]; ok {
		if out.Name, err = str(v); err != nil {
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
		return e.with("alg", ErrValue, strings.TrimPrefix(err.Error(), "mac: "))
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

func (p *parser) md5Entry(raw json.RawMessage, i int) error {
	e := &Error{Entry: fmt.Sprintf("md5[%d]", i)}
	fields, err := p.entryFields(raw, e, []string{"name", "peer", "key", "ifindex"})
	if err != nil {
		return err
	}
	var out MD5
	if v, ok := fields["name"]; ok {
		if out.Name, err = str(v); err != nil {
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
func kind(v json.RawMessage) string {
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

func str(v json.RawMessage) (string, error) {
	var s string
	if kind(v) != "a string" || json.Unmarshal(v, &s) != nil {
		return "", bad("want a string, got %s", kind(v))
	}
	return s, nil
}

func boolean(v json.RawMessage) (bool, error) {
	var b bool
	if kind(v) != "true or false" || json.Unmarshal(v, &b) != nil {
		return false, bad("want true or false, got %s", kind(v))
	}
	return b, nil
}

// integer decodes a whole number in lo..hi; what says what it is.
func integer(v json.RawMessage, lo, hi int64, what string) (int64, error) {
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

// secret decodes "hex:…" or "text:…" of 1..maxLen bytes. Errors never
// quote the value.
func secret(v json.RawMessage, maxLen int) ([]byte, error) {
	s, err := str(v)
	if err != nil {
		return nil, err
	}
	var b []byte
	switch {
	case strings.HasPrefix(s, "hex:"):
		h := s[len("hex:"):]
		if b, err = hex.DecodeString(h); err != nil {
			var inv hex.InvalidByteError
			if errors.As(err, &inv) {
				return nil, bad("not hex: invalid character at offset %d", strings.IndexByte(h, byte(inv)))
			}
			return nil, bad("not hex: odd number of digits (%d)", len(h))
		}
	case strings.HasPrefix(s, "text:"):
		b = []byte(s[len("text:"):])
	default:
		return nil, bad(`want "hex:…" or "text:…"`)
	}
	if len(b) == 0 || len(b) > maxLen {
		return nil, bad("%d bytes, want 1..%d", len(b), maxLen)
	}
	return b, nil
}

// peer parses an address (its host prefix) or a prefix whose host bits
// are zero, as Linux takes it; IPv4-mapped ones become IPv4.
func peer(v json.RawMessage) (netip.Prefix, error) {
	s, err := str(v)
	if err != nil {
		return netip.Prefix{}, err
	}
	if !strings.Contains(s, "/") {
		a, err := netip.ParseAddr(s)
		if err != nil || a.Zone() != "" {
			return netip.Prefix{}, bad("%q is not an address or prefix", s)
		}
		a = a.Unmap()
		return netip.PrefixFrom(a, a.BitLen()), nil
	}
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, bad("%q is not an address or prefix", s)
	}
	if p.Masked() != p {
		return netip.Prefix{}, bad("%q has host bits set (did you mean %v?)", s, p.Masked())
	}
	if p.Addr().Is4In6() && p.Bits() >= 96 {
		p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
	}
	return p, nil
}

// delim reads the opening delimiter d of a value called what.
func (p *parser) delim(dec *json.Decoder, d json.Delim, what string, e *Error) error {
	start := dec.InputOffset()
	tok, err := dec.Token()
	if err != nil {
		return p.syntax(err, e)
	}
	if tok == d {
		return nil
	}
	want := "a JSON object"
	if d == '[' {
		want = "a list"
	}
	got := "a number"
	switch t := tok.(type) {
	case json.Delim:
		got = map[json.Delim]string{'{': "an object", '[': "a list"}[t]
	case string:
		got = "a string"
	case bool:
		got = "true or false"
	case nil:
		got = "null"
	}
	if e != nil {
		return e.with("", ErrSyntax, fmt.Sprintf("want %s, got %s", want, got))
	}
	if d == '[' {
		return &Error{Field: what, Err: ErrSyntax, msg: fmt.Sprintf("want a list, got %s", got)}
	}
	line, col := position(p.src, start+1)
	return &Error{Err: ErrSyntax, msg: fmt.Sprintf("line %d, column %d: want %s, got %s", line, col, want, got)}
}

// key reads an object member's name.
func (p *parser) key(dec *json.Decoder, e *Error) (string, error) {
	tok, err := dec.Token()
	if err != nil {
		return "", p.syntax(err, e)
	}
	s, _ := tok.(string) // the decoder only yields strings here
	return s, nil
}

// syntax turns a decoding error into an *Error with a line and column of
// the file where it has one.
func (p *parser) syntax(err error, e *Error) error {
	if e == nil {
		e = &Error{}
	}
	var syn *json.SyntaxError
	switch {
	case errors.As(err, &syn):
		// Offsets inside an entry are relative to the entry; entries are
		// decoded from the file first, so syntax errors arise at file level.
		line, col := position(p.src, syn.Offset)
		return e.with("", ErrSyntax, fmt.Sprintf("line %d, column %d: %s", line, col, strings.TrimPrefix(syn.Error(), "json: ")))
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return e.with("", ErrSyntax, "unexpected end of the file")
	}
	return e.with("", ErrSyntax, strings.TrimPrefix(err.Error(), "json: "))
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
