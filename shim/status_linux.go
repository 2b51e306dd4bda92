//go:build linux

package shim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/tcpsig/tcpsig/packetauth"
	"golang.org/x/sys/unix"
)

// UnseenConn is a TCP-AO session whose handshake the shim did not see and
// could not resume: its packets are dropped. Evidence says how sure the
// shim is that it is a real session rather than forged segments: "local"
// (the local stack sent on it, which no forger can make it do),
// "persisting" (only the peer's segments, over more than a second) or
// "once" (only the peer's, within a second; a flood of forgeries with
// made-up ports is this). The table keeps at most 1024 and evicts the
// least recently seen of the lowest evidence first.
type UnseenConn struct {
	Local    netip.AddrPort `json:"local"`
	Remote   netip.AddrPort `json:"remote"`
	Kind     string         `json:"kind"` // "TCP-AO"
	Evidence string         `json:"evidence"`
	Dropped  uint64         `json:"dropped"`
	First    time.Time      `json:"first"`
	Last     time.Time      `json:"last"`
}

// UnseenTotals count what the unseen table let go under pressure.
type UnseenTotals struct {
	// Evicted: entries let go for room (or refused it, the table full of
	// better evidence), by their evidence.
	Evicted map[string]uint64 `json:"evicted"`
	// LogSuppressed: first sights not logged, the rate limit reached.
	LogSuppressed uint64 `json:"log_suppressed"`
}

// ConnStatus is one tracked session in the status: kinds and states are
// the words the SIGUSR1 log prints, and the JSON names its keys.
type ConnStatus struct {
	Local        netip.AddrPort `json:"local"`
	Remote       netip.AddrPort `json:"remote"`
	Kind         string         `json:"kind"`  // "TCP-AO" or "TCP-MD5"
	State        string         `json:"state"` // "syn-sent", "syn-received", "established" or "closing"
	Signed       uint64         `json:"signed"`
	Verified     uint64         `json:"verified"`
	Dropped      uint64         `json:"dropped"`
	CurrentKeyID uint8          `json:"keyid"` // TCP-AO: the KeyID sent
	RNextKeyID   uint8          `json:"rnext"` // TCP-AO: the RNextKeyID sent
	// Settled: TCP-AO, the session sends with the newest key of its
	// peer's schedule and asks for it (its rotation is complete here).
	Settled   bool      `json:"rotation_done,omitempty"`
	LocalISN  uint32    `json:"local_isn"`
	RemoteISN uint32    `json:"remote_isn"`
	SendSNE   uint32    `json:"send_sne"`
	RecvSNE   uint32    `json:"recv_sne"`
	LastSeen  time.Time `json:"last_seen"`
	Revoked   bool      `json:"revoked,omitempty"` // its key went away on a reload: its packets are dropped until it expires
}

func connStatus(c packetauth.ConnInfo) ConnStatus {
	return ConnStatus{Local: c.Local, Remote: c.Remote, Kind: c.Kind.String(), State: c.State.String(),
		Signed: c.Signed, Verified: c.Verified, Dropped: c.Dropped, CurrentKeyID: c.CurrentKeyID, RNextKeyID: c.RNextKeyID,
		LocalISN: c.LocalISN, RemoteISN: c.RemoteISN, SendSNE: c.SendSNE, RecvSNE: c.RecvSNE, LastSeen: c.LastSeen, Revoked: c.Revoked, Settled: c.Settled}
}

// Status is what the status socket serves (as JSON) and LogStatus logs.
type Status struct {
	Queue    uint16        `json:"queue"`
	Rules    string        `json:"rules"`    // how the rules queue packets (nfrules.Method)
	Overhead int           `json:"overhead"` // option bytes added at most; the MSS clamp
	Counters Counters      `json:"counters"`
	Queues   []QueueStatus `json:"queues"`     // the kernel's counters of each queue
	Conns    []ConnStatus  `json:"conns"`      // tracked sessions
	Unseen   []UnseenConn  `json:"unseen"`     // TCP-AO sessions met without their handshake, the best evidence first
	Seeded   uint64        `json:"ao_resumed"` // TCP-AO sessions resumed from the state file
	// QueueMalformed: queued packets dropped because the kernel's message
	// did not parse or their verdict could not carry the rewritten packet.
	QueueMalformed uint64         `json:"queue_malformed"`
	Keys           map[string]int `json:"keys"` // entries of the keys file: "ao", "md5"
	// UnseenTotals: what the unseen table let go under pressure.
	UnseenTotals UnseenTotals `json:"unseen_totals"`
	// MKTs is every MKT the TCP-AO keyring holds, read from the keyring
	// itself: a key that is there though the file no longer names it
	// shows (InFile false) rather than verifying unseen.
	MKTs []MKTStatus `json:"ao_mkts"`
	// MD5Keys is every key the TCP-MD5 keyring holds, likewise.
	MD5Keys []MD5KeyStatus `json:"md5_keys"`
	// Diagnoses is each peer prefix's last diagnosed drop, by prefix.
	Diagnoses []DiagnosisStatus `json:"diagnoses"`
}

