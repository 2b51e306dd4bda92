package main

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"slices"
	"strings"

	"github.com/tcpsig/tcpsig/ao"
	"github.com/tcpsig/tcpsig/mac"
)

// The keys file (JSON) lists the TCP-AO MKTs and TCP-MD5 keys configured on
// one or both endpoints of the captured connections, in Linux's terms:
//
//	{"ao":  [{"alg": "hmac(sha1)", "key": "hex:0a0b…", "sndid": 1, "rcvid": 1,
//	          "peer": "192.0.2.0/24", "maclen": 12, "exclude_options": false}],
//	 "md5": [{"peer": "192.0.2.1/32", "key": "text:secret"}]}
//
// An entry is configured on the endpoint whose peer is "peer". Every error
// names the entry and the field, and never shows key material.

// maxMD5KeyLen is Linux's TCP_MD5SIG_MAXKEYLEN.
const maxMD5KeyLen = 80

// aoEntry is one TCP-AO MKT of the keys file.
type aoEntry struct {
	Name string // "ao[i]", or the entry's "name"
	ao.Config
}

// md5Entry is one TCP-MD5 key of the keys file.
type md5Entry struct {
	Name string // "md5[i]", or the entry's "name"
	Peer netip.Prefix
	Key  []byte
}

// keysFile is a parsed keys file.
type keysFile struct {
	AO  []aoEntry
	MD5 []md5Entry
}

// The JSON shapes. Pointers tell a missing field from a zero one.
type aoJSON struct {
	Name           *string `json:"name"`
	Alg            *string `json:"alg"`
	Key            *string `json:"key"`
	SndID          *int    `json:"sndid"`
	RcvID          *int    `json:"rcvid"`
	Peer           *string `json:"peer"`
	MACLen         *int    `json:"maclen"`
	ExcludeOptions *bool   `json:"exclude_options"`
}

type md5JSON struct {
	Name *string `json:"name"`
	Peer *string `json:"peer"`
	Key  *string `json:"key"`
}

type fileJSON struct {
	AO  []json.RawMessage `json:"ao"`
	MD5 []json.RawMessage `json:"md5"`
}

// parseKeys parses and validates a keys file. name is how errors refer to
// the file.
func parseKeys(name string, b []byte) (*keysFile, error) {
	var f fileJSON
	if err := strictDecode(b, &f, "ao", "md5"); err != nil {
		return nil, fmt.Errorf("%s%s", name, jsonError(b, err, "top level"))
	}
	if len(f.AO) == 0 && len(f.MD5) == 0 {
		return nil, fmt.Errorf(`%s: no keys: want "ao" and/or "md5" entries`, name)
	}
	kf := &keysFile{}
	for i, raw := range f.AO {
		e, err := parseAO(raw, i)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		kf.AO = append(kf.AO, e)
	}
	for i, raw := range f.MD5 {
		e, err := parseMD5(raw, i)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		kf.MD5 = append(kf.MD5, e)
	}
	return kf, nil
}

func parseAO(raw json.RawMessage, i int) (aoEntry, error) {
	where := fmt.Sprintf("ao[%d]", i)
	var j aoJSON
	if err := strictDecode(raw, &j, "name", "alg", "key", "sndid", "rcvid", "peer", "maclen", "exclude_options"); err != nil {
		return aoEntry{}, fmt.Errorf("%s%s", where, jsonError(raw, err, ""))
	}
	e := aoEntry{Name: where}
	if j.Name != nil && *j.Name != "" {
		e.Name = *j.Name
		where = fmt.Sprintf("ao[%d] (%q)", i, *j.Name)
	}
	for _, f := range []struct {
		name    string
		missing bool
	}{{"alg", j.Alg == nil}, {"key", j.Key == nil}, {"sndid", j.SndID == nil}, {"rcvid", j.RcvID == nil}, {"peer", j.Peer == nil}} {
		if f.missing {
			return e, fmt.Errorf("%s.%s: missing", where, f.name)
		}
	}
	alg, err := mac.Lookup(*j.Alg)
	if err != nil {
		return e, fmt.Errorf("%s.alg: %v", where, err)
	}
	e.Algorithm = alg.Name()
	if e.Key, err = parseSecret(*j.Key, ao.MaxKeyLen); err != nil {
		return e, fmt.Errorf("%s.key: %v", where, err)
	}
	if alg.IsCMAC() && !alg.ReducesMasterKey() && !alg.KeySizeOK(len(e.Key)) {
		var ok []string
		for n := 1; n <= ao.MaxKeyLen; n++ {
			if alg.KeySizeOK(n) {
				ok = append(ok, fmt.Sprint(n))
			}
		}
		return e, fmt.Errorf("%s.key: %d bytes, %s takes %s", where, len(e.Key), alg, strings.Join(ok, " or "))
	}
	for _, id := range []struct {
		name string
		v    int
		dst  *uint8
	}{{"sndid", *j.SndID, &e.SendID}, {"rcvid", *j.RcvID, &e.RecvID}} {
		if id.v < 0 || id.v > 255 {
			return e, fmt.Errorf("%s.%s: %d is not a KeyID (0..255)", where, id.name, id.v)
		}
		*id.dst = uint8(id.v)
	}
	if e.Peer, err = parsePeer(*j.Peer); err != nil {
		return e, fmt.Errorf("%s.peer: %v", where, err)
	}
	if j.MACLen != nil {
		n := *j.MACLen
		if n < 1 || n > ao.MaxMACLen || n > alg.Size() {
			return e, fmt.Errorf("%s.maclen: %d is not in 1..%d for %s", where, n, min(ao.MaxMACLen, alg.Size()), alg)
		}
		e.MACLen = n
	}
	if j.ExcludeOptions != nil {
		e.ExcludeOptions = *j.ExcludeOptions
	}
	return e, nil
}

