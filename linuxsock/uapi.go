package linuxsock

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"syscall"

	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/mac"
)

// Socket option numbers (level IPPROTO_TCP) and constants of
// include/uapi/linux/tcp.h.
const (
	optMD5Sig    = 14 // TCP_MD5SIG
	optMD5SigExt = 32 // TCP_MD5SIG_EXT
	optAOAddKey  = 38 // TCP_AO_ADD_KEY
	optAODelKey  = 39 // TCP_AO_DEL_KEY
	optAOInfo    = 40 // TCP_AO_INFO
	optAOGetKeys = 41 // TCP_AO_GET_KEYS
	optAORepair  = 42 // TCP_AO_REPAIR

	aoKeyfIfindex    = 1 << 0 // TCP_AO_KEYF_IFINDEX
	aoKeyfExcludeOpt = 1 << 1 // TCP_AO_KEYF_EXCLUDE_OPT
	md5FlagPrefix    = 0x1    // TCP_MD5SIG_FLAG_PREFIX
	md5FlagIfindex   = 0x2    // TCP_MD5SIG_FLAG_IFINDEX

	maxKeyLen = 80 // TCP_AO_MAXKEYLEN, TCP_MD5SIG_MAXKEYLEN
	maxAlgLen = 64 // sizeof(tcp_ao_add.alg_name), NUL included

	afInet  = 2
	afInet6 = 10
)

// Sizes of the uapi structures (x86-64 and every other 64-bit Linux ABI:
// all are aligned to 8 and contain no pointers).
const (
	sizeAOAdd    = 288 // struct tcp_ao_add
	sizeAODel    = 144 // struct tcp_ao_del
	sizeAOInfo   = 48  // struct tcp_ao_info_opt
	sizeAOGet    = 304 // struct tcp_ao_getsockopt
	sizeAORepair = 16  // struct tcp_ao_repair
	sizeMD5      = 216 // struct tcp_md5sig
)

var ne = binary.NativeEndian

// bigEndian: GCC allocates bit-fields from the most significant bit on
// big-endian machines and from the least significant one on little-endian.
var bigEndian = ne.Uint16([]byte{0, 1}) == 1

// bits32 packs the leading one-bit fields of a __u32 bit-field word
// (set_current, set_rnext, ...) in declaration order.
func bits32(flags ...bool) uint32 {
	var w uint32
	for n, f := range flags {
		if f {
			if bigEndian {
				w |= 1 << (31 - n)
			} else {
				w |= 1 << n
			}
		}
	}
	return w
}

// bit32 reads the n-th declared one-bit field of a __u32 bit-field word.
func bit32(w uint32, n int) bool {
	if bigEndian {
		return w&(1<<(31-n)) != 0
	}
	return w&(1<<n) != 0
}

// bit16 reads the n-th declared one-bit field of a __u16 bit-field word.
func bit16(w uint16, n int) bool {
	if bigEndian {
		return w&(1<<(15-n)) != 0
	}
	return w&(1<<n) != 0
}

// peer normalises a configured peer prefix: an IPv4-mapped prefix is the
// IPv4 prefix it maps; anything else invalid is refused.
func peer(p netip.Prefix) (netip.Addr, int, error) {
	if !p.IsValid() {
		return netip.Addr{}, 0, fmt.Errorf("%w: peer prefix %v", ErrInvalid, p)
	}
	a, bits := p.Addr(), p.Bits()
	if a.Is4In6() {
		if bits < 96 {
			return netip.Addr{}, 0, fmt.Errorf("%w: IPv4-mapped peer %v shorter than /96", ErrInvalid, p)
		}
		a, bits = a.Unmap(), bits-96
	}
	return a, bits, nil
}

// putSockaddr writes the peer as a struct sockaddr_in or sockaddr_in6
// (port 0) into b[0:128]. On an AF_INET6 socket (in6) an IPv4 peer is
// written as its IPv4-mapped IPv6 address, which is how both
// tcp_ao_verify_ipv6 and tcp_v6_parse_md5_keys take IPv4 peers; the
// prefix length stays the IPv4 one.
func putSockaddr(b []byte, a netip.Addr, in6 bool) {
	switch {
	case a.Is4() && !in6:
		ne.PutUint16(b[0:], afInet)
		a4 := a.As4()
		copy(b[4:8], a4[:])
	default:
		ne.PutUint16(b[0:], afInet6)
		a16 := a.As16() // ::ffff:a.b.c.d for IPv4
		copy(b[8:24], a16[:])
	}
}

