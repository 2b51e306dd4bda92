package keychain

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/tcpsig/tcpsig/internal/redact"
	"github.com/tcpsig/tcpsig/keys"
)

// The kinds of error, for errors.Is; every error of this package is an
// [*Error] wrapping one of them.
var (
	// ErrSyntax: the document is not JSON, or a value has the wrong JSON type.
	ErrSyntax = errors.New("keychain: malformed document")
	// ErrModel: the document breaks RFC 8177's or RFC 9648's model.
	ErrModel = errors.New("keychain: the document breaks the model")
	// ErrUnsupported: the document is valid but asks for what tcpsig does
	// not do (accept-key-mismatch, an algorithm TCP cannot use).
	ErrUnsupported = errors.New("keychain: not supported")
	// ErrUnrepresentable: the keys file says what the model cannot.
	ErrUnrepresentable = errors.New("keychain: the model cannot say this")
	// ErrPeers: a chain given peers is missing, or a peer is bad.
	ErrPeers = errors.New("keychain: bad peers")
)

// Error is an error at one place of a document (a YANG data path such as
// /ietf-key-chain:key-chains/key-chain[name='r1']/key[key-id='2']/crypto-algorithm)
// or of a keys file (an entry's label). It never quotes a key.
type Error struct {
	Path string // the data path or entry; "" for the document as a whole
	Err  error  // one of the sentinels
	msg  string
}

// Error is "path: problem".
func (e *Error) Error() string {
	if e.Path == "" {
		return e.msg
	}
	return e.Path + ": " + e.msg
}

// Unwrap returns the kind of error.
func (e *Error) Unwrap() error { return e.Err }

// errorf is an *Error at path.
func errorf(path string, kind error, format string, a ...any) *Error {
	return &Error{Path: path, Err: kind, msg: fmt.Sprintf(format, a...)}
}

// Chain is one key chain: its name, its accept tolerance and its keys in
// document order.
type Chain struct {
	Name      string
	Tolerance time.Duration // accept-tolerance; whole seconds
	Keys      []Key
}

// Key is one key of a chain, in the keys file's terms.
type Key struct {
	ID             uint64        // the chain's key-id
	Lifetime       keys.Lifetime // Tolerance is the chain's
	MD5            bool          // TCP-MD5 (crypto-algorithm md5); else TCP-AO
	Algorithm      string        // TCP-AO: the Linux name, "hmac(sha1)"; "" for TCP-MD5
	Key            []byte        // the key string's bytes
	SendID, RecvID uint8         // TCP-AO's KeyIDs
	ExcludeOptions bool          // include-tcp-options false
}

// String describes k without its key.
func (k Key) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "key %d", k.ID)
	if k.MD5 {
		b.WriteString(" md5")
	} else {
		fmt.Fprintf(&b, " %s send-id %d recv-id %d", k.Algorithm, k.SendID, k.RecvID)
		if k.ExcludeOptions {
			b.WriteString(" exclude-options")
		}
	}
	if k.Lifetime.Scheduled() {
		fmt.Fprintf(&b, " send %v accept %v", k.Lifetime.Send, k.Lifetime.Accept)
	}
	fmt.Fprintf(&b, " key [%d bytes]", len(k.Key))
	return b.String()
}

// GoString is String, so %#v does not print the key either.
func (k Key) GoString() string { return k.String() }

// Format prints String for every verb.
func (k Key) Format(f fmt.State, _ rune) { redact.Format(f, k.String()) }

// MarshalJSON writes String as a JSON string: json.Marshal never writes
// a key.
func (k Key) MarshalJSON() ([]byte, error) { return []byte(fmt.Sprintf("%q", k.String())), nil }

// Wipe zeroes the keys of chains.
func Wipe(chains []Chain) {
	for _, c := range chains {
		for _, k := range c.Keys {
			clear(k.Key)
		}
	}
}

// The path of the parts of a document.
const rootPath = "/ietf-key-chain:key-chains"

func chainPath(name string) string {
	return fmt.Sprintf("%s/key-chain[name=%s]", rootPath, quoteYANG(name))
}

func keyPath(chain string, id string) string {
	return fmt.Sprintf("%s/key[key-id=%s]", chainPath(chain), quoteYANG(id))
}

// quoteYANG quotes a key value in a path: in single quotes, or double
// ones when it holds a single quote.
func quoteYANG(s string) string {
	if strings.Contains(s, "'") {
		return fmt.Sprintf("%q", s)
	}
	return "'" + s + "'"
}

// identities maps each crypto-algorithm identity import takes to the
// keys file's algorithm ("md5" for TCP-MD5). Export writes the first of
// toIdentity's.
var identities = map[string]string{
	"hmac-sha-1":       "hmac(sha1)",
	"hmac-sha-1-12":    "hmac(sha1)",
	"hmac-sha-256":     "hmac(sha256)",
	"hmac-sha-384":     "hmac(sha384)",
	"hmac-sha-512":     "hmac(sha512)",
	"aes-cmac-prf-128": "cmac(aes128)",
	"ietf-tcp:aes-128": "cmac(aes128)",
	"md5":              "md5",
}

// toIdentity is the identity export writes for an algorithm (Linux name).
var toIdentity = map[string]string{
	"hmac(sha1)":   "hmac-sha-1",
	"hmac(sha256)": "hmac-sha-256",
	"hmac(sha384)": "hmac-sha-384",
	"hmac(sha512)": "hmac-sha-512",
	"cmac(aes128)": "ietf-tcp:aes-128",
}

// identity resolves a crypto-algorithm value: RFC 7951 prefixes an
// identity with its module's name, which may be left out for one of the
// leaf's own module (ietf-key-chain).
func identity(v string) (string, bool) {
	v = strings.TrimPrefix(v, "ietf-key-chain:")
	alg, ok := identities[v]
	return alg, ok
}
