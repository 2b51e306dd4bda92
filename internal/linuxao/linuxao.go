// Package linuxao builds the Linux TCP-AO and TCP_REPAIR socket-option
// structures (include/uapi/linux/tcp.h, Linux 6.12, x86-64 layout) as byte
// slices, and on Linux sets and reads them on a socket with the standard
// syscall package.
//
// It exists so that tests and tools can drive the kernel's own TCP-AO
// implementation (the reference the tcpsig engine must match byte for byte):
// the qemu capture program in testvectors/linux/guest uses it to configure
// kernel<->kernel TCP-AO connections. Marshalling is pure and portable; only
// the *FD helpers touch a socket. TCP-MD5 keys are internal/linuxmd5's.
package linuxao

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
)

// Socket option numbers (level IPPROTO_TCP), linux/tcp.h.
const (
	TCP_NODELAY        = 1
	TCP_MAXSEG         = 2
	TCP_REPAIR         = 19
	TCP_REPAIR_QUEUE   = 20
	TCP_QUEUE_SEQ      = 21
	TCP_REPAIR_OPTIONS = 22
	TCP_TIMESTAMP      = 24
	TCP_REPAIR_WINDOW  = 29
	TCP_AO_ADD_KEY     = 38
	TCP_AO_DEL_KEY     = 39
	TCP_AO_INFO        = 40
	TCP_AO_GET_KEYS    = 41
	TCP_AO_REPAIR      = 42
	TCP_AO_MAXKEYLEN   = 80
)

// Values for TCP_REPAIR and TCP_REPAIR_QUEUE.
const (
	TCP_REPAIR_ON        = 1
	TCP_REPAIR_OFF       = 0
	TCP_REPAIR_OFF_NO_WP = -1

	TCP_NO_QUEUE   = 0
	TCP_RECV_QUEUE = 1
	TCP_SEND_QUEUE = 2
)

// TCP option kinds accepted by TCP_REPAIR_OPTIONS.
const (
	TCPOPT_MSS       = 2
	TCPOPT_WINDOW    = 3
	TCPOPT_SACK_PERM = 4
	TCPOPT_TIMESTAMP = 8
)

// Key flags (tcp_ao_add.keyflags).
const (
	TCP_AO_KEYF_IFINDEX     = 1 << 0
	TCP_AO_KEYF_EXCLUDE_OPT = 1 << 1
)

// Structure sizes (x86-64).
const (
	SizeofSockaddrStorage = 128
	SizeofAOAdd           = 288
	SizeofAODel           = 144
	SizeofAOInfo          = 48
	SizeofAOGetsockopt    = 304
	SizeofAORepair        = 16
	SizeofRepairWindow    = 20
	SizeofRepairOpt       = 8
)

const (
	afInet  = 2
	afInet6 = 10
)

// ErrInvalid reports an argument that cannot be encoded.
var ErrInvalid = errors.New("linuxao: invalid argument")

// putSockaddr writes a struct sockaddr_in/sockaddr_in6 for addr (port 0, as
// the kernel requires for keys) into b (at least 128 bytes).
func putSockaddr(b []byte, addr netip.Addr) error {
	switch {
	case addr.Is4():
		binary.LittleEndian.PutUint16(b[0:], afInet)
		a := addr.As4()
		copy(b[4:8], a[:])
	case addr.Is6():
		binary.LittleEndian.PutUint16(b[0:], afInet6)
		a := addr.As16()
		copy(b[8:24], a[:])
	default:
		return fmt.Errorf("%w: address %v", ErrInvalid, addr)
	}
	return nil
}

// parseSockaddr reads back what putSockaddr (or the kernel) wrote.
func parseSockaddr(b []byte) netip.Addr {
	switch binary.LittleEndian.Uint16(b[0:]) {
	case afInet:
		return netip.AddrFrom4([4]byte(b[4:8]))
	case afInet6:
		return netip.AddrFrom16([16]byte(b[8:24]))
	}
	return netip.Addr{}
}

// AddKey is struct tcp_ao_add (setsockopt TCP_AO_ADD_KEY).
type AddKey struct {
	Peer       netip.Prefix // peer address and prefix length
	Alg        string       // crypto API name, e.g. "hmac(sha1)", "cmac(aes128)"
	Ifindex    int32        // only with TCP_AO_KEYF_IFINDEX
	SetCurrent bool
	SetRNext   bool
	SndID      uint8
	RcvID      uint8
	MACLen     uint8 // 0 means the kernel default (12)
	KeyFlags   uint8
	Key        []byte // at most 80 bytes
}

