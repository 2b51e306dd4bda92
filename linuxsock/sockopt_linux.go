//go:build linux

package linuxsock

import (
	"errors"
	"fmt"
	"net/netip"
	"reflect"
	"syscall"
	"unsafe"

	"github.com/tcpsig/tcpsig/keys"
)

const (
	soDomain     = 39  // SO_DOMAIN
	soProtocol   = 38  // SO_PROTOCOL
	ipprotoMPTCP = 262 // IPPROTO_MPTCP
)

// withFD runs f on s's file descriptor. A socket that cannot give one (a
// nil one, or one whose SyscallConn returns a nil RawConn or whose
// RawConn's Control never runs f) is ErrInvalid: never a panic, and
// never a call that did nothing and says nil.
func withFD(s Socket, f func(fd int) error) error {
	if isNil(s) {
		if s == nil {
			return fmt.Errorf("%w: nil Socket", ErrInvalid)
		}
		return fmt.Errorf("%w: nil %T", ErrInvalid, s) // (*net.TCPConn)(nil).SyscallConn panics
	}
	rc, err := s.SyscallConn()
	if err != nil {
		return fmt.Errorf("linuxsock: %w", err)
	}
	if isNil(rc) {
		return fmt.Errorf("%w: the SyscallConn of %T returned a nil syscall.RawConn", ErrInvalid, s)
	}
	ran := false
	var ferr error
	if err := rc.Control(func(fd uintptr) { ran, ferr = true, f(int(fd)) }); err != nil {
		return fmt.Errorf("linuxsock: %w", err)
	}
	if !ran {
		return fmt.Errorf("%w: the RawConn of %T did not run the call on its descriptor", ErrInvalid, s)
	}
	return ferr
}

// isNil reports whether v is nil, or a nil pointer (or map, slice, func,
// channel) in an interface, whose methods would dereference nil.
func isNil(v any) bool {
	if v == nil {
		return true
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan, reflect.UnsafePointer:
		return rv.IsNil()
	}
	return false
}

// isIPv6 reports whether fd is an AF_INET6 socket.
func isIPv6(fd int) (bool, error) {
	d, err := syscall.GetsockoptInt(fd, syscall.SOL_SOCKET, soDomain)
	if err != nil {
		return false, fmt.Errorf("linuxsock: SO_DOMAIN: %w", err)
	}
	return d == syscall.AF_INET6, nil
}

// setsockopt passes b to the kernel without copying it into a string,
// so that key material is wiped with b.
func setsockopt(fd, opt int, b []byte) error {
	_, _, e := syscall.Syscall6(syscall.SYS_SETSOCKOPT, uintptr(fd), syscall.IPPROTO_TCP, uintptr(opt),
		uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), 0)
	if e != 0 {
		return e
	}
	return nil
}

// getsockopt fills b and returns the length the kernel reported.
func getsockopt(fd, opt int, b []byte) (int, error) {
	return getsockoptLen(fd, opt, b, len(b))
}

// getsockoptLen passes optlen n with b: TCP_AO_GET_KEYS takes the size
// of one struct tcp_ao_getsockopt there, reads the array's length from
// the first one's nkeys, and writes entry i at i*l.
func getsockoptLen(fd, opt int, b []byte, n int) (int, error) {
	if n > len(b) {
		return 0, fmt.Errorf("%w: optlen %d beyond a buffer of %d", ErrInvalid, n, len(b))
	}
	l := uint32(n)
	_, _, e := syscall.Syscall6(syscall.SYS_GETSOCKOPT, uintptr(fd), syscall.IPPROTO_TCP, uintptr(opt),
		uintptr(unsafe.Pointer(&b[0])), uintptr(unsafe.Pointer(&l)), 0)
	if e != 0 {
		return 0, e
	}
	return int(l), nil
}

var optNames = map[int]string{
	optMD5Sig: "TCP_MD5SIG", optMD5SigExt: "TCP_MD5SIG_EXT", optAOAddKey: "TCP_AO_ADD_KEY",
	optAODelKey: "TCP_AO_DEL_KEY", optAOInfo: "TCP_AO_INFO", optAOGetKeys: "TCP_AO_GET_KEYS",
	optAORepair: "TCP_AO_REPAIR",
}

