//go:build linux

package shim

import (
	"encoding/json"
	"errors"
	"os"

	"github.com/tcpsig/tcpsig/ao"
	"github.com/tcpsig/tcpsig/packetauth"
)

// shimState is the -state file: the TCP-AO sessions' state (addresses,
// ISNs, SNEs, key IDs; no key material), as ao.Conn.Endpoint gives it.
type shimState struct {
	Sessions []ao.Endpoint `json:"sessions"`
}

// saveState writes the TCP-AO sessions' state to -state, atomically.
func (s *Shim) saveState() {
	if s.cfg.State == "" {
		return
	}
	var st shimState
	s.layer.Conns(func(c packetauth.ConnInfo) bool {
		if c.Kind == packetauth.KindAO && c.State == packetauth.StateEstablished {
			if conn, ok := s.layer.Conn(c.Local, c.Remote); ok {
				st.Sessions = append(st.Sessions, conn.Endpoint())
			}
		}
		return true
	})
	b, err := json.Marshal(st)
	if err == nil {
		tmp := s.cfg.State + ".tmp"
		if err = os.WriteFile(tmp, b, 0o600); err == nil {
			err = os.Rename(tmp, s.cfg.State)
		}
	}
	if err != nil {
		s.log.Warn("writing the state file", "err", err)
	}
}

// seedFromState resumes the TCP-AO sessions of the -state file.
func (s *Shim) seedFromState() {
	if s.cfg.State == "" {
		return
	}
	b, err := os.ReadFile(s.cfg.State)
	if errors.Is(err, os.ErrNotExist) {
		return
	}
	var st shimState
	if err == nil {
		err = json.Unmarshal(b, &st)
	}
	if err != nil {
		s.log.Warn("reading the state file", "err", err)
		return
	}
	for _, e := range st.Sessions {
		if err := s.layer.Seed(e); err != nil {
			s.log.Warn("cannot resume a TCP-AO session", "local", e.Local, "remote", e.Remote, "err", err)
			continue
		}
		s.seeded++
		s.log.Info("resumed a TCP-AO session from the state file", "local", e.Local, "remote", e.Remote)
	}
}
