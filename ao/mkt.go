package ao

import (
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"

	"github.com/tcpsig/tcpsig/internal/reclaim"
	"github.com/tcpsig/tcpsig/kdf"
	"github.com/tcpsig/tcpsig/mac"
	"github.com/tcpsig/tcpsig/sigpool"
)

// Limits Linux enforces on MKTs (include/uapi/linux/tcp.h, tcp_ao_add_cmd).
const (
	MaxKeyLen     = 80 // TCP_AO_MAXKEYLEN
	DefaultMACLen = 12 // RFC 5926 §3.2: 96-bit MACs; Linux's default for maclen 0
	// MaxMACLen is the longest MAC whose option still fits a SYN that
	// carries MSS, timestamps and window scale: round_up(4+maclen, 4) ≤ 20.
	MaxMACLen = 16
)

// Errors of key management, with the errno Linux returns for the same case.
var (
	ErrInvalidKey = errors.New("ao: invalid MKT")                                               // EINVAL
	ErrMACTooLong = errors.New("ao: MAC length does not fit the SYN option space")              // EMSGSIZE
	ErrKeyExists  = errors.New("ao: an MKT with this SendID or RecvID already covers the peer") // EEXIST
	ErrNoSuchKey  = errors.New("ao: no such MKT")                                               // ENOENT
	ErrKeyBusy    = errors.New("ao: MKT is a connection's current or RNext key")                // EBUSY
)

// Config describes an MKT as Linux's TCP_AO_ADD_KEY takes it.
type Config struct {
	Peer           netip.Prefix // the peer's address prefix; /32 or /128 for one host; 0.0.0.0/0 or ::/0 for any
	SendID, RecvID uint8        // KeyID sent, KeyID expected on receive
	Algorithm      string       // Linux name, e.g. "hmac(sha1)", "cmac(aes128)", or RFC 5926 "HMAC-SHA-1-96"
	Key            []byte       // master key, 1..80 bytes (32..80 for the draft's algorithms); copied
	MACLen         int          // 0 means the algorithm's default: 12, or 16 for the draft's (which take 16 only)
	ExcludeOptions bool         // TCP_AO_KEYF_EXCLUDE_OPT: options other than TCP-AO are not covered
	IfIndex        int          // L3 (VRF) interface index; with HasIfIndex the MKT matches only that L3 domain
	HasIfIndex     bool         // TCP_AO_KEYF_IFINDEX
}

// MKT is a Master Key Tuple (RFC 5925 §3.1). It is immutable once added
// to a [Keyring]; its key material is wiped after deletion, once no reader
// can still use it. Printing an MKT never shows key bytes.
type MKT struct {
	// The pointers first (the garbage collector then scans only the
	// first words of an MKT and of the master key allocated with it).
	alg *mac.Algorithm
	// Behind a pointer so that fmt, walking a copied MKT's fields
	// without its methods, prints an address and not the keyed state
	// (for hmac(rmd160) that is key⊕ipad and key⊕opad).
	master *kdf.Master
	pool   *sigpool.Pool // for the calls without a connection
	ring   *Keyring      // the keyring the MKT is in, nil once deleted; under the keyring's lock
	// users lists the connections that have the MKT as current key
	// (users[roleCurrent]) or RNext key, under the keyring's lock: a
	// delete that would leave them without one is refused, and a forced
	// delete moves them to the replacement.
	users [2]*Conn
	// lanes lists the connections' lane entries that count good segments
	// for the MKT; lgen changes with every change of the list.
	lmu   sync.Mutex
	lanes []*laneKey
	lgen  uint64
	guard reclaim.Guard

	peer           netip.Prefix
	sendID, recvID uint8
	maclen         uint8
	exclude        bool
	hasIfIndex     bool
	ifindex        int
	poolID         sigpool.ID
	added          uint64 // order of addition in its keyring (newest wins by default)

	// The counters, written per verified segment, on a line of their own
	// so that they do not share one with what signers read.
	_    [64]byte
	good atomic.Uint64 // segments counted here: by listeners, and by wiped lane entries
	bad  atomic.Uint64
	_    [48]byte
}