// sockoptError explains an errno from option opt on fd: ENOPROTOOPT is a
// kernel built without the feature or an MPTCP socket; anything else is
// the kernel's verdict on the argument, returned wrapped.
func sockoptError(fd, opt int, what string, errno error) error {
	if what != "" {
		what = " " + what
	}
	if opt == optAORepair && errors.Is(errno, syscall.EPERM) {
		// Linux checks for repair mode before it looks for TCP-AO:
		// whether it has TCP-AO at all, TCP_AO_INFO tells.
		var b [sizeAOInfo]byte
		if _, err := getsockopt(fd, optAOInfo, b[:]); errors.Is(err, syscall.ENOPROTOOPT) {
			errno = err
		}
	}
	if errors.Is(errno, syscall.ENOPROTOOPT) || errors.Is(errno, syscall.EOPNOTSUPP) {
		missing, probe := ErrNoAO, ProbeAO
		if opt == optMD5Sig || opt == optMD5SigExt {
			missing, probe = ErrNoMD5, ProbeMD5
		}
		if p, err := syscall.GetsockoptInt(fd, syscall.SOL_SOCKET, soProtocol); err == nil && p == ipprotoMPTCP {
			// An MPTCP socket answers as a kernel without the feature
			// does: a plain TCP socket tells which is the case, and a
			// missing feature comes first, since turning MPTCP off would
			// not help.
			if errors.Is(probe(), missing) {
				return fmt.Errorf("linuxsock: %s%s: %w; the socket is also an %w (%w)", optNames[opt], what, missing, ErrMPTCP, errno)
			}
			return fmt.Errorf("linuxsock: %s%s: %w (%w)", optNames[opt], what, ErrMPTCP, errno)
		}
		if errors.Is(errno, syscall.ENOPROTOOPT) {
			return fmt.Errorf("linuxsock: %s%s: %w (%w)", optNames[opt], what, missing, errno)
		}
	}
	return fmt.Errorf("linuxsock: %s%s: %w", optNames[opt], what, errno)
}

func describeAO(c keys.AO) string {
	s := fmt.Sprintf("%s peer %v ids %d/%d", c.Algorithm, c.Peer, c.SendID, c.RecvID)
	if c.HasIfIndex {
		s += fmt.Sprintf(" ifindex %d", c.IfIndex)
	}
	return s
}

func describeMD5(c keys.MD5) string {
	s := fmt.Sprintf("peer %v", c.Peer)
	if c.HasIfIndex {
		s += fmt.Sprintf(" ifindex %d", c.IfIndex)
	}
	return s
}

// AddAOKey adds the MKT c to s (TCP_AO_ADD_KEY) and, as sel says, makes
// it the current and/or RNext key (not on listeners). Keys for a
// listener or an outgoing connection go on before listen() or connect().
func AddAOKey(s Socket, c keys.AO, sel Select) error {
	if c.Lifetime.Scheduled() {
		return fmt.Errorf("%w: %s has %v", ErrLifetime, describeAO(c), c.Lifetime)
	}
	return withFD(s, func(fd int) error {
		in6, err := isIPv6(fd)
		if err != nil {
			return err
		}
		var b [sizeAOAdd]byte
		defer clear(b[:])
		if err := marshalAOAdd(b[:], c, sel, in6); err != nil {
			return err
		}
		if err := setsockopt(fd, optAOAddKey, b[:]); err != nil {
			return sockoptError(fd, optAOAddKey, describeAO(c), addAOError(c, err))
		}
		return nil
	})
}

