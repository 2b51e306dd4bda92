//go:build linux

package shim

import (
	"encoding/json"
	"net"
	"net/netip"
	"os"
	"time"

	"github.com/tcpsig/tcpsig/packetauth"
)

// UnseenConn is a TCP-AO session whose handshake the shim did not see and
// could not resume: its packets are dropped.
type UnseenConn struct {
	Local, Remote netip.AddrPort
	Kind          string
	Dropped       uint64
	First         time.Time
}

// Status is what the status socket serves (as JSON) and LogStatus logs.
type Status struct {
	Queue    uint16                `json:"queue"`
	Rules    string                `json:"rules"`    // how the rules queue packets (nfrules.Method)
	Overhead int                   `json:"overhead"` // option bytes added at most; the MSS clamp
	Counters packetauth.Counters   `json:"counters"`
	Conns    []packetauth.ConnInfo `json:"conns"`      // tracked sessions (TCP-AO; TCP-MD5 needs no tracking)
	Unseen   []UnseenConn          `json:"unseen"`     // TCP-AO sessions met without their handshake
	Seeded   uint64                `json:"ao_resumed"` // TCP-AO sessions resumed from the state file
	Keys     map[string]int        `json:"keys"`       // entries of the keys file: "ao", "md5"
}

// Status returns the shim's counters and tracked sessions.
func (s *Shim) Status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Status{Queue: s.cfg.Queue, Rules: string(s.method), Overhead: s.layer.Overhead(),
		Counters: s.layer.Counters(), Seeded: s.seeded,
		Keys: map[string]int{"ao": len(s.keys.AO), "md5": len(s.keys.MD5)}}
	s.layer.Conns(func(c packetauth.ConnInfo) bool {
		st.Conns = append(st.Conns, c)
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
		"unseen", len(st.Unseen), "ao_resumed", st.Seeded)
	for _, c := range st.Conns {
		s.log.Info("conn", "local", c.Local, "remote", c.Remote, "kind", c.Kind.String(), "state", c.State.String(),
			"signed", c.Signed, "verified", c.Verified, "dropped", c.Dropped, "keyid", c.CurrentKeyID, "rnext", c.RNextKeyID)
	}
	for _, u := range st.Unseen {
		s.log.Info("unseen session", "local", u.Local, "remote", u.Remote, "kind", u.Kind, "dropped", u.Dropped)
	}
}

// serveStatus answers each connection to the status socket with the
// status as JSON.
func (s *Shim) serveStatus() (net.Listener, error) {
	_ = os.Remove(s.cfg.Status) // a socket file left by a killed shim
	ln, err := net.Listen("unix", s.cfg.Status)
	if err != nil {
		return nil, err
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = json.NewEncoder(c).Encode(s.Status())
			c.Close()
		}
	}()
	return ln, nil
}