// newMKT validates cfg and prepares its master key; the keyring sets the
// pool it computes through.
func newMKT(cfg *Config) (*MKT, error) {
	alg, err := mac.Lookup(cfg.Algorithm)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidKey, err)
	}
	if alg == mac.TCPMD5 {
		return nil, fmt.Errorf("%w: %s is not keyed", ErrInvalidKey, alg)
	}
	if len(cfg.Key) == 0 || len(cfg.Key) > MaxKeyLen {
		return nil, fmt.Errorf("%w: key length %d not in 1..%d", ErrInvalidKey, len(cfg.Key), MaxKeyLen)
	}
	maclen := cfg.MACLen
	if maclen == 0 {
		maclen = DefaultMACLen
		if n := alg.MACLen(); n != 0 {
			maclen = n
		}
	}
	if n := alg.MACLen(); n != 0 && maclen != n {
		return nil, fmt.Errorf("%w: %w", ErrInvalidKey, alg.CheckMACLen(maclen))
	}
	if maclen < 0 || OptionSpace(maclen) > OptionSpace(MaxMACLen) {
		return nil, fmt.Errorf("%w: maclen %d", ErrMACTooLong, maclen)
	}
	if maclen > alg.Size() {
		return nil, fmt.Errorf("%w: maclen %d exceeds the %d-byte digest of %s", ErrInvalidKey, maclen, alg.Size(), alg)
	}
	peer := cfg.Peer
	if !peer.IsValid() {
		return nil, fmt.Errorf("%w: peer prefix %v", ErrInvalidKey, peer)
	}
	if peer.Addr().Is4In6() && peer.Bits() >= 96 {
		peer = netip.PrefixFrom(peer.Addr().Unmap(), peer.Bits()-96)
	}
	if peer.Masked() != peer {
		return nil, fmt.Errorf("%w: peer prefix %v has host bits set", ErrInvalidKey, cfg.Peer)
	}
	if cfg.IfIndex != 0 && !cfg.HasIfIndex {
		return nil, fmt.Errorf("%w: ifindex without HasIfIndex", ErrInvalidKey)
	}
	// One allocation for the MKT and its master key.
	both := &struct {
		m      MKT
		master kdf.Master
	}{}
	m := &both.m
	*m = MKT{peer: peer, sendID: cfg.SendID, recvID: cfg.RecvID, maclen: uint8(maclen),
		exclude: cfg.ExcludeOptions, hasIfIndex: cfg.HasIfIndex, ifindex: cfg.IfIndex, alg: alg,
		master: &both.master}
	if err := m.master.Init(alg, cfg.Key); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidKey, err)
	}
	return m, nil
}

// Peer returns the MKT's peer prefix.
func (m *MKT) Peer() netip.Prefix {
	if m == nil {
		return netip.Prefix{}
	}
	return m.peer
}

// SendID returns the KeyID this MKT puts in segments it signs.
func (m *MKT) SendID() uint8 {
	if m == nil {
		return 0
	}
	return m.sendID
}

// RecvID returns the KeyID of segments this MKT verifies.
func (m *MKT) RecvID() uint8 {
	if m == nil {
		return 0
	}
	return m.recvID
}

// MACLen returns the MAC length in bytes.
func (m *MKT) MACLen() int {
	if m == nil {
		return 0
	}
	return int(m.maclen)
}

// Algorithm returns the MKT's algorithm.
func (m *MKT) Algorithm() *mac.Algorithm {
	if m == nil {
		return nil
	}
	return m.alg
}

// ExcludeOptions reports whether TCP options other than TCP-AO are left
// out of the MAC.
func (m *MKT) ExcludeOptions() bool {
	if m == nil {
		return false
	}
	return m.exclude
}

// IfIndex returns the L3 index and whether the MKT is bound to it.
func (m *MKT) IfIndex() (int, bool) {
	if m == nil {
		return 0, false
	}
	return m.ifindex, m.hasIfIndex
}

