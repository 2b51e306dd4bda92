package diagnose

import (
	"bytes"
	"encoding/hex"
	"slices"
)

// encoding is a secret as a peer may have read the one written in the
// keys file, and the fix that names the difference (never the bytes).
type encoding struct {
	key []byte // the caller wipes it
	fix string
}

// encodings returns the readings of key that differ from it: trimmed of
// whitespace, with a newline added, its hex digits decoded, its bytes
// written as hex digits, and the "text:" or "hex:" prefix taken as part
// of the secret.
func encodings(key []byte) []encoding {
	var out []encoding
	add := func(k []byte, fix string) {
		if len(k) > 0 && !bytes.Equal(k, key) && !slices.ContainsFunc(out, func(e encoding) bool { return bytes.Equal(e.key, k) }) {
			out = append(out, encoding{k, fix})
		} else {
			clear(k)
		}
	}
	add(bytes.Clone(bytes.TrimSpace(key)), `remove the whitespace or newline at the start or end of "key" (the peer's secret has none)`)
	add(append(bytes.Clone(key), '\n'), `the peer's secret ends in a newline that "key" lacks: remove it on the peer (it was likely read from a file)`)
	add(append(bytes.Clone(key), '\r', '\n'), `the peer's secret ends in a CR LF that "key" lacks: remove it on the peer`)
	if d, ok := hexDigits(key); ok {
		add(d, `write "key" as "hex:" followed by the same digits (the peer reads them as hex, not as text)`)
	}
	add([]byte(hex.EncodeToString(key)), `the peer typed the key's hex digits as text: write them as "text:" on one end, or as "hex:" on both`)
	add(bytes.ToUpper([]byte(hex.EncodeToString(key))), `the peer typed the key's hex digits (upper case) as text: write them as "text:" on one end, or as "hex:" on both`)
	add(append([]byte("text:"), key...), `the peer's secret includes the "text:" prefix: configure the peer without it`)
	add(append([]byte("hex:"), hex.EncodeToString(key)...), `the peer's secret is the "hex:…" string taken as text: configure the peer with the decoded key`)
	return out
}

// hexDigits decodes key when it is an even number of hex digits (an
// optional 0x first).
func hexDigits(key []byte) ([]byte, bool) {
	s := bytes.TrimPrefix(bytes.TrimPrefix(key, []byte("0x")), []byte("0X"))
	if len(s) < 2 || len(s)%2 != 0 {
		return nil, false
	}
	d := make([]byte, len(s)/2)
	if _, err := hex.Decode(d, s); err != nil {
		clear(d)
		return nil, false
	}
	return d, true
}
