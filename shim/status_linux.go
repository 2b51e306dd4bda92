//go:build linux

package shim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/netip"
	"os"
	"time"

	"github.com/tcpsig/tcpsig/packetauth"
)

// UnseenConn is a TCP-AO session whose handshake the shim did not see and
// could not resume: its packets are dropped.
type UnseenConn struct {
	Local   netip.AddrPort `json:"local"`
	Remote  netip.AddrPort `json:"remote"`
	Kind    string         `json:"kind"` // "TCP-AO"
	Dropped uint64         `json:"dropped"`
	First   time.Time      `json:"first"`
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
	LocalISN     uint32         `json:"local_isn"`
	RemoteISN    uint32         `json:"remote_isn"`
	SendSNE      uint32         `json:"send_sne"`
	RecvSNE      uint32         `json:"recv_sne"`
	LastSeen     time.Time      `json:"last_seen"`
}

func connStatus(c packetauth.ConnInfo) ConnStatus {
	return ConnStatus{Local: c.Local, Remote: c.Remote, Kind: c.Kind.String(), State: c.State.String(),
		Signed: c.Signed, Verified: c.Verified, Dropped: c.Dropped, CurrentKeyID: c.CurrentKeyID, RNextKeyID: c.RNextKeyID,
		LocalISN: c.LocalISN, RemoteISN: c.RemoteISN, SendSNE: c.SendSNE, RecvSNE: c.RecvSNE, LastSeen: c.LastSeen}
}

// Status is what the status socket serves (as JSON) and LogStatus logs.
type Status struct {
	Queue    uint16         `json:"queue"`
	Rules    string         `json:"rules"`    // how the rules queue packets (nfrules.Method)
	Overhead int            `json:"overhead"` // option bytes added at most; the MSS clamp
	Counters Counters       `json:"counters"`
	Queues   []QueueStatus  `json:"queues"`     // the kernel's counters of each queue
	Conns    []ConnStatus   `json:"conns"`      // tracked sessions
	Unseen   []UnseenConn   `json:"unseen"`     // TCP-AO sessions met without their handshake
	Seeded   uint64         `json:"ao_resumed"` // TCP-AO sessions resumed from the state file
	Keys     map[string]int `json:"keys"`       // entries of the keys file: "ao", "md5"
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
		Counters: counters(s.layer.Counters()), Seeded: s.seeded, Conns: []ConnStatus{}, Unseen: []UnseenConn{},
		Keys: map[string]int{"ao": len(s.keys.AO), "md5": len(s.keys.MD5)}, Queues: []QueueStatus{}}
	for _, q := range s.queues {
		if qs, err := q.Stats(); err == nil {
			st.Queues = append(st.Queues, QueueStatus{Num: q.Num(), Waiting: qs.Waiting, QueueFull: qs.Dropped, SocketFull: qs.UserDropped})
		}
	}
	s.layer.Conns(func(c packetauth.ConnInfo) bool {
		st.Conns = append(st.Conns, connStatus(c))
		return true
	})
	for _, u := range s.unseen {
		st.Unseen = append(st.Unseen, *u)
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
			"signed", c.Signed, "verified", c.Verified, "dropped", c.Dropped, "keyid", c.CurrentKeyID, "rnext", c.RNextKeyID)
	}
	for _, u := range st.Unseen {
		s.log.Info("unseen session", "local", u.Local, "remote", u.Remote, "kind", u.Kind, "dropped", u.Dropped)
	}
}

func qsum(qs []QueueStatus, f func(QueueStatus) uint32) (n uint64) {
	for _, q := range qs {
		n += uint64(f(q))
	}
	return n
}

// serveStatus serves the status as JSON over HTTP on the unix socket
// Config.Status (GET / or /status; curl --unix-socket SOCK http://shim/).
// Only a socket no process answers on is replaced: anything else at the
// path is an error, and stays.
func (s *Shim) serveStatus() (net.Listener, error) {
	if err := removeStaleSocket(s.cfg.Status); err != nil {
		return nil, err
	}
	ln, err := net.Listen("unix", s.cfg.Status)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.serveStatusHTTP)
	mux.HandleFunc("GET /status", s.serveStatusHTTP)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return ln, nil
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
