package linuxsock

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"syscall"

	"github.com/tcpsig/tcpsig/internal/redact"
	"github.com/tcpsig/tcpsig/keyfile"
	"github.com/tcpsig/tcpsig/keys"
)

var (
	// ErrNoAO is wrapped by every TCP-AO call on a kernel without TCP-AO
	// (built without CONFIG_TCP_AO, or older than Linux 6.7) and on
	// other operating systems. It wraps errors.ErrUnsupported.
	ErrNoAO = fmt.Errorf("kernel without TCP-AO (CONFIG_TCP_AO, Linux 6.7+): %w", errors.ErrUnsupported)
	// ErrNoMD5 is wrapped by every TCP-MD5 call on a kernel without
	// TCP-MD5 (CONFIG_TCP_MD5SIG) and on other operating systems. It
	// wraps errors.ErrUnsupported.
	ErrNoMD5 = fmt.Errorf("kernel without TCP-MD5 (CONFIG_TCP_MD5SIG): %w", errors.ErrUnsupported)
	// ErrMPTCP is wrapped when the socket is a Multipath TCP socket,
	// which refuses TCP-MD5 and TCP-AO options. Go 1.24 and later make
	// listeners MPTCP by default; ListenConfig turns that off. It wraps
	// errors.ErrUnsupported.
	ErrMPTCP = fmt.Errorf("MPTCP socket, which takes no TCP-MD5 or TCP-AO keys (create it with MPTCP off): %w", errors.ErrUnsupported)
	// ErrInvalid reports an argument that cannot be encoded for the
	// kernel (no peer, an empty or over-long key, a nil socket). Values
	// the kernel itself refuses come back as its errno (errors.Is with
	// syscall.EINVAL, syscall.EEXIST, ...).
	ErrInvalid = errors.New("linuxsock: invalid argument")
	// ErrDraftAlgorithm is wrapped when a key names an algorithm of
	// draft-ietf-tcpm-tcp-ao-algs (HMAC-SHA256-128, KMAC256-128), which
	// no kernel implements; it is refused before the kernel is asked.
	// tcpsig's engine (package ao), its packet layer (packetauth, the
	// netstack module) and tcpsig shim sign with them. It wraps
	// errors.ErrUnsupported.
	ErrDraftAlgorithm = fmt.Errorf("algorithm of draft-ietf-tcpm-tcp-ao-algs, which no kernel implements (tcpsig's engine, packetauth, the netstack module and tcpsig shim do): %w", errors.ErrUnsupported)
	// ErrAlgorithmUnavailable is wrapped when the kernel answers
	// TCP_AO_ADD_KEY with ENOENT: it does not offer the key's
	// algorithm (Linux 7.2 and later keep only hmac(sha1), hmac(sha256)
	// and cmac(aes128); older kernels lack what their crypto API was
	// built without). The errno stays wrapped too. It wraps
	// errors.ErrUnsupported.
	ErrAlgorithmUnavailable = fmt.Errorf("the kernel does not offer this TCP-AO algorithm: %w", errors.ErrUnsupported)
	// ErrLifetime: a key with an RFC 8177 lifetime (keys.Lifetime), which
	// Linux's keys do not have: installed as it is, the kernel would sign
	// and accept it outside its lifetime. Add and delete keys at the
	// schedule's moments instead. It wraps keyfile.ErrLifetimeUnsupported.
	ErrLifetime = fmt.Errorf("%w: Linux's TCP-AO and TCP-MD5 keys have no lifetimes", keyfile.ErrLifetimeUnsupported)
)

// Socket is a kernel TCP socket: *net.TCPConn and *net.TCPListener are
// Sockets, and Raw makes one of a syscall.RawConn.
type Socket interface {
	SyscallConn() (syscall.RawConn, error)
}

// Raw returns c as a Socket, for a socket met as a syscall.RawConn (in a
// net.Dialer or net.ListenConfig Control function, for example).
func Raw(c syscall.RawConn) Socket { return rawSocket{c} }

type rawSocket struct{ c syscall.RawConn }

func (r rawSocket) SyscallConn() (syscall.RawConn, error) {
	if r.c == nil {
		return nil, fmt.Errorf("%w: nil syscall.RawConn", ErrInvalid)
	}
	return r.c, nil
}

// Select says which of the socket's key choices adding a TCP-AO key also
// makes it.
type Select uint8

const (
	// Current makes the key the one segments are sent with.
	Current Select = 1 << iota
	// RNext makes the key the one the peer is asked to send with
	// (RNextKeyID).
	RNext
)

