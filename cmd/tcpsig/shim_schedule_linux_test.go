//go:build linux

package main

import (
	"bytes"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/linuxsock"
)

// TestShimMD5ScheduleHitless: A's kernel holds one TCP-MD5 password at a
// time, as a router does; B's shim holds A's old and new passwords as a
// schedule (the new one sends from T1, the old one is accepted until
// T2). A stream runs B to A while A's password changes on the live
// socket, before T1 ("router first") or after it ("shim first"): the
// shim refuses no segment, signs with the password A uses, and the
// stream arrives whole with no reset, on the shim's own clock with no
// reload. After T2 the old password is refused, and counted.
func TestShimMD5ScheduleHitless(t *testing.T) {
	needQueue(t)
	for _, order := range []string{"router first", "shim first"} {
		t.Run(order, func(t *testing.T) {
			nsA, nsB := newPair(t)
			dir := shortDir(t)
			now := time.Now().UTC().Truncate(time.Second)
			t1, t2 := now.Add(15*time.Second), now.Add(25*time.Second)
			const f = time.RFC3339
			keyPath := writeKeys(t, dir, "keys.json", fmt.Sprintf(`{"md5": [
  {"name": "old", "peer": "%v/32", "key": "text:old-password", "send_lifetime": {"end": "%s"}, "accept_lifetime": {"end": "%s"}},
  {"name": "new", "peer": "%v/32", "key": "text:new-password", "send_lifetime": {"start": "%s"}, "accept_lifetime": {"start": "%s"}}]}`,
				addrA4, t1.Format(f), t2.Format(f), addrA4, t1.Format(f), now.Add(-time.Hour).Format(f)))
			_, sock := startShim(t, nsB, dir, "-keys", keyPath, "-queue", "48")

			old := keys.MD5{Peer: netip.PrefixFrom(addrB4, 32), Key: []byte("old-password")}
			s := startStream(t, nsA, nsB, linuxsock.ListenConfig(linuxsock.Keys{MD5: []keys.MD5{old}}))
			setPassword := func(pw string) {
				t.Helper()
				if err := linuxsock.AddMD5Key(s.accepted, keys.MD5{Peer: old.Peer, Key: []byte(pw)}); err != nil {
					t.Fatal(err)
				}
			}
			until := func(tm time.Time) { time.Sleep(time.Until(tm)) }
			s.waitBytes(t, 64<<10)
			if order == "router first" {
				if !time.Now().Before(t1) {
					t.Fatalf("the session came up after the shim's send start %v: the order cannot be tested", t1)
				}
				setPassword("new-password")
				s.waitBytes(t, s.read()+64<<10)
				until(t1.Add(time.Second))
			} else {
				until(t1.Add(time.Second))
				s.waitBytes(t, s.read()+64<<10)
				setPassword("new-password")
			}
			s.waitBytes(t, s.read()+64<<10)
			until(t2.Add(time.Second))
			s.waitBytes(t, s.read()+64<<10)
			st, err := shimStatusOf(sock)
			if err != nil {
				t.Fatal(err)
			}
			if d := st.Counters.Dropped.Total(); d != 0 {
				t.Errorf("the shim dropped %d segments during the change: %+v", d, st.Counters.Dropped)
			}
			for _, k := range st.MD5Keys {
				t.Logf("TCP-MD5 key of %v: send_lifetime_active %v, accept_lifetime_active %v, good %d", k.Peer, k.SendActive, k.AcceptActive, k.Good)
			}
			if len(st.MD5Keys) != 2 || st.MD5Keys[0].AcceptActive == st.MD5Keys[1].AcceptActive {
				t.Errorf("after T2 the keyring lists %+v: want the old key no longer accepted, the new one accepted", st.MD5Keys)
			}
			s.finish(t)
			// The old password, after its accept end: refused and counted.
			setPassword("old-password")
			_ = s.accepted.SetWriteDeadline(time.Now().Add(5 * time.Second))
			_, _ = s.accepted.Write([]byte("stale"))
			if !waitFor(20*time.Second, func() bool {
				st, err := shimStatusOf(sock)
				return err == nil && st.Counters.Dropped.BadMAC > 0
			}) {
				t.Error("a segment signed with the old password after its accept end was not refused")
			}
		})
	}
}

// mdStream is B writing to A without end until finish, A reading.
type mdStream struct {
	accepted *net.TCPConn // A's end
	dialed   net.Conn     // B's end
	mu       sync.Mutex
	got      bytes.Buffer
	stop     chan struct{}
	done     chan error
}

