package md5sig

import (
	"bytes"
	"context"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/tcpsig/tcpsig/harness/usertcp"
	"github.com/tcpsig/tcpsig/keys"
)

var _ usertcp.Auth = (*PacketAuth)(nil)

// Two usertcp endpoints over an in-memory link, each signing with md5sig
// and verifying the other: the handshake, data both ways in segments up to
// the MSS, and the close all pass; with the wrong key the handshake fails
// and the listener counts the bad segments.
func TestUsertcpAuth(t *testing.T) {
	for _, tc := range []struct {
		name           string
		client, server netip.AddrPort
	}{
		{"v4", netip.MustParseAddrPort("192.0.2.1:40000"), netip.MustParseAddrPort("192.0.2.2:179")},
		{"v6", netip.MustParseAddrPort("[2001:db8::1]:40000"), netip.MustParseAddrPort("[2001:db8::2]:179")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := []byte("usertcp-md5-key")
			cring, sring := NewKeyring(nil), NewKeyring(nil)
			mustAdd(t, cring, keys.MD5{Peer: netip.PrefixFrom(tc.server.Addr(), tc.server.Addr().BitLen()), Key: key})
			mustAdd(t, sring, keys.MD5{Peer: netip.PrefixFrom(tc.client.Addr(), tc.client.Addr().BitLen()-8).Masked(), Key: key})
			a, b := usertcp.Pipe()
			req, rep := bytes.Repeat([]byte("q"), 5000), bytes.Repeat([]byte("r"), 7000)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			st, _, err := usertcp.Exchange(ctx, a, b,
				usertcp.Config{Local: tc.client, Remote: tc.server, Auth: mustPacketAuth(t, cring)},
				usertcp.Config{Local: tc.server, Auth: mustPacketAuth(t, sring)}, nil, req, rep)
			if err != nil {
				t.Fatal(err)
			}
			cc, sc := cring.Counters(), sring.Counters()
			if cc.Good == 0 || sc.Good == 0 || cc.Bad+sc.Bad+cc.Missing+sc.Missing+cc.Unexpected+sc.Unexpected != 0 {
				t.Errorf("client counters %+v, server counters %+v", cc, sc)
			}
			if st.AuthDropped != 0 {
				t.Errorf("client stats %+v", st)
			}
			t.Logf("client verified %d segments, server %d", cc.Good, sc.Good)
		})
	}

	t.Run("wrong key", func(t *testing.T) {
		client, server := netip.MustParseAddrPort("192.0.2.1:40000"), netip.MustParseAddrPort("192.0.2.2:179")
		cring, sring := NewKeyring(nil), NewKeyring(nil)
		mustAdd(t, cring, keys.MD5{Peer: netip.PrefixFrom(server.Addr(), 32), Key: []byte("wrong")})
		mustAdd(t, sring, keys.MD5{Peer: netip.PrefixFrom(client.Addr(), 32), Key: []byte("right")})
		a, b := usertcp.Pipe()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := usertcp.Accept(ctx, b, usertcp.Config{Local: server, Auth: mustPacketAuth(t, sring)})
			done <- err
		}()
		_, err := usertcp.Dial(context.Background(), a, usertcp.Config{Local: client, Remote: server,
			Auth: mustPacketAuth(t, cring), RTO: 5 * time.Millisecond, MaxRetries: 2})
		if !errors.Is(err, usertcp.ErrTimeout) {
			t.Errorf("Dial with the wrong key = %v, want ErrTimeout", err)
		}
		cancel()
		<-done
		if c := sring.Counters(); c.Bad != 3 || c.Good != 0 {
			t.Errorf("listener counters %+v, want 3 bad SYNs", c)
		}
	})
}

func mustPacketAuth(t testing.TB, r *Keyring) *PacketAuth {
	a, err := NewPacketAuth(r, 0)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
