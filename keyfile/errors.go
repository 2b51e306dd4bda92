package keyfile

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/tcpsig/tcpsig/keys"
)

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
	// ErrNoCause is what an [Error] without a kind (a zero or nil one,
	// which this package never returns) unwraps to: keys.ErrNoCause.
	ErrNoCause = keys.ErrNoCause
)

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
// file as a whole; a nil *Error says so.
func (e *Error) Error() string {
	if e == nil {
		return "keyfile: nil *Error"
	}
	where := e.Entry
	if e.Field != "" && e.Err != ErrUnknownField { // that message quotes the field
		where = strings.TrimPrefix(where+"."+e.Field, ".")
	}
	msg := e.msg
	if msg == "" { // an Error this package did not make
		msg = e.Unwrap().Error()
	}
	if where == "" {
		return msg
	}
	return where + ": " + msg
}

// Unwrap returns the kind of error; [ErrNoCause] for an Error without
// one (a zero or nil *Error).
func (e *Error) Unwrap() error {
	if e == nil || e.Err == nil {
		return ErrNoCause
	}
	return e.Err
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

// Error is the message, without the entry and field.
func (v valueError) Error() string { return v.msg }

// bad is a valueError of kind ErrValue.
func bad(format string, a ...any) error {
	return valueError{ErrValue, fmt.Sprintf(format, a...)}
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
