package keyfile

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tcpsig/tcpsig/internal/redact"
	"github.com/tcpsig/tcpsig/keys"
)

// Printing a File or an entry shows no key: String, GoString and Format
// (every fmt verb) give its description with the key's length, LogValue
// (slog) and MarshalJSON (json.Marshal) its fields with the key as
// "[redacted]". Marshal alone writes keys.

// String describes the entry without its key.
func (e AO) String() string {
	c := e.Config
	s := fmt.Sprintf("%s peer %v sndid %d rcvid %d maclen %d", c.Algorithm, c.Peer, c.SendID, c.RecvID, c.MACLen)
	if c.ExcludeOptions {
		s += " exclude_options"
	}
	return describe(e.Name, s+boundTo(c.HasIfIndex, c.IfIndex)+scheduled(c.Lifetime), len(c.Key))
}

// GoString is String, so %#v does not print the key either.
func (e AO) GoString() string { return e.String() }

// Format prints String for every verb, so no verb shows the key.
func (e AO) Format(f fmt.State, _ rune) { redact.Format(f, e.String()) }

// LogValue is the entry for log/slog: its name and its Config's group,
// the key as [redacted].
func (e AO) LogValue() slog.Value { return named(e.Name, e.Config.LogValue()) }

// MarshalJSON writes the entry as the keys file has it, the key as
// "[redacted]": json.Marshal never writes a key (Marshal does).
func (e AO) MarshalJSON() ([]byte, error) {
	var w jsonOut
	w.ao(e, "")
	return w.b, nil
}

// String describes the entry without its key.
func (e MD5) String() string {
	c := e.Config
	s := fmt.Sprintf("peer %v", c.Peer)
	return describe(e.Name, s+boundTo(c.HasIfIndex, c.IfIndex)+scheduled(c.Lifetime), len(c.Key))
}

// GoString is String, so %#v does not print the key either.
func (e MD5) GoString() string { return e.String() }

// Format prints String for every verb, so no verb shows the key.
func (e MD5) Format(f fmt.State, _ rune) { redact.Format(f, e.String()) }

// LogValue is the entry for log/slog: its name and its Config's group,
// the key as [redacted].
func (e MD5) LogValue() slog.Value { return named(e.Name, e.Config.LogValue()) }

// MarshalJSON writes the entry as the keys file has it, the key as
// "[redacted]".
func (e MD5) MarshalJSON() ([]byte, error) {
	var w jsonOut
	w.md5(e, "")
	return w.b, nil
}

// String lists the entries, one a line, without their keys.
func (f File) String() string {
	var b strings.Builder
	for i, e := range f.AO {
		fmt.Fprintf(&b, "ao[%d] %s\n", i, e)
	}
	for i, e := range f.MD5 {
		fmt.Fprintf(&b, "md5[%d] %s\n", i, e)
	}
	return b.String()
}

// GoString is String, so %#v does not print a key either.
func (f File) GoString() string { return f.String() }

// Format prints String for every verb, so no verb shows a key.
func (f File) Format(s fmt.State, _ rune) { redact.Format(s, f.String()) }

// LogValue is the file for log/slog: a group per entry (ao[0], md5[0]),
// keys as [redacted].
func (f File) LogValue() slog.Value {
	attrs := make([]slog.Attr, 0, len(f.AO)+len(f.MD5))
	for i, e := range f.AO {
		attrs = append(attrs, slog.Attr{Key: "ao[" + strconv.Itoa(i) + "]", Value: e.LogValue()})
	}
	for i, e := range f.MD5 {
		attrs = append(attrs, slog.Attr{Key: "md5[" + strconv.Itoa(i) + "]", Value: e.LogValue()})
	}
	return slog.GroupValue(attrs...)
}

// MarshalJSON writes the file in its own format, keys as "[redacted]",
// which Parse refuses: json.Marshal never writes a key, and what it
// writes cannot pass for a keys file.
func (f File) MarshalJSON() ([]byte, error) {
	var w jsonOut
	w.file(&f)
	return w.b, nil
}

// Marshal returns the file as JSON, keys in hex: the one way keys leave
// this package. It refuses a File that Parse would refuse. The buffers it
// outgrows on the way are wiped; the result is the caller's to wipe.
func (f *File) Marshal() ([]byte, error) {
	if f == nil {
		f = &File{}
	}
	if err := f.checkWritable(); err != nil {
		return nil, err
	}
	w := jsonOut{keys: true}
	w.file(f)
	w.raw("\n")
	g, err := Parse(w.b)
	g.Wipe()
	if err != nil {
		clear(w.b)
		return nil, err
	}
	return w.b, nil
}