// DeleteAOKey deletes the MKT of s that c names (peer prefix, SendID,
// RecvID and L3 index; the key bytes are ignored), choosing a new current
// or RNext key in the same call as d says (TCP_AO_DEL_KEY).
func DeleteAOKey(s Socket, c keys.AO, d AODelete) error {
	return withFD(s, func(fd int) error {
		in6, err := isIPv6(fd)
		if err != nil {
			return err
		}
		var b [sizeAODel]byte
		if err := marshalAODel(b[:], c, d, in6); err != nil {
			return err
		}
		if err := setsockopt(fd, optAODelKey, b[:]); err != nil {
			return sockoptError(fd, optAODelKey, describeAO(c), err)
		}
		return nil
	})
}

// AOKeys returns every MKT of s with its counters (TCP_AO_GET_KEYS),
// key material included.
func AOKeys(s Socket) ([]AOKey, error) {
	var keys []AOKey
	err := withFD(s, func(fd int) error {
		for n := 4; ; {
			b := marshalAOGetAll(n)
			if _, err := getsockoptLen(fd, optAOGetKeys, b, sizeAOGet); err != nil {
				clear(b)
				return sockoptError(fd, optAOGetKeys, "", err)
			}
			// nkeys comes back as the number of keys, which may exceed
			// the room given: ask again with enough.
			got := int(ne.Uint32(b[272:]))
			if got > n {
				clear(b)
				n = got
				continue
			}
			keys = make([]AOKey, got)
			for i := range keys {
				keys[i] = unmarshalAOKey(b[i*sizeAOGet:])
			}
			clear(b)
			return nil
		}
	})
	return keys, err
}

// ReadAOInfo returns s's TCP-AO state and counters (TCP_AO_INFO). A
// socket without any TCP-AO key or setting has none (ENOENT).
func ReadAOInfo(s Socket) (AOInfo, error) {
	var i AOInfo
	err := withFD(s, func(fd int) (err error) {
		i, err = readAOInfo(fd)
		return err
	})
	return i, err
}

func readAOInfo(fd int) (AOInfo, error) {
	b := make([]byte, sizeAOInfo)
	if _, err := getsockopt(fd, optAOInfo, b); err != nil {
		return AOInfo{}, sockoptError(fd, optAOInfo, "", err)
	}
	return unmarshalAOInfo(b), nil
}

// setAOInfo writes TCP_AO_INFO, keeping the socket's flags unless change
// sets them: the kernel writes ao_required and accept_icmps on every call.
func setAOInfo(s Socket, what string, change func(cur AOInfo) aoInfoSet) error {
	return withFD(s, func(fd int) error {
		cur, err := readAOInfo(fd)
		if err != nil && !errors.Is(err, syscall.ENOENT) { // ENOENT: no TCP-AO state yet
			return err
		}
		if err := setsockopt(fd, optAOInfo, marshalAOInfo(change(cur))); err != nil {
			return sockoptError(fd, optAOInfo, what, err)
		}
		return nil
	})
}

// SelectAOKeys makes the key whose SendID is sendID the current key
// and/or the key whose RecvID is recvID the RNext key, as sel says, in
// one TCP_AO_INFO call. Asking for RNext is how a rotation starts: the
// peer switches its current key when it sees the new RNextKeyID.
func SelectAOKeys(s Socket, sel Select, sendID, recvID uint8) error {
	return setAOInfo(s, fmt.Sprintf("select %d/%d", sendID, recvID), func(cur AOInfo) aoInfoSet {
		cur.Current, cur.RNext = sendID, recvID
		return aoInfoSet{setCurrent: sel&Current != 0, setRNext: sel&RNext != 0, info: cur}
	})
}

// SetAOFlags sets s's ao_required (drop unsigned segments from every
// peer, even one without a key) and accept_icmps flags (TCP_AO_INFO). On
// a listener it is inherited by the connections it accepts.
func SetAOFlags(s Socket, required, acceptICMPs bool) error {
	return setAOInfo(s, "flags", func(cur AOInfo) aoInfoSet {
		cur.Required, cur.AcceptICMPs = required, acceptICMPs
		return aoInfoSet{info: cur}
	})
}