// AODelete says what deleting a TCP-AO key also changes. The kernel
// refuses (EBUSY) to delete the current or RNext key of a connection
// unless a replacement is chosen in the same call.
type AODelete struct {
	SetCurrent bool  // make the key whose SendID is Current the current key
	Current    uint8 // SendID, with SetCurrent
	SetRNext   bool  // make the key whose RecvID is RNext the RNext key
	RNext      uint8 // RecvID, with SetRNext
	// Async frees the key after an RCU grace period instead of waiting
	// for one; only listening sockets may ask for it.
	Async bool
}

// AOCounters are one socket's TCP-AO segment counters (Linux's
// tcp_ao_counters; the namespace-wide sums are TcpExt TCPAOGood, TCPAOBad,
// TCPAOKeyNotFound, TCPAORequired and TCPAODroppedIcmps).
type AOCounters struct {
	Good        uint64 // segments that verified
	Bad         uint64 // segments with a wrong MAC
	KeyNotFound uint64 // segments whose KeyID matches no key
	Required    uint64 // unsigned segments dropped because TCP-AO is required
	DroppedICMP uint64 // ICMP errors ignored (AcceptICMPs off)
}

// AOInfo is a socket's TCP-AO state (TCP_AO_INFO).
type AOInfo struct {
	Current     uint8 // SendID of the key segments are sent with
	RNext       uint8 // RecvID of the key the peer is asked to send with
	Required    bool  // ao_required: unsigned segments are dropped even from peers without a key
	AcceptICMPs bool  // accept_icmps: act on ICMP errors (RFC 5925 §7.8 says ignore them)
	Counters    AOCounters
}

// AOKey is one TCP-AO key of a socket, as TCP_AO_GET_KEYS reports it:
// the key material and algorithm name are the kernel's (for cmac(aes128)
// with a key that is not 16 bytes, the reduced key under "cmac(aes)").
// Printing it never shows key bytes (keys.AO redacts them).
type AOKey struct {
	keys.AO
	Current, RNext bool   // the socket's current / RNext key
	Good, Bad      uint64 // segments this key verified / failed
}

// String describes k without its key bytes.
func (k AOKey) String() string {
	return fmt.Sprintf("%v current=%v rnext=%v good=%d bad=%d", k.AO, k.Current, k.RNext, k.Good, k.Bad)
}

// GoString is String, so %#v does not print the key either (the
// embedded keys.AO's would print the key configuration alone).
func (k AOKey) GoString() string { return k.String() }

// Format prints String for every verb (the embedded keys.AO's Format
// would otherwise print the key configuration alone).
func (k AOKey) Format(f fmt.State, _ rune) { redact.Format(f, k.String()) }

// MarshalJSON is the embedded keys.AO's JSON (key redacted) with the
// socket's view of the key, which the embedded method alone would drop.
func (k AOKey) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		MKT            keys.AO // named: embedded, its MarshalJSON would be the whole struct's
		Current, RNext bool
		Good, Bad      uint64
	}{k.AO, k.Current, k.RNext, k.Good, k.Bad})
}

// LogValue is k for log/slog: the MKT (key redacted) and the socket's
// view of it.
func (k AOKey) LogValue() slog.Value {
	return slog.GroupValue(slog.Any("mkt", k.AO), slog.Bool("current", k.Current), slog.Bool("rnext", k.RNext),
		slog.Uint64("good", k.Good), slog.Uint64("bad", k.Bad))
}

// AORepair is a connection's TCP_AO_REPAIR state: the ISNs its traffic
// keys derive from and the sequence number extensions of snd_una and
// rcv_nxt. Read and set it only in TCP_REPAIR mode.
type AORepair struct {
	LocalISN, RemoteISN uint32
	SendSNE, RecvSNE    uint32
}

// Keys is a set of keys to install on a socket, in order: Linux makes
// the last added TCP-AO key matching a peer a new connection's current
// and RNext key. A peer may have TCP-AO or TCP-MD5 keys, not both.
type Keys struct {
	AO  []keys.AO
	MD5 []keys.MD5
}

// FileKeys returns the keys of a keys file (package keyfile), in file
// order: the same file that drives the engine (each entry added to a keyring) drives
// kernel sockets through ListenConfig, Dialer and Install. A file listing
// both ends of a session serves both: a Dialer installs only the keys
// for the address it dials.
func FileKeys(f *keyfile.File) Keys {
	var k Keys
	if f == nil {
		return k
	}
	for _, e := range f.AO {
		k.AO = append(k.AO, e.Config)
	}
	for _, e := range f.MD5 {
		k.MD5 = append(k.MD5, e.Config)
	}
	return k
}

// Install adds every key of k to s (TCP-AO keys first).
func Install(s Socket, k Keys) error {
	for _, c := range k.AO {
		if err := AddAOKey(s, c, 0); err != nil {
			return err
		}
	}
	for _, c := range k.MD5 {
		if err := AddMD5Key(s, c); err != nil {
			return err
		}
	}
	return nil
}