// Marshal encodes k as the kernel's 288-byte struct tcp_ao_add.
func (k AddKey) Marshal() ([]byte, error) {
	b := make([]byte, SizeofAOAdd)
	if !k.Peer.IsValid() {
		return nil, fmt.Errorf("%w: peer prefix not set", ErrInvalid)
	}
	if err := putSockaddr(b[0:128], k.Peer.Addr()); err != nil {
		return nil, err
	}
	if len(k.Alg) >= 64 {
		return nil, fmt.Errorf("%w: algorithm name too long", ErrInvalid)
	}
	if len(k.Key) > TCP_AO_MAXKEYLEN {
		return nil, fmt.Errorf("%w: key of %d bytes (max %d)", ErrInvalid, len(k.Key), TCP_AO_MAXKEYLEN)
	}
	copy(b[128:192], k.Alg)
	binary.LittleEndian.PutUint32(b[192:], uint32(k.Ifindex))
	binary.LittleEndian.PutUint32(b[196:], bitfield(k.SetCurrent, k.SetRNext))
	b[202] = uint8(k.Peer.Bits())
	b[203] = k.SndID
	b[204] = k.RcvID
	b[205] = k.MACLen
	b[206] = k.KeyFlags
	b[207] = uint8(len(k.Key))
	copy(b[208:288], k.Key)
	return b, nil
}

// DelKey is struct tcp_ao_del (setsockopt TCP_AO_DEL_KEY).
type DelKey struct {
	Peer       netip.Prefix
	Ifindex    int32
	SetCurrent bool
	SetRNext   bool
	DelAsync   bool // listening sockets only
	SndID      uint8
	RcvID      uint8
	CurrentKey uint8 // new current key's SndID, with SetCurrent
	RNext      uint8 // new rnext key's RcvID, with SetRNext
	KeyFlags   uint8
}

// Marshal encodes d as the kernel's 144-byte struct tcp_ao_del.
func (d DelKey) Marshal() ([]byte, error) {
	b := make([]byte, SizeofAODel)
	if err := putSockaddr(b[0:128], d.Peer.Addr()); err != nil {
		return nil, err
	}
	binary.LittleEndian.PutUint32(b[128:], uint32(d.Ifindex))
	binary.LittleEndian.PutUint32(b[132:], bitfield(d.SetCurrent, d.SetRNext, d.DelAsync))
	b[138] = uint8(d.Peer.Bits())
	b[139] = d.SndID
	b[140] = d.RcvID
	b[141] = d.CurrentKey
	b[142] = d.RNext
	b[143] = d.KeyFlags
	return b, nil
}

// Info is struct tcp_ao_info_opt (set/getsockopt TCP_AO_INFO).
type Info struct {
	SetCurrent     bool
	SetRNext       bool
	AORequired     bool
	SetCounters    bool
	AcceptICMPs    bool
	CurrentKey     uint8 // SndID of the key to send with
	RNext          uint8 // RcvID of the key the peer is asked to send with
	PktGood        uint64
	PktBad         uint64
	PktKeyNotFound uint64
	PktAORequired  uint64
	PktDroppedICMP uint64
}

// Marshal encodes i as the kernel's 48-byte struct tcp_ao_info_opt.
func (i Info) Marshal() []byte {
	b := make([]byte, SizeofAOInfo)
	binary.LittleEndian.PutUint32(b[0:], bitfield(i.SetCurrent, i.SetRNext, i.AORequired, i.SetCounters, i.AcceptICMPs))
	b[6] = i.CurrentKey
	b[7] = i.RNext
	for n, v := range []uint64{i.PktGood, i.PktBad, i.PktKeyNotFound, i.PktAORequired, i.PktDroppedICMP} {
		binary.LittleEndian.PutUint64(b[8+8*n:], v)
	}
	return b
}

// UnmarshalInfo decodes a struct tcp_ao_info_opt.
func UnmarshalInfo(b []byte) (Info, error) {
	if len(b) < SizeofAOInfo {
		return Info{}, fmt.Errorf("%w: tcp_ao_info_opt of %d bytes", ErrInvalid, len(b))
	}
	bits := binary.LittleEndian.Uint32(b[0:])
	u := func(n int) uint64 { return binary.LittleEndian.Uint64(b[8+8*n:]) }
	return Info{
		SetCurrent: bits&1 != 0, SetRNext: bits&2 != 0, AORequired: bits&4 != 0,
		SetCounters: bits&8 != 0, AcceptICMPs: bits&16 != 0,
		CurrentKey: b[6], RNext: b[7],
		PktGood: u(0), PktBad: u(1), PktKeyNotFound: u(2), PktAORequired: u(3), PktDroppedICMP: u(4),
	}, nil
}

// Repair is struct tcp_ao_repair (set/getsockopt TCP_AO_REPAIR): the ISNs
// the traffic keys derive from and the two sequence number extensions.
type Repair struct {
	SntISN uint32 // local ISN
	RcvISN uint32 // remote ISN
	SndSNE uint32
	RcvSNE uint32
}

// Marshal encodes r: ISNs big-endian (they are __be32), SNEs host order.
func (r Repair) Marshal() []byte {
	b := make([]byte, SizeofAORepair)
	binary.BigEndian.PutUint32(b[0:], r.SntISN)
	binary.BigEndian.PutUint32(b[4:], r.RcvISN)
	binary.LittleEndian.PutUint32(b[8:], r.SndSNE)
	binary.LittleEndian.PutUint32(b[12:], r.RcvSNE)
	return b
}

