package md5sig

import (
	"errors"
	"fmt"
	"math"
	"net/netip"
	"sync/atomic"

	"github.com/tcpsig/tcpsig/internal/reclaim"
	"github.com/tcpsig/tcpsig/mac"
	"github.com/tcpsig/tcpsig/sigpool"
)

// Errors of key management, with the errno Linux's TCP_MD5SIG returns for
// the same case.
var (
	ErrInvalidKey = errors.New("md5sig: invalid key") // EINVAL
	ErrNoSuchKey  = errors.New("md5sig: no such key") // ENOENT
)

// scratchSize is what one digest needs of the pool's scratch: the IPv6
// pseudo-header (40) and the 20-byte TCP header at 0, the digest at sumOff.
const (
	scratchSize = 96
	sumOff      = 64
)

// Config describes a key as Linux's TCP_MD5SIG_EXT takes it. Printing a
// Config never shows the key.
type Config struct {
	// Peer is the peer's address prefix: /32 or /128 for one host (plain
	// TCP_MD5SIG), shorter for TCP_MD5SIG_FLAG_PREFIX. A prefix with host
	// bits set is refused, as package ao refuses it (Linux would ignore
	// them). An IPv4-mapped IPv6 prefix of length 96 or more is the IPv4
	// prefix it maps.
	Peer netip.Prefix
	// Key is the secret, 1 to MaxKeyLen bytes. It is copied.
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
}

// String describes the config without its key.
func (c Config) String() string {
	return fmt.Sprintf("md5sig.Config{peer %v, ifindex %d/%v, %d-byte key [redacted]}", c.Peer, c.IfIndex, c.HasIfIndex, len(c.Key))
}

// GoString is String, so %#v does not print the key either.
func (c Config) GoString() string { return c.String() }

// Format prints the redacted form for every verb, %x included.
func (c Config) Format(f fmt.State, _ rune) {
	if f != nil {
		fmt.Fprint(f, c.String())
	}
}

// Key is one TCP-MD5 key in a [Keyring]: Linux's struct tcp_md5sig_key.
// It is immutable once added; its key bytes are wiped after deletion, once
// no reader can still use them. Printing a Key never shows key bytes.
type Key struct {
	peer    netip.Prefix // masked, IPv4-mapped prefixes unmapped
	ifindex int
	bound   bool
	secret  *mac.Key // behind a pointer: a reflective print of a Key shows an address
	ring    *Keyring
	pool    *sigpool.Pool
	poolID  sigpool.ID
	deleted bool // removed from its keyring; under ring.mu

	guard     reclaim.Guard
	good, bad atomic.Uint64
}

// matchesL3 reports whether the key applies in L3 domain l3 (Linux: a key
// without TCP_MD5SIG_FLAG_IFINDEX matches every domain).
func (k *Key) matchesL3(l3 int) bool { return !k.bound || k.ifindex == l3 }

// same reports whether k is the key Linux's tcp_md5_do_lookup_exact would
// find for this description.
func (k *Key) same(peer netip.Prefix, l3 int, bound bool) bool {
	return k.peer == peer && k.bound == bound && k.ifindex == l3
}

// newKey validates cfg as Linux's tcp_v4_parse_md5_keys and
// tcp_v6_parse_md5_keys do and builds the key; Add gives it the keyring's
// pool entry.
func newKey(cfg *Config, r *Keyring) (*Key, error) {
	if len(cfg.Key) == 0 || len(cfg.Key) > MaxKeyLen {
		return nil, fmt.Errorf("%w: key length %d not in 1..%d", ErrInvalidKey, len(cfg.Key), MaxKeyLen)
	}
	peer, err := normalise(cfg.Peer)
	if err != nil {
		return nil, err
	}
	if cfg.IfIndex < 0 || cfg.IfIndex > math.MaxInt32 || (cfg.IfIndex != 0 && !cfg.HasIfIndex) {
		return nil, fmt.Errorf("%w: ifindex %d (bound %v)", ErrInvalidKey, cfg.IfIndex, cfg.HasIfIndex)
	}
	k := &Key{peer: peer, ifindex: cfg.IfIndex, bound: cfg.HasIfIndex, ring: r, secret: new(mac.Key)}
	if err := k.secret.Init(mac.TCPMD5, cfg.Key); err != nil {
		k.secret.Wipe()
		return nil, fmt.Errorf("%w: %v", ErrInvalidKey, err)
	}
	return k, nil
}

// normalise returns the prefix as the keyring stores it: IPv4-mapped
// prefixes unmapped; one with host bits set is refused.
func normalise(p netip.Prefix) (netip.Prefix, error) {
	if !p.IsValid() {
		return p, fmt.Errorf("%w: peer prefix %v", ErrInvalidKey, p)
	}
	if a := p.Addr(); a.Is4In6() {
		if p.Bits() < 96 {
			return p, fmt.Errorf("%w: IPv4-mapped peer prefix %v shorter than /96", ErrInvalidKey, p)
		}
		p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
	}
	if p.Masked() != p {
		return p, fmt.Errorf("%w: peer prefix %v has host bits set", ErrInvalidKey, p)
	}
	return p, nil
}

// wipe clears the key bytes. It runs once, when no reader can still use
// the key: quick and without a lock, as reclaim asks (the pool entry
// belongs to the keyring).
func (k *Key) wipe() { k.secret.Wipe() }

// Peer returns the key's peer prefix, masked, IPv4-mapped prefixes as
// IPv4.
func (k *Key) Peer() netip.Prefix {
	if k == nil {
		return netip.Prefix{}
	}
	return k.peer
}

// IfIndex returns the L3 index and whether the key is bound to it.
func (k *Key) IfIndex() (int, bool) {
	if k == nil {
		return 0, false
	}
	return k.ifindex, k.bound
}

// Counters returns the number of segments the key verified and the number
// it found forged or damaged (AO's per-key pkt_good and pkt_bad; Linux
// keeps no per-key TCP-MD5 counters).
func (k *Key) Counters() (good, bad uint64) {
	if k == nil {
		return 0, 0
	}
	return k.good.Load(), k.bad.Load()
}

// String describes the key without its bytes.
func (k *Key) String() string {
	if k == nil {
		return "md5sig.Key(nil)"
	}
	s := fmt.Sprintf("md5sig.Key{peer %v", k.peer)
	if k.bound {
		s += fmt.Sprintf(", ifindex %d", k.ifindex)
	}
	return s + ", key [redacted]}"
}

// GoString is String, so %#v does not print key bytes.
func (k *Key) GoString() string { return k.String() }

// Format prints the redacted form for every verb.
func (k *Key) Format(f fmt.State, _ rune) {
	if f != nil {
		fmt.Fprint(f, k.String())
	}
}