// startStream listens in a with lc, dials from b, and keeps b writing.
func startStream(t *testing.T, a, b *ns, lc *net.ListenConfig) *mdStream {
	t.Helper()
	s := &mdStream{stop: make(chan struct{}), done: make(chan error, 1)}
	var ln net.Listener
	if err := a.Do(func() (err error) {
		ln, err = lc.Listen(t.Context(), "tcp4", netip.AddrPortFrom(addrA4, 0).String())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if err := b.Do(func() (err error) {
		d := net.Dialer{Timeout: 10 * time.Second, LocalAddr: net.TCPAddrFromAddrPort(netip.AddrPortFrom(addrB4, 0))}
		s.dialed, err = d.Dial("tcp4", ln.Addr().String())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	s.accepted = c.(*net.TCPConn)
	t.Cleanup(func() { s.accepted.Close(); s.dialed.Close() })
	go func() {
		buf := make([]byte, 32<<10)
		for {
			n, err := s.accepted.Read(buf)
			s.mu.Lock()
			s.got.Write(buf[:n])
			s.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	go func() {
		chunk := bytes.Repeat([]byte("tcpsig schedule "), 256)
		for {
			select {
			case <-s.stop:
				s.done <- nil
				return
			case <-time.After(5 * time.Millisecond):
			}
			_ = s.dialed.SetWriteDeadline(time.Now().Add(60 * time.Second))
			if _, err := s.dialed.Write(chunk); err != nil {
				s.done <- err
				return
			}
		}
	}()
	return s
}

// read is how many bytes A has read.
func (s *mdStream) read() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.got.Len()
}

// waitBytes waits until A has read n bytes: the stream is alive.
func (s *mdStream) waitBytes(t *testing.T, n int) {
	t.Helper()
	if !waitFor(60*time.Second, func() bool { return s.read() >= n }) {
		t.Fatalf("the stream stalled at %d bytes, waiting for %d", s.read(), n)
	}
}

// finish stops B's writer and checks that what A read is what B wrote,
// in order, with no error on the way.
func (s *mdStream) finish(t *testing.T) {
	t.Helper()
	close(s.stop)
	if err := <-s.done; err != nil {
		t.Fatalf("B's writes: %v", err)
	}
	s.mu.Lock()
	got := bytes.Clone(s.got.Bytes())
	s.mu.Unlock()
	chunk := bytes.Repeat([]byte("tcpsig schedule "), 256)
	for len(got) > 0 {
		n := min(len(got), len(chunk))
		if !bytes.Equal(got[:n], chunk[:n]) {
			t.Fatal("A read another stream than B wrote")
		}
		got = got[n:]
	}
}

// TestShimAOSchedule: two plain sockets, each behind its own shim, run a
// TCP-AO session while both keys files schedule a rotation: MKT 1 sends
// until T1 and is accepted until T2, MKT 2 sends from T1 (accepted from
// before the session). With no signal and no reload, both shims move the
// session to MKT 2 both ways at T1 on their own clocks; no segment is
// refused, the stream arrives whole, and the status shows MKT 1 outside
// both lifetimes and MKT 2 inside after T2.
func TestShimAOSchedule(t *testing.T) {
	needQueue(t)
	nsA, nsB := newPair(t)
	dirA, dirB := shortDir(t), shortDir(t)
	now := time.Now().UTC().Truncate(time.Second)
	t1, t2 := now.Add(15*time.Second), now.Add(21*time.Second)
	file := func(peer netip.Addr) string { return aoScheduleFile(peer, "schedule-key", now, t1, t2) }
	_, sockA := startShim(t, nsA, dirA, "-keys", writeKeys(t, dirA, "keys.json", file(addrB4)), "-queue", "49")
	_, sockB := startShim(t, nsB, dirB, "-keys", writeKeys(t, dirB, "keys.json", file(addrA4)), "-queue", "49")
	s := startStream(t, nsA, nsB, &net.ListenConfig{})
	s.waitBytes(t, 64<<10)
	keyIDs := func(sock string) []string {
		st, err := shimStatusOf(sock)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, c := range st.Conns {
			ids = append(ids, fmt.Sprintf("%d/%d", c.CurrentKeyID, c.RNextKeyID))
		}
		return ids
	}
	if a, b := keyIDs(sockA), keyIDs(sockB); fmt.Sprint(a, b) != "[1/1] [1/1]" || !time.Now().Before(t1) {
		t.Fatalf("before T1 (%v): sessions on %v and %v, want 1/1 each", t1, a, b)
	}
	time.Sleep(time.Until(t2.Add(time.Second)))
	s.waitBytes(t, s.read()+256<<10)
	s.finish(t)
	for _, sock := range []string{sockA, sockB} {
		st, err := shimStatusOf(sock)
		if err != nil {
			t.Fatal(err)
		}
		if st.Counters.Dropped.Total() != 0 {
			t.Errorf("%s: dropped %+v", sock, st.Counters.Dropped)
		}
		for _, c := range st.Conns {
			if c.CurrentKeyID != 2 || c.RNextKeyID != 2 {
				t.Errorf("%s: session %v-%v on KeyID %d / RNext %d after T1, want 2/2", sock, c.Local, c.Remote, c.CurrentKeyID, c.RNextKeyID)
			}
		}
		for _, m := range st.MKTs {
			t.Logf("%s: MKT %d/%d send_lifetime_active %v accept_lifetime_active %v good %d", sock, m.SendID, m.RecvID, m.SendActive, m.AcceptActive, m.Good)
			if m.SendActive != (m.SendID == 2) || m.AcceptActive != (m.SendID == 2) {
				t.Errorf("%s: MKT %d after T2: send-active %v accept-active %v", sock, m.SendID, m.SendActive, m.AcceptActive)
			}
		}
	}
}

// aoScheduleFile is a keys file for peer with a TCP-AO rotation: MKT 1
// (secret PREFIX-1) sends until t1 and is accepted until t2, MKT 2
// (PREFIX-2) sends from t1 and is accepted from an hour before now.
func aoScheduleFile(peer netip.Addr, prefix string, now, t1, t2 time.Time) string {
	const f = time.RFC3339
	return fmt.Sprintf(`{"ao": [
  {"alg": "hmac(sha1)", "key": "text:%[1]s-1", "sndid": 1, "rcvid": 1, "peer": "%[2]v/32", "send_lifetime": {"end": "%[3]s"}, "accept_lifetime": {"end": "%[4]s"}},
  {"alg": "hmac(sha1)", "key": "text:%[1]s-2", "sndid": 2, "rcvid": 2, "peer": "%[2]v/32", "send_lifetime": {"start": "%[3]s"}, "accept_lifetime": {"start": "%[5]s"}}]}`,
		prefix, peer, t1.Format(f), t2.Format(f), now.Add(-time.Hour).Format(f))
}