// named puts name, when there is one, in front of a Config's group.
func named(name string, v slog.Value) slog.Value {
	if name == "" {
		return v
	}
	return slog.GroupValue(append([]slog.Attr{slog.String("name", name)}, v.Group()...)...)
}

// jsonOut writes the keys file's JSON, indented as json.MarshalIndent
// would with two spaces. With keys it writes each key in hex, and wipes
// every buffer it outgrows; without, it writes redact.Key.
type jsonOut struct {
	b    []byte
	keys bool
	tol  time.Duration // the file's accept tolerance: an entry's is written when it differs
}

// raw appends s as they are.
func (w *jsonOut) raw(s ...string) {
	for _, x := range s {
		w.grow(len(x))
		w.b = append(w.b, x...)
	}
}

// grow makes room for n more bytes, wiping the buffer it leaves.
func (w *jsonOut) grow(n int) {
	if len(w.b)+n <= cap(w.b) {
		return
	}
	b := make([]byte, len(w.b), 2*cap(w.b)+n+256)
	copy(b, w.b)
	clear(w.b)
	w.b = b
}

// str appends s as a JSON string: never a key.
func (w *jsonOut) str(s string) {
	q, _ := json.Marshal(s) // a string always marshals
	w.raw(string(q))
}

// key appends k: "hex:…" (or "text:…" with text, when k is UTF-8) with
// keys, else the redaction.
func (w *jsonOut) key(k []byte, text bool) {
	if !w.keys {
		w.str(redact.Key(k))
		return
	}
	if text && utf8.Valid(k) {
		w.textKey(k)
		return
	}
	w.grow(len(`"hex:"`) + hex.EncodedLen(len(k)))
	w.b = append(w.b, `"hex:`...)
	w.b = hex.AppendEncode(w.b, k)
	w.b = append(w.b, '"')
}

// textKey appends "text:…", k escaped as JSON needs, straight into the
// buffer (no string copy of the key).
func (w *jsonOut) textKey(k []byte) {
	const hexDigits = "0123456789abcdef"
	w.grow(len(`"text:"`) + 6*len(k))
	w.b = append(w.b, `"text:`...)
	for _, c := range k {
		switch {
		case c == '"' || c == '\\':
			w.b = append(w.b, '\\', c)
		case c < 0x20 || c == 0x7f:
			w.b = append(w.b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&15])
		default:
			w.b = append(w.b, c)
		}
	}
	w.b = append(w.b, '"')
}

// field starts the member called name of an object at indent; first says
// whether it is the object's first.
func (w *jsonOut) field(indent, name string, first bool) {
	if !first {
		w.raw(",")
	}
	w.raw("\n", indent, "  \"", name, "\": ")
}

// ao writes one "ao" entry at indent.
func (w *jsonOut) ao(e AO, indent string) {
	c := e.Config
	maclen := c.MACLen
	if v, err := c.Validate(); maclen == 0 && err == nil {
		maclen = v.MACLen
	} else if maclen == 0 {
		maclen = keys.DefaultMACLen
	}
	w.raw("{")
	first := e.Name == ""
	if !first {
		w.field(indent, "name", true)
		w.str(e.Name)
	}
	w.field(indent, "alg", first)
	w.str(c.Algorithm)
	w.field(indent, "key", false)
	w.key(c.Key, e.Text)
	w.field(indent, "sndid", false)
	w.raw(strconv.Itoa(int(c.SendID)))
	w.field(indent, "rcvid", false)
	w.raw(strconv.Itoa(int(c.RecvID)))
	w.field(indent, "peer", false)
	w.str(c.Peer.String())
	w.field(indent, "maclen", false)
	w.raw(strconv.Itoa(maclen))
	w.field(indent, "exclude_options", false)
	w.raw(strconv.FormatBool(c.ExcludeOptions))
	if c.HasIfIndex {
		w.field(indent, "ifindex", false)
		w.raw(strconv.Itoa(c.IfIndex))
	}
	w.lifetime(c.Lifetime, indent)
	w.raw("\n", indent, "}")
}

