//go:build linux

package shim

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"

	"github.com/tcpsig/tcpsig/ao"
	"github.com/tcpsig/tcpsig/packetauth"
	"golang.org/x/sys/unix"
)

// revokedSession is a revoked session in the -state file.
type revokedSession struct {
	Local  netip.AddrPort `json:"local"`
	Remote netip.AddrPort `json:"remote"`
	Kind   string         `json:"kind"`              // "TCP-AO" or "TCP-MD5"
	L3     int            `json:"l3index,omitempty"` // its L3 domain (VRF ifindex), 0 for the default
}

// shimState is the -state file: the TCP-AO sessions' state (addresses,
// ISNs, SNEs, key IDs; no key material), as ao.Conn.Endpoint gives it.
type shimState struct {
	Sessions []ao.Endpoint `json:"sessions"`
	// Revoked are the sessions whose key a reload removed: a restarted
	// shim keeps dropping their packets until they expire.
	Revoked []revokedSession `json:"revoked,omitempty"`
}

// stateMode is the state file's mode whatever the umask: ISNs and SNEs
// help whoever would inject into the sessions.
const stateMode = 0o600

// errUnsafeState is readState's error for a state file the shim must not
// trust: not a regular file, not its user's (or root's), or writable by
// others.
var errUnsafeState = errors.New("shim: unsafe state file")

// saveState writes the TCP-AO sessions' state to -state, atomically (see
// writeFileAtomic): on an error the previous file stays whole.
func (s *Shim) saveState() {
	if s.cfg.State == "" {
		return
	}
	var st shimState
	s.layer.Conns(func(c packetauth.ConnInfo) bool {
		if c.Kind == packetauth.KindAO && c.State == packetauth.StateEstablished {
			// Export reads the session under the layer's locks: it
			// cannot be freed meanwhile. A revoked one is not exported.
			if ep, ok := s.layer.ExportL3(c.Local, c.Remote, c.L3Index); ok {
				st.Sessions = append(st.Sessions, ep)
			}
		}
		if c.Revoked {
			st.Revoked = append(st.Revoked, revokedSession{Local: c.Local, Remote: c.Remote, Kind: c.Kind.String(), L3: c.L3Index})
		}
		return true
	})
	err := writeFileAtomic(s.cfg.State, stateMode, func(w io.Writer) error {
		return json.NewEncoder(w).Encode(st)
	})
	if err != nil {
		s.log.Warn("writing the state file", "err", err)
	}
}

// writeFileAtomic replaces path with what write writes: into a new file of
// a unique name beside it (created with O_EXCL|O_NOFOLLOW, so nothing an
// attacker planted there is followed or reused), chmod'ed to mode, synced,
// renamed over path, and the directory synced. On an error before the
// rename the temporary file is removed and path is untouched.
func writeFileAtomic(path string, mode fs.FileMode, write func(io.Writer) error) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := createExcl(dir, base+".")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	// Fchmod, not the open's mode: the umask may only have narrowed that,
	// but mode is what the file must have.
	if err = f.Chmod(mode); err != nil {
		return err
	}
	if err = write(f); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp, path); err != nil {
		return err
	}
	// The rename is done: from here an error is reported, nothing removed.
	d, derr := os.Open(dir)
	if derr == nil {
		derr = d.Sync()
		d.Close()
	}
	if derr != nil {
		return fmt.Errorf("renamed, but not synced: %w", derr)
	}
	return nil
}

// createExcl creates a new file in dir whose name is prefix, random hex
// and ".tmp", opened write-only with O_CREAT|O_EXCL|O_NOFOLLOW: an
// existing name, a symlink included (even a dangling one), is never
// opened.
func createExcl(dir, prefix string) (*os.File, error) {
	var rnd [8]byte
	for range 100 {
		_, _ = rand.Read(rnd[:]) // never fails (crypto/rand)
		name := filepath.Join(dir, prefix+hex.EncodeToString(rnd[:])+".tmp")
		f, err := openExcl(name)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return f, err
	}
	return nil, fmt.Errorf("shim: no unused temporary name in %s", dir)
}

// openExcl creates path (mode 0600 before the umask) and opens it
// write-only; it fails, touching nothing, if anything is at path.
func openExcl(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
}

// readState reads the state file at path, trusting only a regular file
// (never through a symlink) owned by the shim's effective user or root and
// writable by no one else; anything else is an errUnsafeState.
func readState(path string) (shimState, error) {
	var st shimState
	// O_NONBLOCK: a FIFO planted at path must not hang the start.
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ELOOP) {
		return st, fmt.Errorf("%w: %s is a symlink", errUnsafeState, path)
	}
	if err != nil {
		return st, err
	}
	defer f.Close()
	var fi unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &fi); err != nil {
		return st, err
	}
	euid := uint32(os.Geteuid())
	switch {
	case fi.Mode&unix.S_IFMT != unix.S_IFREG:
		return st, fmt.Errorf("%w: %s is not a regular file", errUnsafeState, path)
	case fi.Uid != euid && fi.Uid != 0:
		return st, fmt.Errorf("%w: %s is owned by uid %d, not by the shim's (%d) or root", errUnsafeState, path, fi.Uid, euid)
	case fi.Mode&0o022 != 0:
		return st, fmt.Errorf("%w: %s is writable by group or others (mode %#o)", errUnsafeState, path, fi.Mode&0o777)
	}
	b, err := io.ReadAll(f)
	if err == nil {
		err = json.Unmarshal(b, &st)
	}
	return st, err
}

// seedFromState resumes the TCP-AO sessions of the -state file; a file
// readState does not trust resumes nothing.
func (s *Shim) seedFromState() {
	if s.cfg.State == "" {
		return
	}
	st, err := readState(s.cfg.State)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	if err != nil {
		s.log.Warn("reading the state file: resuming no session", "err", err)
		return
	}
	for _, r := range st.Revoked {
		kind := packetauth.KindMD5
		if r.Kind == packetauth.KindAO.String() {
			kind = packetauth.KindAO
		}
		if err := s.layer.SeedRevokedL3(r.Local, r.Remote, kind, r.L3); err != nil {
			s.log.Warn("cannot keep a revoked session's packets dropped", "local", r.Local, "remote", r.Remote, "err", err)
			continue
		}
		s.log.Info("a session revoked before the restart stays revoked: its packets are dropped", "local", r.Local, "remote", r.Remote)
	}
	for _, e := range st.Sessions {
		if err := s.layer.SeedL3(e); err != nil { // in its own L3 domain (e.L3Index)
			s.log.Warn("cannot resume a TCP-AO session", "local", e.Local, "remote", e.Remote, "err", err)
			continue
		}
		s.seeded++
		s.log.Info("resumed a TCP-AO session from the state file", "local", e.Local, "remote", e.Remote)
	}
}
