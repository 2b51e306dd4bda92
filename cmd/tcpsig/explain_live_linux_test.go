package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/tcpsig/tcpsig/harness/netns"
	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/linuxsock"
)

// TestLiveExplainMD5: tcpsig verify -i -json -explain on a veth pair
// while a kernel TCP-MD5 client whose key ends in a newline (read from a
// file with its newline) tries to reach a kernel listener: the session
// never comes up, and the summary names key-encoding for the client's
// direction, the server's entry to change, and nothing else.
func TestLiveExplainMD5(t *testing.T) {
	needNetns(t)
	if err := linuxsock.ProbeMD5(); errors.Is(err, linuxsock.ErrNoMD5) {
		t.Skip("kernel without TCP-MD5: ", err)
	}
	server, client := netip.MustParseAddrPort("192.0.2.1:1791"), netip.MustParseAddr("192.0.2.2")
	key := []byte("veth-md5-secret")
	keyPath := writeFile(t, "keys.json", []byte(fmt.Sprintf(`{"md5": [
		{"name": "server", "peer": "%v", "key": "text:%s"},
		{"name": "client", "peer": "%v", "key": "text:%s"}]}`, client, key, server.Addr(), key)))
	sink, errOut := newLiveSink(), &bytes.Buffer{}
	var code int
	err := netns.Run(func() error {
		b, err := netns.NewKeeper()
		if err != nil {
			return err
		}
		defer b.Close()
		if err := netns.AddVeth("cxvA", "cxvB", b.FD()); err != nil {
			return err
		}
		if err := netns.AddAddr("cxvA", netip.PrefixFrom(server.Addr(), 24)); err != nil {
			return err
		}
		if err := netns.LinkUp("cxvA"); err != nil {
			return err
		}
		var berr error
		doIn(b, func() {
			if berr = netns.LinkUp("cxvB"); berr == nil {
				berr = netns.AddAddr("cxvB", netip.PrefixFrom(client, 24))
			}
		})
		if berr != nil {
			return berr
		}
		ln, err := linuxsock.ListenConfig(linuxsock.Keys{MD5: []keys.MD5{{Peer: netip.PrefixFrom(client, 32), Key: key}}}).
			Listen(context.Background(), "tcp4", server.String())
		if err != nil {
			return err
		}
		defer ln.Close()
		stop := make(chan struct{})
		traffic := func() {
			defer close(stop)
			doIn(b, func() {
				d := linuxsock.Dialer(linuxsock.Keys{MD5: []keys.MD5{{Peer: netip.PrefixFrom(server.Addr(), 32), Key: append(bytes.Clone(key), '\n')}}})
				d.Timeout = 1500 * time.Millisecond
				if c, err := d.Dial("tcp4", server.String()); err == nil {
					c.Close()
					t.Error("a client with the key and a newline connected")
				}
			})
			sink.await(t, "a bad SYN", func(segs []segmentJSON) bool {
				return len(segs) > 0 && segs[len(segs)-1].Verdict == "bad"
			})
		}
		code = runLiveCLI([]string{"verify", "-json", "-explain", "-every", "100ms", "-i", "cxvA", "-port", "1791", "-keys", keyPath}, sink, errOut, traffic, stop)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	segs, sum := jsonLines(t, sink.String())
	if code != 1 || errOut.Len() != 0 || sum.Summary.Diagnoses == nil {
		t.Fatalf("exit %d, stderr %q, summary %+v", code, errOut, sum.Summary)
	}
	ds := *sum.Summary.Diagnoses
	if len(ds) != 1 || ds[0].Cause != "key-encoding" || ds[0].Entry != "server" || ds[0].To != server.String() ||
		netip.MustParseAddrPort(ds[0].From).Addr() != client {
		t.Errorf("diagnoses %+v, want key-encoding of the server's entry for the client's direction (verdicts %v)", ds, verdictsOf(segs))
	}
}