// MKTStatus is one MKT of the TCP-AO keyring in the status; never its key.
type MKTStatus struct {
	Peer      netip.Prefix `json:"peer"`
	SendID    uint8        `json:"sndid"`
	RecvID    uint8        `json:"rcvid"`
	Algorithm string       `json:"alg"`
	MACLen    int          `json:"maclen"`
	IfIndex   *int         `json:"ifindex,omitempty"` // the L3 domain it is bound to, if any
	Good      uint64       `json:"good"`              // segments it verified
	BadMAC    uint64       `json:"bad_mac"`           // segments whose MAC it refused
	InFile    bool         `json:"in_file"`           // the keys file in use names it
	// SendActive and AcceptActive: the key is inside its send and its
	// accept lifetime now (RFC 8177's send-lifetime-active and
	// accept-lifetime-active; always true for a key without lifetimes).
	SendActive   bool `json:"send_lifetime_active"`
	AcceptActive bool `json:"accept_lifetime_active"`
}

// MD5KeyStatus is one key of the TCP-MD5 keyring in the status; never
// its bytes.
type MD5KeyStatus struct {
	Peer         netip.Prefix `json:"peer"`
	IfIndex      *int         `json:"ifindex,omitempty"`
	Good         uint64       `json:"good"`
	BadMAC       uint64       `json:"bad_mac"`
	InFile       bool         `json:"in_file"`
	SendActive   bool         `json:"send_lifetime_active"`
	AcceptActive bool         `json:"accept_lifetime_active"`
}

// md5Status lists the keys of s's TCP-MD5 keyring. Under s.mu.
func (s *Shim) md5Status() []MD5KeyStatus {
	list := []MD5KeyStatus{}
	for _, k := range s.md5Ring.Keys() {
		good, bad := k.Counters()
		st := MD5KeyStatus{Peer: k.Peer(), Good: good, BadMAC: bad, InFile: slices.Contains(s.md5Key, k),
			SendActive: k.SendActive(), AcceptActive: k.AcceptActive()}
		if ifi, ok := k.IfIndex(); ok {
			st.IfIndex = &ifi
		}
		list = append(list, st)
	}
	return list
}

// mktStatus lists the MKTs of s's TCP-AO keyring, in order of addition.
// Under s.mu.
func (s *Shim) mktStatus() []MKTStatus {
	list := []MKTStatus{}
	inFile := s.aoInFile()
	for _, m := range s.aoRing.MKTs() {
		good, bad := m.Counters()
		st := MKTStatus{Peer: m.Peer(), SendID: m.SendID(), RecvID: m.RecvID(), Algorithm: m.Algorithm().Name(),
			MACLen: m.MACLen(), Good: good, BadMAC: bad, InFile: inFile[m], SendActive: m.SendActive(), AcceptActive: m.AcceptActive()}
		if ifi, ok := m.IfIndex(); ok {
			st.IfIndex = &ifi
		}
		list = append(list, st)
	}
	return list
}

// QueueStatus is the kernel's count of one queue's packets
// (nfqueue.Stats): the full queue's and full socket's drops mean the shim
// fell behind (TCP retransmits them; none passed unanswered).
type QueueStatus struct {
	Num        uint16 `json:"num"`
	Waiting    uint32 `json:"waiting"`     // waiting for a verdict now
	QueueFull  uint32 `json:"queue_full"`  // dropped: the queue was full
	SocketFull uint32 `json:"socket_full"` // dropped: the socket's buffer was full
}

// Counters are the layer's totals (packetauth.Counters) under the names
// the log uses.
type Counters struct {
	Passed   uint64 `json:"passed"`   // packets of peers no key covers, untouched
	Signed   uint64 `json:"signed"`   // outbound packets signed
	Verified uint64 `json:"verified"` // inbound packets whose MAC verified
	Dropped  Drops  `json:"dropped"`  // refused, by reason
	Tracked  uint64 `json:"tracked"`  // sessions tracked now
	Started  uint64 `json:"started"`  // sessions learnt from a handshake or the state file
	Closed   uint64 `json:"closed"`   // sessions freed on RST or FIN both ways
	Expired  uint64 `json:"expired"`  // sessions freed for being idle
}