// SetAOCounters overwrites s's five TCP-AO counters, for a restored
// connection (TCP_AO_INFO set_counters).
func SetAOCounters(s Socket, c AOCounters) error {
	return setAOInfo(s, "counters", func(cur AOInfo) aoInfoSet {
		cur.Counters = c
		return aoInfoSet{setCounters: true, info: cur}
	})
}

// ReadAORepair returns the ISNs and SNEs of s (TCP_AO_REPAIR); s must be
// in TCP_REPAIR mode (EPERM otherwise).
func ReadAORepair(s Socket) (AORepair, error) {
	var r AORepair
	err := withFD(s, func(fd int) error {
		b := make([]byte, sizeAORepair)
		if _, err := getsockopt(fd, optAORepair, b); err != nil {
			return sockoptError(fd, optAORepair, "", err)
		}
		r = unmarshalAORepair(b)
		return nil
	})
	return r, err
}

// SetAORepair sets the ISNs and SNEs of s (TCP_AO_REPAIR) so that a
// restored connection derives the same traffic keys; s must be in
// TCP_REPAIR mode (EPERM otherwise).
func SetAORepair(s Socket, r AORepair) error {
	return withFD(s, func(fd int) error {
		if err := setsockopt(fd, optAORepair, marshalAORepair(r)); err != nil {
			return sockoptError(fd, optAORepair, "", err)
		}
		return nil
	})
}

// AddMD5Key adds (or replaces) the TCP-MD5 key c on s: TCP_MD5SIG for
// one peer address, TCP_MD5SIG_EXT (Linux 4.13+) for a prefix or an L3
// domain. Keys for a listener or an outgoing connection go on before
// listen() or connect().
func AddMD5Key(s Socket, c keys.MD5) error {
	if c.Lifetime.Scheduled() {
		return fmt.Errorf("%w: the TCP-MD5 key of %v has %v", ErrLifetime, c.Peer, c.Lifetime)
	}
	return md5(s, c, false)
}

// DeleteMD5Key deletes the TCP-MD5 key c names (peer prefix and L3
// domain) from s.
func DeleteMD5Key(s Socket, c keys.MD5) error {
	return md5(s, c, true)
}

func md5(s Socket, c keys.MD5, del bool) error {
	return withFD(s, func(fd int) error {
		in6, err := isIPv6(fd)
		if err != nil {
			return err
		}
		var b [sizeMD5]byte
		defer clear(b[:])
		opt, err := marshalMD5(b[:], c, in6, del)
		if err != nil {
			return err
		}
		if err := setsockopt(fd, opt, b[:]); err != nil {
			return sockoptError(fd, opt, describeMD5(c), err)
		}
		return nil
	})
}

// ProbeAO reports whether the kernel has TCP-AO: nil, an error wrapping
// ErrNoAO, or another error if the probe could not run. It opens (and
// closes) a TCP socket in the calling thread's network namespace.
func ProbeAO() error {
	return probe(func(fd int) error {
		var b [sizeAOInfo]byte
		_, err := getsockopt(fd, optAOInfo, b[:])
		if err == nil || errors.Is(err, syscall.ENOENT) { // ENOENT: known option, no TCP-AO state yet
			return nil
		}
		return sockoptError(fd, optAOInfo, "probe", err)
	})
}

// ProbeMD5 reports whether the kernel has TCP-MD5, as ProbeAO does for
// TCP-AO.
func ProbeMD5() error {
	return probe(func(fd int) error {
		var b [sizeMD5]byte
		c := keys.MD5{Peer: netip.PrefixFrom(netip.AddrFrom4([4]byte{192, 0, 2, 1}), 32), Key: []byte{1}}
		opt, err := marshalMD5(b[:], c, false, false)
		if err != nil {
			return err
		}
		if err := setsockopt(fd, opt, b[:]); err != nil {
			return sockoptError(fd, opt, "probe", err)
		}
		return nil
	})
}

func probe(f func(fd int) error) error {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, syscall.IPPROTO_TCP)
	if err != nil {
		return fmt.Errorf("linuxsock: probe: %w", err)
	}
	defer syscall.Close(fd)
	return f(fd)
}