// parseSockaddr reads what the kernel wrote with putSockaddr's layout;
// an IPv4-mapped address comes back as IPv4.
func parseSockaddr(b []byte) netip.Addr {
	switch ne.Uint16(b[0:]) {
	case afInet:
		return netip.AddrFrom4([4]byte(b[4:8]))
	case afInet6:
		return netip.AddrFrom16([16]byte(b[8:24])).Unmap()
	}
	return netip.Addr{}
}

// linuxAlg returns the crypto API name the kernel takes for an algorithm
// name: an RFC 5926 name ("HMAC-SHA-1-96") is translated, the draft's
// algorithms are refused ([ErrDraftAlgorithm]), a name this module does
// not know is passed on for the kernel to judge.
func linuxAlg(name string) (string, error) {
	if a, err := mac.Lookup(name); err == nil {
		if !a.Linux() {
			return "", fmt.Errorf("linuxsock: %s: %w", a.Name(), ErrDraftAlgorithm)
		}
		name = a.Name()
	}
	if name == "" || len(name) >= maxAlgLen {
		return "", fmt.Errorf("%w: algorithm name of %d bytes (want 1..%d)", ErrInvalid, len(name), maxAlgLen-1)
	}
	return name, nil
}

// addAOError explains the kernel's errno for TCP_AO_ADD_KEY of c: ENOENT
// is an algorithm the kernel does not offer (tcp_ao_parse_crypto finds no
// such hash); the errno stays wrapped. Other errnos come back as they are.
func addAOError(c keys.AO, errno error) error {
	if !errors.Is(errno, syscall.ENOENT) {
		return errno
	}
	name := c.Algorithm
	if a, err := mac.Lookup(name); err == nil {
		name = a.Name()
	}
	return fmt.Errorf("%s: %w (%w)", name, ErrAlgorithmUnavailable, errno)
}

// marshalAOAdd encodes c as struct tcp_ao_add into b (sizeAOAdd bytes).
func marshalAOAdd(b []byte, c keys.AO, sel Select, in6 bool) error {
	a, bits, err := peer(c.Peer)
	if err != nil {
		return err
	}
	alg, err := linuxAlg(c.Algorithm)
	if err != nil {
		return err
	}
	if len(c.Key) == 0 || len(c.Key) > maxKeyLen {
		return fmt.Errorf("%w: key of %d bytes (want 1..%d)", ErrInvalid, len(c.Key), maxKeyLen)
	}
	if c.MACLen < 0 || c.MACLen > 255 {
		return fmt.Errorf("%w: maclen %d", ErrInvalid, c.MACLen)
	}
	putSockaddr(b[0:128], a, in6)
	copy(b[128:192], alg)
	flags := aoKeyFlags(c)
	if c.HasIfIndex {
		ne.PutUint32(b[192:], uint32(int32(c.IfIndex)))
	}
	ne.PutUint32(b[196:], bits32(sel&Current != 0, sel&RNext != 0))
	b[202] = uint8(bits)
	b[203] = c.SendID
	b[204] = c.RecvID
	b[205] = uint8(c.MACLen)
	b[206] = flags
	b[207] = uint8(len(c.Key))
	copy(b[208:288], c.Key)
	return nil
}

func aoKeyFlags(c keys.AO) uint8 {
	var f uint8
	if c.HasIfIndex {
		f |= aoKeyfIfindex
	}
	if c.ExcludeOptions {
		f |= aoKeyfExcludeOpt
	}
	return f
}

// marshalAODel encodes struct tcp_ao_del for the key c names.
func marshalAODel(b []byte, c keys.AO, d AODelete, in6 bool) error {
	a, bits, err := peer(c.Peer)
	if err != nil {
		return err
	}
	putSockaddr(b[0:128], a, in6)
	if c.HasIfIndex {
		ne.PutUint32(b[128:], uint32(int32(c.IfIndex)))
	}
	ne.PutUint32(b[132:], bits32(d.SetCurrent, d.SetRNext, d.Async))
	b[138] = uint8(bits)
	b[139] = c.SendID
	b[140] = c.RecvID
	b[141] = d.Current
	b[142] = d.RNext
	b[143] = aoKeyFlags(c) & aoKeyfIfindex // the only flag tcp_ao_del matches on
	return nil
}

// aoInfoSet is what one TCP_AO_INFO setsockopt writes.
type aoInfoSet struct {
	setCurrent, setRNext, setCounters bool
	info                              AOInfo
}

// marshalAOInfo encodes struct tcp_ao_info_opt.
func marshalAOInfo(s aoInfoSet) []byte {
	b := make([]byte, sizeAOInfo)
	i := s.info
	ne.PutUint32(b[0:], bits32(s.setCurrent, s.setRNext, i.Required, s.setCounters, i.AcceptICMPs))
	b[6] = i.Current
	b[7] = i.RNext
	for n, v := range [...]uint64{i.Counters.Good, i.Counters.Bad, i.Counters.KeyNotFound, i.Counters.Required, i.Counters.DroppedICMP} {
		ne.PutUint64(b[8+8*n:], v)
	}
	return b
}