// Drops are packetauth.Drops under the names the log uses.
type Drops struct {
	BadMAC      uint64 `json:"bad_mac"`
	Unsigned    uint64 `json:"unsigned"`
	KeyNotFound uint64 `json:"key_not_found"`
	NoConn      uint64 `json:"no_conn"`
	Fragment    uint64 `json:"fragment"`
	NoRoom      uint64 `json:"no_room"`
	Malformed   uint64 `json:"malformed"`
	Full        uint64 `json:"full"`
	ICMP        uint64 `json:"icmp"`
	Other       uint64 `json:"other"`
}

// Total returns the number of dropped packets.
func (d Drops) Total() uint64 { return packetauth.Drops(d).Total() }

func counters(c packetauth.Counters) Counters {
	return Counters{Passed: c.Passed, Signed: c.Signed, Verified: c.Verified, Dropped: Drops(c.Dropped),
		Tracked: c.Tracked, Started: c.Started, Closed: c.Closed, Expired: c.Expired}
}

// Status returns the shim's counters and tracked sessions.
func (s *Shim) Status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Status{Queue: s.cfg.Queue, Rules: string(s.method), Overhead: s.layer.Overhead(),
		Counters: counters(s.layer.Counters()), Seeded: s.seeded, QueueMalformed: s.malformed.Load(), Conns: []ConnStatus{}, Unseen: []UnseenConn{},
		Keys: map[string]int{"ao": len(s.keys.AO), "md5": len(s.keys.MD5)}, Queues: []QueueStatus{}, MKTs: s.mktStatus(), MD5Keys: s.md5Status()}
	for _, q := range s.queues {
		if qs, err := q.Stats(); err == nil {
			st.Queues = append(st.Queues, QueueStatus{Num: q.Num(), Waiting: qs.Waiting, QueueFull: qs.Dropped, SocketFull: qs.UserDropped})
		}
	}
	s.layer.Conns(func(c packetauth.ConnInfo) bool {
		st.Conns = append(st.Conns, connStatus(c))
		return true
	})
	st.Unseen = s.unseen.list()
	st.Diagnoses = s.obs.explain.diagnoses()
	c := s.unseen.counts()
	st.UnseenTotals = UnseenTotals{Evicted: map[string]uint64{}, LogSuppressed: c.suppressed}
	for l, n := range c.evicted {
		st.UnseenTotals.Evicted[unseenEvidence[l]] = n
	}
	return st
}

// LogStatus logs the status, one line per session.
func (s *Shim) LogStatus() {
	st := s.Status()
	s.log.Info("status", "rules", st.Rules, "conns", len(st.Conns), "passed", st.Counters.Passed,
		"signed", st.Counters.Signed, "verified", st.Counters.Verified, "dropped", st.Counters.Dropped.Total(),
		"bad_mac", st.Counters.Dropped.BadMAC, "unsigned", st.Counters.Dropped.Unsigned, "no_conn", st.Counters.Dropped.NoConn,
		"unseen", len(st.Unseen), "ao_resumed", st.Seeded, "queue_full", qsum(st.Queues, func(q QueueStatus) uint32 { return q.QueueFull }),
		"socket_full", qsum(st.Queues, func(q QueueStatus) uint32 { return q.SocketFull }))
	for _, c := range st.Conns {
		s.log.Info("conn", "local", c.Local, "remote", c.Remote, "kind", c.Kind, "state", c.State,
			"signed", c.Signed, "verified", c.Verified, "dropped", c.Dropped, "keyid", c.CurrentKeyID, "rnext", c.RNextKeyID,
			"rotation_done", c.Settled)
	}
	for _, m := range st.MKTs {
		s.log.Info("TCP-AO key", "peer", m.Peer, "sndid", m.SendID, "rcvid", m.RecvID, "alg", m.Algorithm,
			"good", m.Good, "bad_mac", m.BadMAC, "in_file", m.InFile,
			"send_lifetime_active", m.SendActive, "accept_lifetime_active", m.AcceptActive)
	}
	for _, k := range st.MD5Keys {
		s.log.Info("TCP-MD5 key", "peer", k.Peer, "good", k.Good, "bad_mac", k.BadMAC, "in_file", k.InFile,
			"send_lifetime_active", k.SendActive, "accept_lifetime_active", k.AcceptActive)
	}
	for _, d := range st.Diagnoses {
		s.log.Info("diagnosis", "peer", d.Peer, "cause", d.Cause, "fix", d.Message, "entry", d.Entry, "remote", d.Remote, "at", d.At)
	}
	for _, u := range st.Unseen {
		s.log.Info("unseen session", "local", u.Local, "remote", u.Remote, "kind", u.Kind, "evidence", u.Evidence, "dropped", u.Dropped)
	}
}

