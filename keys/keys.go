package keys

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/netip"

	"github.com/tcpsig/tcpsig/internal/redact"
	"github.com/tcpsig/tcpsig/mac"
)

// Limits Linux enforces (include/uapi/linux/tcp.h, tcp_ao_add_cmd,
// tcp_v4_parse_md5_keys).
const (
	// MaxKeyLen is the longest master key or TCP-MD5 key
	// (TCP_AO_MAXKEYLEN, TCP_MD5SIG_MAXKEYLEN).
	MaxKeyLen = mac.MaxKeySize
	// DefaultMACLen is the MAC length of an MKT whose MACLen is 0 and
	// whose algorithm allows more than one: RFC 5926 §3.2's 96 bits,
	// Linux's default.
	DefaultMACLen = 12
	// MaxMACLen is the longest MAC whose option still fits a SYN that
	// carries MSS, timestamps and window scale: round_up(4+maclen, 4) ≤ 20.
	MaxMACLen = 16
)

// Errors of validation, with the errno Linux returns for the same case.
var (
	ErrInvalid    = errors.New("keys: invalid")                                      // EINVAL, as "keys: invalid MKT: …" or "keys: invalid TCP-MD5 key: …"
	ErrMACTooLong = errors.New("keys: MAC length does not fit the SYN option space") // EMSGSIZE
)

// AO describes a TCP-AO MKT (RFC 5925 §3.1) as Linux's TCP_AO_ADD_KEY
// takes it.
type AO struct {
	Peer           netip.Prefix // the peer's address prefix; /32 or /128 for one host; 0.0.0.0/0 or ::/0 for any
	SendID, RecvID uint8        // KeyID sent, KeyID expected on receive
	Algorithm      string       // Linux name, e.g. "hmac(sha1)", "cmac(aes128)", or RFC 5926 "HMAC-SHA-1-96"
	Key            []byte       // master key, 1..MaxKeyLen bytes; a keyring copies it
	MACLen         int          // 0 means the algorithm's default: DefaultMACLen, or the one length it allows
	ExcludeOptions bool         // TCP_AO_KEYF_EXCLUDE_OPT: options other than TCP-AO are not covered
	IfIndex        int          // L3 (VRF) interface index; with HasIfIndex the MKT matches only that L3 domain
	HasIfIndex     bool         // TCP_AO_KEYF_IFINDEX
	// Lifetime is the MKT's schedule (RFC 8177): the zero Lifetime, as
	// before lifetimes, signs and verifies always.
	Lifetime Lifetime `json:",omitzero"`
}

// Validate checks c as Linux's TCP_AO_ADD_KEY does, and returns it as a
// keyring holds it: MACLen 0 made the algorithm's default, an IPv4-mapped prefix of
// /96 or longer made the IPv4 prefix it maps, Algorithm its Linux name.
// Errors wrap [ErrInvalid] or [ErrMACTooLong].
func (c AO) Validate() (AO, error) {
	alg, err := mac.Lookup(c.Algorithm)
	if err != nil {
		// Not mac's message: it quotes the name, which may be a key
		// pasted into the wrong field.
		return AO{}, fmt.Errorf("%w MKT: %w (see mac.Names)", ErrInvalid, mac.ErrUnknownAlgorithm)
	}
	c.Algorithm = alg.Name()
	if len(c.Key) == 0 || len(c.Key) > MaxKeyLen {
		return AO{}, fmt.Errorf("%w MKT: key length %d not in 1..%d", ErrInvalid, len(c.Key), MaxKeyLen)
	}
	if err := alg.CheckMasterKey(len(c.Key)); err != nil {
		return AO{}, fmt.Errorf("%w MKT: %w", ErrInvalid, err)
	}
	// RFC 5926 §3.1.1.2: cmac(aes128) reduces any other master key to
	// 16 bytes; every other algorithm keys its KDF with the key itself.
	if !alg.ReducesMasterKey() && !alg.KeySizeOK(len(c.Key)) {
		return AO{}, fmt.Errorf("%w MKT: %s does not take a %d-byte master key", ErrInvalid, alg, len(c.Key))
	}
	if c.MACLen == 0 {
		c.MACLen = DefaultMACLen
		if n := alg.MACLen(); n != 0 {
			c.MACLen = n
		}
	}
	if n := alg.MACLen(); n != 0 && c.MACLen != n {
		return AO{}, fmt.Errorf("%w MKT: %w", ErrInvalid, alg.CheckMACLen(c.MACLen))
	}
	if c.MACLen < 0 || c.MACLen > MaxMACLen {
		return AO{}, fmt.Errorf("%w: maclen %d", ErrMACTooLong, c.MACLen)
	}
	if c.MACLen > alg.Size() {
		return AO{}, fmt.Errorf("%w MKT: maclen %d exceeds the %d-byte digest of %s", ErrInvalid, c.MACLen, alg.Size(), alg)
	}
	if !c.Peer.IsValid() {
		return AO{}, fmt.Errorf("%w MKT: peer prefix %v", ErrInvalid, c.Peer)
	}
	peer := c.Peer
	if peer.Addr().Is4In6() && peer.Bits() >= 96 {
		peer = netip.PrefixFrom(peer.Addr().Unmap(), peer.Bits()-96)
	}
	if peer.Masked() != peer {
		return AO{}, fmt.Errorf("%w MKT: peer prefix %v has host bits set", ErrInvalid, c.Peer)
	}
	c.Peer = peer
	if c.IfIndex != 0 && !c.HasIfIndex {
		return AO{}, fmt.Errorf("%w MKT: ifindex without HasIfIndex", ErrInvalid)
	}
	if err := c.Lifetime.Validate(); err != nil {
		return AO{}, fmt.Errorf("%w MKT: %w", ErrInvalid, err)
	}
	return c, nil
}

