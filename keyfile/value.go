package keyfile

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// The decoders of one field's value. Their errors are valueErrors, which
// Error.wrap places in the entry and field, and never quote the value.

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

// str decodes a JSON string.
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

// boolean decodes true or false.
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