func qsum(qs []QueueStatus, f func(QueueStatus) uint32) (n uint64) {
	for _, q := range qs {
		n += uint64(f(q))
	}
	return n
}

// statusMode is the status socket's mode whatever the umask: the status
// shows sessions' addresses, ISNs, SNEs and KeyIDs.
const statusMode = 0o600

// serveStatus serves the status as JSON over HTTP on the unix socket
// Config.Status (GET / or /status; curl --unix-socket SOCK http://shim/).
// Only a socket no process answers on is replaced: anything else at the
// path is an error, and stays. The socket is statusMode, a directory the
// shim creates for it 0700, and only root and the shim's own user are
// answered (see peerListener).
func (s *Shim) serveStatus() (net.Listener, error) {
	if err := removeStaleSocket(s.cfg.Status); err != nil {
		return nil, err
	}
	if err := mkdirPrivate(filepath.Dir(s.cfg.Status)); err != nil {
		return nil, err
	}
	ln, err := listenPrivate(s.cfg.Status)
	if err != nil {
		return nil, err
	}
	pl := &peerListener{Listener: ln, uid: uint32(os.Geteuid()), refusals: refusalLog{log: s.log, now: time.Now}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.serveStatusHTTP)
	mux.HandleFunc("GET /status", s.serveStatusHTTP)
	mux.Handle("GET /metrics", s.metricsHandler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(pl) }()
	return pl, nil
}

// listenPrivate listens on a unix socket at path whose mode is statusMode
// from its creation on: never more open (listenUnixMode), and chmod'ed
// exactly only if the umask took away the owner's bits.
func listenPrivate(path string) (net.Listener, error) {
	ln, err := listenUnixMode(path, statusMode)
	if err != nil {
		return nil, err
	}
	if err := chmodSocket(path, statusMode); err != nil {
		ln.Close()
		return nil, err
	}
	return ln, nil
}

// listenUnixMode listens on a unix socket at path created with mode less
// the umask: the socket is fchmod'ed before bind(2), whose new inode Linux
// gives the socket's mode less the umask (unix_bind_bsd), so there is no
// moment at which the path is more open than mode.
func listenUnixMode(path string, mode fs.FileMode) (net.Listener, error) {
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		var err error
		if cerr := c.Control(func(fd uintptr) { err = unix.Fchmod(int(fd), uint32(mode)) }); cerr != nil {
			return cerr
		}
		return err
	}}
	return lc.Listen(context.Background(), "unix", path)
}

// chmodSocket sets the mode of the socket at path if it is not mode
// already, never through a symlink.
func chmodSocket(path string, mode fs.FileMode) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	if fi.Mode().Type() != fs.ModeSocket {
		return fmt.Errorf("%w: %s is no longer the shim's socket", ErrStatusPath, path)
	}
	if fi.Mode().Perm() == mode {
		return nil
	}
	err = unix.Fchmodat(unix.AT_FDCWD, path, uint32(mode), unix.AT_SYMLINK_NOFOLLOW)
	if errors.Is(err, unix.EOPNOTSUPP) { // no fchmodat2 (Linux < 6.6): it was a socket just now
		err = os.Chmod(path, mode)
	}
	return err
}

// mkdirPrivate makes sure dir exists: what is missing of it is created
// with mode 0700 whatever the umask; what exists is left as it is.
func mkdirPrivate(dir string) error {
	fi, err := os.Stat(dir)
	if err == nil {
		if !fi.IsDir() {
			return fmt.Errorf("%w: %s is not a directory", ErrStatusPath, dir)
		}
		return nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := mkdirPrivate(filepath.Dir(dir)); err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		if fi, serr := os.Stat(dir); errors.Is(err, fs.ErrExist) && serr == nil && fi.IsDir() {
			return nil // made meanwhile by someone else: theirs
		}
		return err
	}
	if fi, err := os.Lstat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		return os.Chmod(dir, 0o700) // the umask took the owner's bits
	}
	return nil
}