func parseMD5(raw json.RawMessage, i int) (md5Entry, error) {
	where := fmt.Sprintf("md5[%d]", i)
	var j md5JSON
	if err := strictDecode(raw, &j, "name", "peer", "key"); err != nil {
		return md5Entry{}, fmt.Errorf("%s%s", where, jsonError(raw, err, ""))
	}
	e := md5Entry{Name: where}
	if j.Name != nil && *j.Name != "" {
		e.Name = *j.Name
		where = fmt.Sprintf("md5[%d] (%q)", i, *j.Name)
	}
	if j.Peer == nil {
		return e, fmt.Errorf("%s.peer: missing", where)
	}
	if j.Key == nil {
		return e, fmt.Errorf("%s.key: missing", where)
	}
	var err error
	if e.Peer, err = parsePeer(*j.Peer); err != nil {
		return e, fmt.Errorf("%s.peer: %v", where, err)
	}
	if e.Key, err = parseSecret(*j.Key, maxMD5KeyLen); err != nil {
		return e, fmt.Errorf("%s.key: %v", where, err)
	}
	return e, nil
}

// parseSecret decodes "hex:…" or "text:…". Errors never quote the value.
func parseSecret(s string, maxLen int) ([]byte, error) {
	var b []byte
	switch {
	case strings.HasPrefix(s, "hex:"):
		h := s[len("hex:"):]
		var err error
		if b, err = hex.DecodeString(h); err != nil {
			var inv hex.InvalidByteError
			if errors.As(err, &inv) {
				return nil, fmt.Errorf("not hex: invalid character at offset %d", strings.IndexByte(h, byte(inv)))
			}
			return nil, fmt.Errorf("not hex: odd number of digits (%d)", len(h))
		}
	case strings.HasPrefix(s, "text:"):
		b = []byte(s[len("text:"):])
	default:
		return nil, errors.New(`want "hex:…" or "text:…"`)
	}
	if len(b) == 0 || len(b) > maxLen {
		return nil, fmt.Errorf("%d bytes, want 1..%d", len(b), maxLen)
	}
	return b, nil
}

// parsePeer parses a prefix, or an address as its host prefix, the way
// Linux takes it: host bits must be zero.
func parsePeer(s string) (netip.Prefix, error) {
	if !strings.Contains(s, "/") {
		a, err := netip.ParseAddr(s)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("%q is not an address or prefix", s)
		}
		a = a.Unmap()
		return netip.PrefixFrom(a, a.BitLen()), nil
	}
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("%q is not an address or prefix", s)
	}
	if p.Addr().Zone() != "" {
		return netip.Prefix{}, fmt.Errorf("%q: zones are not supported", s)
	}
	if p.Masked() != p {
		return netip.Prefix{}, fmt.Errorf("%q has host bits set (did you mean %v?)", s, p.Masked())
	}
	return p, nil
}

// strictDecode decodes one JSON value, refusing trailing data and fields
// other than the given ones: encoding/json would match "sndId" to
// "sndid", and ignore "sndi".
func strictDecode(b []byte, v any, fields ...string) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	var obj map[string]json.RawMessage
	if err := dec.Decode(&obj); err == nil {
		for k := range obj {
			if slices.Contains(fields, k) {
				continue
			}
			for _, f := range fields {
				if strings.EqualFold(f, k) {
					return fmt.Errorf("json: unknown field %q (did you mean %q?)", k, f)
				}
			}
			return fmt.Errorf("json: unknown field %q", k)
		}
	}
	dec = json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}

// jsonError turns a decoding error into ".field: problem" (or ": problem"
// at a position) for one line of output.
func jsonError(b []byte, err error, what string) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		line, col := position(b, syn.Offset)
		return fmt.Sprintf(": line %d, column %d: %s", line, col, strings.TrimPrefix(syn.Error(), "json: "))
	case errors.As(err, &typ):
		if typ.Field == "" {
			return fmt.Sprintf(": want a JSON object, got %s", typ.Value)
		}
		return fmt.Sprintf(".%s: want %s, got %s", typ.Field, jsonType(typ.Type.Kind().String()), typ.Value)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		f := strings.TrimPrefix(err.Error(), "json: unknown field ")
		if what != "" {
			return fmt.Sprintf(": unknown %s field %s", what, f)
		}
		return fmt.Sprintf(": unknown field %s", f)
	case errors.Is(err, io.EOF):
		return ": empty"
	}
	return ": " + strings.TrimPrefix(err.Error(), "json: ")
}

func jsonType(kind string) string {
	switch kind {
	case "int", "uint8", "int64":
		return "a number"
	case "string":
		return "a string"
	case "bool":
		return "true or false"
	case "slice":
		return "a list"
	}
	return kind
}

// position returns the 1-based line and column of the byte before
// offset off, where a json.SyntaxError points.
func position(b []byte, off int64) (line, col int) {
	if off > int64(len(b)) {
		off = int64(len(b))
	}
	if off > 0 {
		off-- // the offset is just past the offending byte
	}
	pre := b[:off]
	line = bytes.Count(pre, []byte{'\n'}) + 1
	col = int(off) - bytes.LastIndexByte(pre, '\n')
	return line, col
}