// Clashes reports whether c and o may not be MKTs of one keyring (RFC
// 5925 §3.1: KeyIDs must not overlap where connection identifiers do;
// Linux's tcp_ao_add_cmd refuses with EEXIST): peers that overlap, in L3
// domains that overlap (an MKT bound to none matches every domain), with
// the same SendID or the same RecvID. Both are as Validate returns them.
func (c AO) Clashes(o AO) bool {
	return c.Peer.Overlaps(o.Peer) && (c.SendID == o.SendID || c.RecvID == o.RecvID) &&
		(!c.HasIfIndex || !o.HasIfIndex || c.IfIndex == o.IfIndex)
}

// String describes c without its key.
func (c AO) String() string {
	return fmt.Sprintf("keys.AO{peer %v, SendID %d, RecvID %d, %s, maclen %d, exclude %v, ifindex %d/%v%s, key %s}",
		c.Peer, c.SendID, c.RecvID, c.Algorithm, c.MACLen, c.ExcludeOptions, c.IfIndex, c.HasIfIndex, lifetimeString(c.Lifetime), redact.Marker)
}

// lifetimeString is a lifetime in a configuration's String: "" for the
// zero Lifetime, so a configuration without one prints as before.
func lifetimeString(l Lifetime) string {
	if l.IsZero() {
		return ""
	}
	return ", " + l.String()
}

// GoString is String, so %#v does not print the key either.
func (c AO) GoString() string { return c.String() }

// Format prints String for every verb, %x included.
func (c AO) Format(f fmt.State, _ rune) { redact.Format(f, c.String()) }

// MarshalJSON writes c's fields under their Go names, the key as
// "[redacted]" ("" for none): a configuration never leaves the process
// with its key through JSON (slog's JSON handler included).
func (c AO) MarshalJSON() ([]byte, error) {
	type fields AO // c's fields without its methods
	return json.Marshal(struct {
		fields
		Key string
	}{fields(c), redact.Key(c.Key)})
}

// LogValue is c for log/slog, as a group (peer, sendid, recvid, alg,
// maclen, exclude_options, ifindex when bound, key=[redacted]).
func (c AO) LogValue() slog.Value {
	attrs := []slog.Attr{slog.String("peer", c.Peer.String()), slog.Int("sendid", int(c.SendID)), slog.Int("recvid", int(c.RecvID)),
		slog.String("alg", c.Algorithm), slog.Int("maclen", c.MACLen), slog.Bool("exclude_options", c.ExcludeOptions)}
	if c.HasIfIndex {
		attrs = append(attrs, slog.Int("ifindex", c.IfIndex))
	}
	attrs = append(attrs, c.Lifetime.logAttrs()...)
	return slog.GroupValue(append(attrs, redact.Attr(c.Key))...)
}

