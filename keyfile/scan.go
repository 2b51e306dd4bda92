package keyfile

import (
	"encoding/json"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// The keys file is read in place. encoding/json's scanner checks the
// whole file first (json.Unmarshal into discard, which keeps nothing);
// the parser then walks the checked bytes with the functions here, which
// copy nothing. So the only copies of a key that Parse makes are the one
// its entry keeps and the buffer it is unquoted into, which is wiped; a
// json.Decoder, as the parser used before, copies what it reads into
// buffers of its own that no one can wipe.

// discard takes any JSON value and keeps nothing: json.Unmarshal into it
// is json.Valid with the error's offset.
type discard struct{}

func (*discard) UnmarshalJSON([]byte) error { return nil }

// member is one member of an object: its name and its value, in place.
type member struct {
	name string
	v    []byte
}

// skipSpace returns the index of the first byte at or after i of b that
// is not JSON white space.
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// stringEnd returns the index just past the string whose opening quote
// is b[i].
func stringEnd(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(b)
}

// valueEnd returns the index just past the value that starts at b[i],
// in valid JSON.
func valueEnd(b []byte, i int) int {
	depth := 0
	for i < len(b) {
		switch b[i] {
		case '"':
			i = stringEnd(b, i)
		case '{', '[':
			depth++
			i++
		case '}', ']':
			depth--
			i++
		default:
			if depth == 0 { // a number, true, false or null
				for i < len(b) && strings.IndexByte(" \t\r\n,:]}", b[i]) < 0 {
					i++
				}
				return i
			}
			i++
			continue
		}
		if depth <= 0 {
			return i
		}
	}
	return i
}

// members returns the members of the object obj (valid JSON), in order,
// repeated names included.
func members(obj []byte) []member {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return nil
	}
	var ms []member
	for i++; ; {
		i = skipSpace(obj, i)
		if i >= len(obj) || obj[i] == '}' {
			return ms
		}
		if obj[i] == ',' {
			i++
			continue
		}
		end := valueEnd(obj, i)
		if end <= i || obj[i] != '"' {
			return ms
		}
		var name string
		_ = json.Unmarshal(obj[i:end], &name) // a valid string: no error
		i = skipSpace(obj, end)
		if i < len(obj) && obj[i] == ':' {
			i = skipSpace(obj, i+1)
		}
		end = valueEnd(obj, i)
		if end <= i {
			return ms
		}
		ms = append(ms, member{name, obj[i:end]})
		i = end
	}
}

// elements returns the elements of the list arr (valid JSON), in order.
func elements(arr []byte) [][]byte {
	i := skipSpace(arr, 0)
	if i >= len(arr) || arr[i] != '[' {
		return nil
	}
	var es [][]byte
	for i++; ; {
		i = skipSpace(arr, i)
		if i >= len(arr) || arr[i] == ']' {
			return es
		}
		if arr[i] == ',' {
			i++
			continue
		}
		end := valueEnd(arr, i)
		if end <= i {
			return es
		}
		es = append(es, arr[i:end])
		i = end
	}
}

// unquote decodes the JSON string v (valid, quotes included) into a new
// buffer, which the caller wipes, as encoding/json decodes it: escapes,
// surrogate pairs, U+FFFD for a lone surrogate or a byte that is not
// UTF-8. The buffer is sized so that it never grows (a grown slice would
// leave a copy behind).
func unquote(v []byte) []byte {
	if len(v) < 2 {
		return nil
	}
	v = v[1 : len(v)-1]
	n := len(v) // escapes only shrink; a byte that is not UTF-8 grows to 3
	if !utf8.Valid(v) {
		n = 3 * len(v)
	}
	out := make([]byte, 0, n)
	for i := 0; i < len(v); {
		c := v[i]
		switch {
		case c == '\\' && i+1 < len(v):
			e := v[i+1]
			i += 2
			switch e {
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				r := hex4(v[i:])
				i += 4
				if utf16.IsSurrogate(r) {
					r2 := rune(-1)
					if i+1 < len(v) && v[i] == '\\' && v[i+1] == 'u' {
						r2 = hex4(v[i+2:])
					}
					if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
						r = d
						i += 6
					} else {
						r = utf8.RuneError
					}
				}
				out = utf8.AppendRune(out, r)
			default: // '"', '\\', '/'
				out = append(out, e)
			}
		case c < utf8.RuneSelf:
			out = append(out, c)
			i++
		default:
			r, size := utf8.DecodeRune(v[i:])
			out = utf8.AppendRune(out, r)
			i += size
		}
	}
	return out
}

// hex4 is the value of the four hex digits at the start of b; U+FFFD
// when they are not (valid JSON always has them).
func hex4(b []byte) rune {
	if len(b) < 4 {
		return utf8.RuneError
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return utf8.RuneError
		}
		r = r<<4 | rune(c)
	}
	return r
}
