package md5sig

import (
	"errors"
	"fmt"
	"net/netip"
	"sync/atomic"

	"github.com/tcpsig/tcpsig/internal/lifetime"
	"github.com/tcpsig/tcpsig/internal/reclaim"
	"github.com/tcpsig/tcpsig/internal/redact"
	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/mac"
	"github.com/tcpsig/tcpsig/sigpool"
)

// ErrNoSuchKey is Delete's error for a key not in the keyring (Linux's
// ENOENT). A configuration the kernel would refuse is keys.ErrInvalid.
var ErrNoSuchKey = errors.New("md5sig: no such key")

// ErrDuplicate is AddAll's error for an entry of the same peer prefix and
// binding as an earlier one of the list, which it would silently replace
// (unless both have lifetimes: then they are the peer's schedule).
var ErrDuplicate = errors.New("md5sig: another entry of the list has this peer and binding")

// scratchSize is what one digest needs of the pool's scratch: the IPv6
// pseudo-header (40) and the 20-byte TCP header at 0, the digest at sumOff.
const (
	scratchSize = 96
	sumOff      = 64
)

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
	hasPool bool // poolID holds a reference on the pool's TCP-MD5 entry
	deleted bool // removed from its keyring; under ring.mu
	timed   bool // sched limits the key (it has a lifetime)
	sched   lifetime.Schedule
	// off holds the lifetime state bits as of the keyring's last Advance,
	// and gone once the key is deleted or replaced: then it is no
	// longer a peer's key for a Sign or Verify that names it.
	off atomic.Uint32

	guard     reclaim.Guard
	good, bad atomic.Uint64
}

// gone is Key.off's bit of a key that left its keyring.
const gone = 1 << 31

// matchesL3 reports whether the key applies in L3 domain l3 (Linux: a key
// without TCP_MD5SIG_FLAG_IFINDEX matches every domain).
func (k *Key) matchesL3(l3 int) bool { return !k.bound || k.ifindex == l3 }

// same reports whether k is the key Linux's tcp_md5_do_lookup_exact would
// find for this description.
func (k *Key) same(peer netip.Prefix, l3 int, bound bool) bool {
	return k.peer == peer && k.bound == bound && k.ifindex == l3
}

// newKey validates cfg as Linux's tcp_v4_parse_md5_keys and
// tcp_v6_parse_md5_keys do (keys.MD5.Validate) and builds the key; Add
// gives it the keyring's pool entry.
func newKey(cfg *keys.MD5, r *Keyring) (*Key, error) {
	c, err := cfg.Validate()
	if err != nil {
		return nil, err
	}
	k := &Key{peer: c.Peer, ifindex: c.IfIndex, bound: c.HasIfIndex, ring: r, secret: new(mac.Key)}
	k.sched, k.timed = lifetime.Of(c.Lifetime)
	if err := k.secret.Init(mac.TCPMD5, c.Key); err != nil {
		k.secret.Wipe()
		return nil, fmt.Errorf("%w TCP-MD5 key: %v", keys.ErrInvalid, err)
	}
	return k, nil
}

// wipe clears the key bytes and drops the key's pool reference: the
// entry and its contexts go with the last TCP-MD5 key. It runs once, when
// no reader can still use the key: quick, as reclaim asks (the pool's
// lock is short and never waits for a shard).
func (k *Key) wipe() {
	k.secret.Wipe()
	if k.hasPool {
		k.hasPool = false
		_ = k.pool.Release(k.poolID)
	}
}

// Peer returns the key's peer prefix, masked, IPv4-mapped prefixes as
// IPv4.
func (k *Key) Peer() netip.Prefix {
	if k == nil {
		return netip.Prefix{}
	}
	return k.peer
}

// SendActive reports whether the key is inside its send lifetime as of
// its keyring's last Advance (RFC 8177's send-lifetime-active).
func (k *Key) SendActive() bool { return k != nil && k.off.Load()&(lifetime.OffSend|gone) == 0 }

// AcceptActive reports whether the key is inside its accept lifetime,
// widened by its tolerance, as of its keyring's last Advance (RFC 8177's
// accept-lifetime-active).
func (k *Key) AcceptActive() bool { return k != nil && k.off.Load()&(lifetime.OffAccept|gone) == 0 }

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
func (k *Key) Format(f fmt.State, _ rune) { redact.Format(f, k.String()) }