// lifetime writes an entry's lifetime fields, none for a key without
// one: "lifetime" when the send and accept lifetimes are the same, else
// each that is set, then "accept_tolerance" when it is not the file's.
func (w *jsonOut) lifetime(l keys.Lifetime, indent string) {
	win := func(name string, x keys.Window) {
		w.field(indent, name, false)
		w.raw("{")
		if !x.Start.IsZero() {
			w.raw(`"start": "`, x.Start.UTC().Format(timeLayout), `"`)
		}
		if !x.End.IsZero() {
			if !x.Start.IsZero() {
				w.raw(", ")
			}
			w.raw(`"end": "`, x.End.UTC().Format(timeLayout), `"`)
		}
		w.raw("}")
	}
	switch {
	case sameWindow(l.Send, l.Accept) && !l.Send.IsZero():
		win("lifetime", l.Send)
	default:
		if !l.Send.IsZero() {
			win("send_lifetime", l.Send)
		}
		if !l.Accept.IsZero() {
			win("accept_lifetime", l.Accept)
		}
	}
	if l.Tolerance != w.tol {
		w.field(indent, "accept_tolerance", false)
		w.raw(strconv.FormatInt(int64(l.Tolerance/time.Second), 10))
	}
}

// md5 writes one "md5" entry at indent.
func (w *jsonOut) md5(e MD5, indent string) {
	c := e.Config
	w.raw("{")
	first := e.Name == ""
	if !first {
		w.field(indent, "name", true)
		w.str(e.Name)
	}
	w.field(indent, "peer", first)
	w.str(c.Peer.String())
	w.field(indent, "key", false)
	w.key(c.Key, e.Text)
	if c.HasIfIndex {
		w.field(indent, "ifindex", false)
		w.raw(strconv.Itoa(c.IfIndex))
	}
	w.lifetime(c.Lifetime, indent)
	w.raw("\n", indent, "}")
}

// file writes the whole file; a kind with no entries is left out.
func (w *jsonOut) file(f *File) {
	w.raw("{")
	n := 0
	for _, s := range []struct {
		name string
		d    time.Duration
	}{{"accept_tolerance", f.AcceptTolerance}, {"clock_skew", f.ClockSkew}} {
		if s.d != 0 {
			if n > 0 {
				w.raw(",")
			}
			w.raw("\n  \"", s.name, "\": ", strconv.FormatInt(int64(s.d/time.Second), 10))
			n++
		}
	}
	w.tol = f.AcceptTolerance
	if len(f.AO) > 0 {
		if n > 0 {
			w.raw(",")
		}
		w.raw("\n  \"ao\": [")
		for i, e := range f.AO {
			if i > 0 {
				w.raw(",")
			}
			w.raw("\n    ")
			w.ao(e, "    ")
		}
		w.raw("\n  ]")
		n++
	}
	if len(f.MD5) > 0 {
		if n > 0 {
			w.raw(",")
		}
		w.raw("\n  \"md5\": [")
		for i, e := range f.MD5 {
			if i > 0 {
				w.raw(",")
			}
			w.raw("\n    ")
			w.md5(e, "    ")
		}
		w.raw("\n  ]")
		n++
	}
	if n > 0 {
		w.raw("\n")
	}
	w.raw("}")
}

// boundTo is the L3 scope in an entry's String: " ifindex N" when the
// entry is bound to one, "" when not.
func boundTo(hasIfIndex bool, ifindex int) string {
	if !hasIfIndex {
		return ""
	}
	return fmt.Sprintf(" ifindex %d", ifindex)
}

// sameWindow reports whether a and b are the same moments.
func sameWindow(a, b keys.Window) bool { return a.Start.Equal(b.Start) && a.End.Equal(b.End) }

// scheduled is the lifetime in an entry's String: "" for a key without
// one, so such an entry prints as before lifetimes.
func scheduled(l keys.Lifetime) string {
	if !l.Scheduled() {
		return ""
	}
	return " send " + l.Send.String() + " accept " + l.Accept.String() + " tolerance " + l.Tolerance.String()
}

// describe finishes an entry's String: its key's length (never its
// bytes) and its name in front.
func describe(name, s string, keyLen int) string {
	s += fmt.Sprintf(" key [%d bytes]", keyLen)
	if name != "" {
		s = strconv.Quote(name) + " " + s
	}
	return s
}