// unmarshalAOInfo decodes struct tcp_ao_info_opt as getsockopt fills it.
func unmarshalAOInfo(b []byte) AOInfo {
	w := ne.Uint32(b[0:])
	u := func(n int) uint64 { return ne.Uint64(b[8+8*n:]) }
	return AOInfo{
		Current: b[6], RNext: b[7],
		Required: bit32(w, 2), AcceptICMPs: bit32(w, 4),
		Counters: AOCounters{Good: u(0), Bad: u(1), KeyNotFound: u(2), Required: u(3), DroppedICMP: u(4)},
	}
}

// marshalAOGetAll encodes a TCP_AO_GET_KEYS request for every key into
// an array of n structs tcp_ao_getsockopt.
func marshalAOGetAll(n int) []byte {
	b := make([]byte, sizeAOGet*n)
	ne.PutUint32(b[272:], uint32(n))
	var getAll uint16 = 1 << 2 // the third declared bit (is_current, is_rnext, get_all)
	if bigEndian {
		getAll = 1 << (15 - 2)
	}
	ne.PutUint16(b[276:], getAll)
	return b
}

// unmarshalAOKey decodes one struct tcp_ao_getsockopt.
func unmarshalAOKey(b []byte) AOKey {
	alg := b[128:192]
	for i, ch := range alg {
		if ch == 0 {
			alg = alg[:i]
			break
		}
	}
	keylen := min(int(b[283]), maxKeyLen)
	w := ne.Uint16(b[276:])
	flags := b[282]
	k := AOKey{
		AO: keys.AO{
			SendID: b[278], RecvID: b[279], Algorithm: string(alg),
			Key:            append([]byte(nil), b[192:192+keylen]...),
			MACLen:         int(b[281]),
			ExcludeOptions: flags&aoKeyfExcludeOpt != 0,
			HasIfIndex:     flags&aoKeyfIfindex != 0,
			IfIndex:        int(int32(ne.Uint32(b[284:]))),
		},
		Current: bit16(w, 0), RNext: bit16(w, 1),
		Good: ne.Uint64(b[288:]), Bad: ne.Uint64(b[296:]),
	}
	if a := parseSockaddr(b[0:128]); a.IsValid() {
		if bits := int(b[280]); bits <= a.BitLen() {
			k.Peer = netip.PrefixFrom(a, bits)
		}
	}
	return k
}

// marshalAORepair encodes struct tcp_ao_repair: ISNs in network order
// (__be32), SNEs in host order.
func marshalAORepair(r AORepair) []byte {
	b := make([]byte, sizeAORepair)
	binary.BigEndian.PutUint32(b[0:], r.LocalISN)
	binary.BigEndian.PutUint32(b[4:], r.RemoteISN)
	ne.PutUint32(b[8:], r.SendSNE)
	ne.PutUint32(b[12:], r.RecvSNE)
	return b
}

func unmarshalAORepair(b []byte) AORepair {
	return AORepair{
		LocalISN: binary.BigEndian.Uint32(b[0:]), RemoteISN: binary.BigEndian.Uint32(b[4:]),
		SendSNE: ne.Uint32(b[8:]), RecvSNE: ne.Uint32(b[12:]),
	}
}

// marshalMD5 encodes c as struct tcp_md5sig into b (sizeMD5 bytes) and
// returns the option to set it with: TCP_MD5SIG for one address without
// an L3 domain, TCP_MD5SIG_EXT (Linux 4.13+) otherwise. del leaves the
// key out (keylen 0 deletes).
func marshalMD5(b []byte, c keys.MD5, in6, del bool) (int, error) {
	a, bits, err := peer(c.Peer)
	if err != nil {
		return 0, err
	}
	if !del && (len(c.Key) == 0 || len(c.Key) > maxKeyLen) {
		return 0, fmt.Errorf("%w: key of %d bytes (want 1..%d)", ErrInvalid, len(c.Key), maxKeyLen)
	}
	putSockaddr(b[0:128], a, in6)
	opt := optMD5Sig
	if bits != a.BitLen() || c.HasIfIndex {
		opt = optMD5SigExt
		b[128] = md5FlagPrefix
		b[129] = uint8(bits)
		if c.HasIfIndex {
			b[128] |= md5FlagIfindex
			ne.PutUint32(b[132:], uint32(int32(c.IfIndex)))
		}
	}
	if !del {
		ne.PutUint16(b[130:], uint16(len(c.Key)))
		copy(b[136:216], c.Key)
	}
	return opt, nil
}