// peerListener hands the status server only connections from root or the
// shim's own user (uid), as SO_PEERCRED tells at connect time: the socket's
// mode alone would trust whatever the path's directories let through.
// Others are closed unanswered and logged by refusals.
type peerListener struct {
	net.Listener
	uid      uint32
	refusals refusalLog
}

// Accept returns the next connection of root or the shim's user, closing
// the others it meets on the way.
func (l *peerListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		cred, err := peerCred(c)
		if err == nil && allowedPeer(cred.Uid, l.uid) {
			return c, nil
		}
		c.Close()
		l.refusals.refused(cred, err)
	}
}

// allowedPeer reports whether a status client of uid peer may read the
// status of a shim running as uid self.
func allowedPeer(peer, self uint32) bool { return peer == 0 || peer == self }

// errNoPeerCred is peerCred's error for a connection with no descriptor
// to ask.
var errNoPeerCred = errors.New("shim: status connection without a socket descriptor")

// peerCred returns the credentials c's peer had when it connected.
func peerCred(c net.Conn) (*unix.Ucred, error) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil, errNoPeerCred
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil, err
	}
	var cred *unix.Ucred
	cerr := raw.Control(func(fd uintptr) { cred, err = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED) })
	if cerr != nil {
		return nil, cerr
	}
	return cred, err
}

// refusalEvery is the least time between two warnings of refused status
// clients; the refusals in between are counted in the next one.
const refusalEvery = 10 * time.Second

// refusalLog warns of refused status clients, at most once per
// refusalEvery, so a local user looping on connect cannot flood the log.
type refusalLog struct {
	log        *slog.Logger
	now        func() time.Time
	mu         sync.Mutex
	last       time.Time // of the last warning
	suppressed int       // refusals since it not warned of
}

// refused warns of one refused client (cred nil if it could not be read,
// err then saying why), unless a warning was given less than refusalEvery
// ago.
func (r *refusalLog) refused(cred *unix.Ucred, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	if !r.last.IsZero() && now.Sub(r.last) < refusalEvery {
		r.suppressed++
		return
	}
	args := []any{"suppressed", r.suppressed}
	if cred != nil {
		args = append(args, "uid", cred.Uid, "gid", cred.Gid, "pid", cred.Pid)
	}
	if err != nil {
		args = append(args, "err", err)
	}
	r.log.Warn("status socket: refused a client neither root nor the shim's user", args...)
	r.last, r.suppressed = now, 0
}

func (s *Shim) serveStatusHTTP(w http.ResponseWriter, _ *http.Request) {
	b, err := json.MarshalIndent(s.Status(), "", "  ")
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(append(b, '\n'))
}

// ReadStatus reads a running shim's status from its status socket, as
// curl --unix-socket does: GET / over HTTP, the answer decoded as JSON.
func ReadStatus(ctx context.Context, sock string) (Status, error) {
	var st Status
	c := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		}}}
	defer c.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://shim/", nil)
	if err != nil {
		return st, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return st, fmt.Errorf("shim status: %s", resp.Status)
	}
	err = json.NewDecoder(resp.Body).Decode(&st)
	return st, err
}

// ErrStatusPath is serveStatus's error when the -status path holds
// something other than a stale socket.
var ErrStatusPath = errors.New("shim: status path in use")

// removeStaleSocket removes the socket a killed shim left at path; a
// socket something still answers on, or anything not a socket, is an
// ErrStatusPath and stays.
func removeStaleSocket(path string) error {
	stale, err := staleSocket(path)
	if err != nil || !stale {
		return err
	}
	return os.Remove(path)
}

// checkStatusPath is New's early look at the status path: what
// removeStaleSocket would refuse there is an error before anything is
// installed.
func checkStatusPath(path string) error {
	if path == "" {
		return nil
	}
	_, err := staleSocket(path)
	return err
}

// staleSocket reports whether path is a socket nothing answers on; nothing
// at path is (false, nil), anything else an ErrStatusPath.
func staleSocket(path string) (bool, error) {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if fi.Mode().Type() != fs.ModeSocket {
		what := "a " + fi.Mode().Type().String()
		switch {
		case fi.Mode().IsRegular():
			what = "a regular file"
		case fi.IsDir():
			what = "a directory"
		}
		return false, fmt.Errorf("%w: %s is %s, not a socket: not removed", ErrStatusPath, path, what)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if c, err := (&net.Dialer{}).DialContext(ctx, "unix", path); err == nil {
		c.Close()
		return false, fmt.Errorf("%w: %s answers: another shim serves its status there", ErrStatusPath, path)
	}
	return true, nil
}
