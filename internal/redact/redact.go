// Package redact is how tcpsig prints a value that holds key bytes: the
// value's own description with Marker where the bytes would be, for every
// fmt verb (Format), in JSON (Key) and in slog records (Attr), so that no
// type writes its own redaction. Leak is the test side: every form a key
// could take in printed output, searched for.
package redact

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
)

// Marker stands where key bytes would be printed.
const Marker = "[redacted]"

// Format writes s, a description without key bytes, whatever the verb,
// flags and width: the body of a fmt.Formatter, so that no verb (%x, %d,
// %#v) reaches the fields that hold a key.
func Format(f fmt.State, s string) {
	if f != nil {
		io.WriteString(f, s)
	}
}

// Key is what JSON and slog show for a key: Marker, or "" for none (an
// empty key is a mistake worth seeing, and shows nothing).
func Key(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return Marker
}

// Attr is the slog attribute key=Key(b).
func Attr(b []byte) slog.Attr { return slog.String("key", Key(b)) }

// Leak returns the first form of key that out contains, "" when none:
// the bytes themselves, hex (lower, upper, spaced as % x prints), base64
// (standard and URL alphabets, padded or not), Go-quoted, and the lists
// fmt prints for a []byte (%v's "1 2 3", %#v's "0x1, 0x2"), for the whole
// key and for its first 8 bytes. For tests: pick a key whose forms hold
// letters and are long enough not to turn up by chance in other output.
func Leak(out string, key []byte) string {
	if len(key) == 0 {
		return ""
	}
	for _, k := range [][]byte{key, key[:min(len(key), 8)]} {
		for _, f := range forms(k) {
			if f != "" && strings.Contains(out, f) {
				return f
			}
		}
	}
	return ""
}

// forms lists the printed forms of b.
func forms(b []byte) []string {
	v := fmt.Sprint(b)
	gv := fmt.Sprintf("%#v", b)
	q := strconv.Quote(string(b))
	fs := []string{
		string(b),
		hex.EncodeToString(b),
		strings.ToUpper(hex.EncodeToString(b)),
		fmt.Sprintf("% x", b),
		fmt.Sprintf("% X", b),
		base64.StdEncoding.EncodeToString(b),
		base64.URLEncoding.EncodeToString(b),
		base64.RawStdEncoding.EncodeToString(b),
		base64.RawURLEncoding.EncodeToString(b),
		q[1 : len(q)-1],
		v[1 : len(v)-1], // "84 79 80 …"
	}
	if i, j := strings.Index(gv, "{"), strings.LastIndex(gv, "}"); i >= 0 && j > i {
		fs = append(fs, gv[i+1:j]) // "0x54, 0x4f, …"
	}
	// A base64 of a few bytes ends in a partial quantum that depends on
	// what follows it; its first whole quanta do not.
	if n := len(b) / 3 * 4; n > 0 {
		fs = append(fs, base64.StdEncoding.EncodeToString(b)[:n], base64.URLEncoding.EncodeToString(b)[:n])
	}
	return fs
}