// Counters returns the MKT's good and bad segment counts (Linux's per-key
// pkt_good and pkt_bad).
func (m *MKT) Counters() (good, bad uint64) {
	if m == nil {
		return 0, 0
	}
	// Each entry's count is read under its lane's lock, which is never
	// taken under lmu: if the list changed meanwhile (an entry folded
	// into m.good, or one added), the sum starts again.
	for {
		m.lmu.Lock()
		gen, n := m.lgen, len(m.lanes)
		m.lmu.Unlock()
		var sum uint64
		ok := true
		for i := 0; i < n && ok; i++ {
			m.lmu.Lock()
			var k *laneKey
			if ok = m.lgen == gen; ok {
				k = m.lanes[i]
			}
			m.lmu.Unlock()
			if ok {
				k.lane.mu.Lock()
				if k.mkt == m {
					sum += k.good
				}
				k.lane.mu.Unlock()
			}
		}
		m.lmu.Lock()
		if ok && m.lgen == gen {
			good = m.good.Load() + sum
			m.lmu.Unlock()
			return good, m.bad.Load()
		}
		m.lmu.Unlock()
	}
}

// list enters k, a lane's new entry for m, in m.lanes; k's lane is
// locked.
func (m *MKT) list(k *laneKey) {
	m.lmu.Lock()
	k.good, k.idx = 0, len(m.lanes)
	m.lanes = append(m.lanes, k)
	m.lgen++
	m.lmu.Unlock()
}

// unlist removes k from m.lanes and adds its count to m.good; k's lane
// is locked.
func (m *MKT) unlist(k *laneKey) {
	m.lmu.Lock()
	m.good.Add(k.good)
	k.good = 0
	last := len(m.lanes) - 1
	m.lanes[k.idx] = m.lanes[last]
	m.lanes[k.idx].idx = k.idx
	m.lanes[last] = nil
	m.lanes = m.lanes[:last]
	m.lgen++
	m.lmu.Unlock()
}

// String describes the MKT without key material.
func (m *MKT) String() string {
	if m == nil {
		return "ao.MKT(nil)"
	}
	s := fmt.Sprintf("ao.MKT{peer %v, SendID %d, RecvID %d, %s, maclen %d", m.peer, m.sendID, m.recvID, m.alg, m.maclen)
	if m.exclude {
		s += ", options excluded"
	}
	if m.hasIfIndex {
		s += fmt.Sprintf(", ifindex %d", m.ifindex)
	}
	return s + ", key [redacted]}"
}

// GoString is String, so %#v does not print key material.
func (m *MKT) GoString() string { return m.String() }

// Format prints the redacted form for every verb.
func (m *MKT) Format(f fmt.State, _ rune) {
	if f != nil {
		fmt.Fprint(f, m.String())
	}
}

// String redacts the key of a Config.
func (c Config) String() string {
	return fmt.Sprintf("ao.Config{peer %v, SendID %d, RecvID %d, %s, maclen %d, exclude %v, ifindex %d/%v, key [redacted]}",
		c.Peer, c.SendID, c.RecvID, c.Algorithm, c.MACLen, c.ExcludeOptions, c.IfIndex, c.HasIfIndex)
}

// GoString redacts the key of a Config.
func (c Config) GoString() string { return c.String() }

// Format prints the redacted form for every verb.
func (c Config) Format(f fmt.State, _ rune) {
	if f != nil {
		fmt.Fprint(f, c.String())
	}
}

// matchesL3 reports whether the MKT applies in L3 domain l3 (Linux: a key
// without TCP_AO_KEYF_IFINDEX matches every VRF).
func (m *MKT) matchesL3(l3 int) bool { return !m.hasIfIndex || m.ifindex == l3 }

// acquire pins the MKT's master key for a derivation; false once the MKT
// is deleted.
func (m *MKT) acquire() (reclaim.Pin, bool) { return m.guard.Acquire() }

func (m *MKT) release(p reclaim.Pin) { m.guard.Release(p) }

// wipe clears the master key. It runs once, when no derivation can still
// use it: quick, no lock, as reclaim asks. (Connections wipe the traffic
// keys they derived themselves: see lane.add and Conn.Close.)
func (m *MKT) wipe() { m.master.Wipe() }