// UnmarshalRepair decodes a struct tcp_ao_repair.
func UnmarshalRepair(b []byte) (Repair, error) {
	if len(b) < SizeofAORepair {
		return Repair{}, fmt.Errorf("%w: tcp_ao_repair of %d bytes", ErrInvalid, len(b))
	}
	return Repair{
		SntISN: binary.BigEndian.Uint32(b[0:]), RcvISN: binary.BigEndian.Uint32(b[4:]),
		SndSNE: binary.LittleEndian.Uint32(b[8:]), RcvSNE: binary.LittleEndian.Uint32(b[12:]),
	}, nil
}

// KeyInfo is one struct tcp_ao_getsockopt (getsockopt TCP_AO_GET_KEYS).
type KeyInfo struct {
	Peer      netip.Prefix
	Alg       string
	Key       []byte
	NKeys     uint32
	IsCurrent bool
	IsRNext   bool
	GetAll    bool
	SndID     uint8
	RcvID     uint8
	MACLen    uint8
	KeyFlags  uint8
	Ifindex   int32
	PktGood   uint64
	PktBad    uint64
}

// MarshalGetKeysRequest encodes the first element of a TCP_AO_GET_KEYS
// request: with getAll, every key; nkeys is the capacity of the array.
func MarshalGetKeysRequest(getAll bool, nkeys uint32) []byte {
	b := make([]byte, SizeofAOGetsockopt*int(nkeys))
	binary.LittleEndian.PutUint32(b[272:], nkeys)
	if getAll {
		binary.LittleEndian.PutUint16(b[276:], 4)
	}
	return b
}

// UnmarshalKeyInfo decodes one struct tcp_ao_getsockopt.
func UnmarshalKeyInfo(b []byte) (KeyInfo, error) {
	if len(b) < SizeofAOGetsockopt {
		return KeyInfo{}, fmt.Errorf("%w: tcp_ao_getsockopt of %d bytes", ErrInvalid, len(b))
	}
	alg := b[128:192]
	for i, c := range alg {
		if c == 0 {
			alg = alg[:i]
			break
		}
	}
	keylen := int(b[283])
	if keylen > TCP_AO_MAXKEYLEN {
		keylen = TCP_AO_MAXKEYLEN
	}
	bits := binary.LittleEndian.Uint16(b[276:])
	k := KeyInfo{
		Alg: string(alg), Key: append([]byte(nil), b[192:192+keylen]...),
		NKeys: binary.LittleEndian.Uint32(b[272:]), IsCurrent: bits&1 != 0, IsRNext: bits&2 != 0, GetAll: bits&4 != 0,
		SndID: b[278], RcvID: b[279], MACLen: b[281], KeyFlags: b[282],
		Ifindex: int32(binary.LittleEndian.Uint32(b[284:])),
		PktGood: binary.LittleEndian.Uint64(b[288:]), PktBad: binary.LittleEndian.Uint64(b[296:]),
	}
	if a := parseSockaddr(b[0:128]); a.IsValid() {
		k.Peer = netip.PrefixFrom(a, int(b[280]))
	}
	return k, nil
}

// RepairOpt is struct tcp_repair_opt (an element of TCP_REPAIR_OPTIONS).
type RepairOpt struct {
	Code uint32 // TCPOPT_*
	Val  uint32 // MSS value; snd_wscale | rcv_wscale<<16; 0 for SACK_PERM/TIMESTAMP
}

// MarshalRepairOpts encodes a TCP_REPAIR_OPTIONS array.
func MarshalRepairOpts(opts []RepairOpt) []byte {
	b := make([]byte, SizeofRepairOpt*len(opts))
	for i, o := range opts {
		binary.LittleEndian.PutUint32(b[8*i:], o.Code)
		binary.LittleEndian.PutUint32(b[8*i+4:], o.Val)
	}
	return b
}

// RepairWindow is struct tcp_repair_window (TCP_REPAIR_WINDOW).
type RepairWindow struct {
	SndWL1, SndWnd, MaxWindow, RcvWnd, RcvWup uint32
}

// Marshal encodes w.
func (w RepairWindow) Marshal() []byte {
	b := make([]byte, SizeofRepairWindow)
	for i, v := range []uint32{w.SndWL1, w.SndWnd, w.MaxWindow, w.RcvWnd, w.RcvWup} {
		binary.LittleEndian.PutUint32(b[4*i:], v)
	}
	return b
}

// bitfield packs the uapi structs' leading one-bit fields (set_current,
// set_rnext, ...): the first flag is bit 0, as GCC lays out bitfields on
// little-endian machines.
func bitfield(flags ...bool) uint32 {
	var bits uint32
	for n, f := range flags {
		if f {
			bits |= 1 << n
		}
	}
	return bits
}