// MD5 describes a TCP-MD5 key (RFC 2385) as Linux's TCP_MD5SIG_EXT takes
// it.
type MD5 struct {
	// Peer is the peer's address prefix: /32 or /128 for one host (plain
	// TCP_MD5SIG), shorter for TCP_MD5SIG_FLAG_PREFIX. A prefix with host
	// bits set is refused, as for an MKT (Linux would ignore them). An
	// IPv4-mapped IPv6 prefix of length 96 or more is the IPv4 prefix it
	// maps; a shorter one is refused.
	Peer netip.Prefix
	// Key is the secret, 1 to MaxKeyLen bytes. A keyring copies it.
	Key []byte
	// IfIndex is the L3 domain (the ifindex of a VRF master device, 0
	// for the default VRF) the key is bound to when HasIfIndex is set
	// (TCP_MD5SIG_FLAG_IFINDEX). A bound key matches only segments of
	// that domain; bound to a VRF (IfIndex > 0) it wins over every key
	// that is not, whatever the prefix lengths. Bound to 0 it competes
	// with unbound keys by prefix length, as in Linux (both have
	// l3index 0 there).
	IfIndex    int
	HasIfIndex bool
	// Lifetime is the key's schedule (RFC 8177): the zero Lifetime, as
	// before lifetimes, signs and verifies always.
	Lifetime Lifetime `json:",omitzero"`
}

// Validate checks c as Linux's tcp_v4_parse_md5_keys and
// tcp_v6_parse_md5_keys do, and returns it as a keyring holds it (an
// IPv4-mapped prefix made IPv4). Errors wrap [ErrInvalid].
func (c MD5) Validate() (MD5, error) {
	if len(c.Key) == 0 || len(c.Key) > MaxKeyLen {
		return MD5{}, fmt.Errorf("%w TCP-MD5 key: key length %d not in 1..%d", ErrInvalid, len(c.Key), MaxKeyLen)
	}
	p := c.Peer
	if !p.IsValid() {
		return MD5{}, fmt.Errorf("%w TCP-MD5 key: peer prefix %v", ErrInvalid, p)
	}
	if a := p.Addr(); a.Is4In6() {
		if p.Bits() < 96 {
			return MD5{}, fmt.Errorf("%w TCP-MD5 key: IPv4-mapped peer prefix %v shorter than /96", ErrInvalid, p)
		}
		p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
	}
	if p.Masked() != p {
		return MD5{}, fmt.Errorf("%w TCP-MD5 key: peer prefix %v has host bits set", ErrInvalid, p)
	}
	c.Peer = p
	if c.IfIndex < 0 || c.IfIndex > math.MaxInt32 || (c.IfIndex != 0 && !c.HasIfIndex) {
		return MD5{}, fmt.Errorf("%w TCP-MD5 key: ifindex %d (bound %v)", ErrInvalid, c.IfIndex, c.HasIfIndex)
	}
	if err := c.Lifetime.Validate(); err != nil {
		return MD5{}, fmt.Errorf("%w TCP-MD5 key: %w", ErrInvalid, err)
	}
	return c, nil
}

// String describes c without its key.
func (c MD5) String() string {
	return fmt.Sprintf("keys.MD5{peer %v, ifindex %d/%v%s, %d-byte key %s}", c.Peer, c.IfIndex, c.HasIfIndex, lifetimeString(c.Lifetime), len(c.Key), redact.Marker)
}

// GoString is String, so %#v does not print the key either.
func (c MD5) GoString() string { return c.String() }

// Format prints String for every verb, %x included.
func (c MD5) Format(f fmt.State, _ rune) { redact.Format(f, c.String()) }

// MarshalJSON writes c's fields under their Go names, the key as
// "[redacted]" ("" for none), as AO's does.
func (c MD5) MarshalJSON() ([]byte, error) {
	type fields MD5 // c's fields without its methods
	return json.Marshal(struct {
		fields
		Key string
	}{fields(c), redact.Key(c.Key)})
}

// LogValue is c for log/slog, as a group (peer, ifindex when bound,
// key=[redacted]).
func (c MD5) LogValue() slog.Value {
	attrs := []slog.Attr{slog.String("peer", c.Peer.String())}
	if c.HasIfIndex {
		attrs = append(attrs, slog.Int("ifindex", c.IfIndex))
	}
	attrs = append(attrs, c.Lifetime.logAttrs()...)
	return slog.GroupValue(append(attrs, redact.Attr(c.Key))...)
}
