//go:build linux

package main

import (
	"strings"
	"testing"
	"time"
)

// TestBIRDMD5Shim: BIRD A with a kernel TCP-MD5 password, BIRD B with none
// behind tcpsig shim holding the same key: the session comes up and
// routes cross, with A's kernel counting no MD5 failure; with a wrong key
// in the shim it never comes up, and the side that receives the
// other's SYNs counts them as failures (A's kernel, or the shim). Both
// who-connects-first orders, IPv4 and IPv6.
func TestBIRDMD5Shim(t *testing.T) {
	needBIRD(t)
	needQueue(t)
	const secret = "tcpsig-bird-secret"
	for _, fam := range []string{"v4", "v6"} {
		for _, order := range []string{"A-connects", "B-connects"} {
			for _, key := range []string{"good", "wrong"} {
				t.Run(fam+"/"+order+"/"+key+"-key", func(t *testing.T) {
					v6 := fam == "v6"
					nsA, nsB := newPair(t)
					dir := shortDir(t)
					sa, sb := birdPair(v6)
					sa.password = secret
					if order == "A-connects" {
						sb.passive = true
					} else {
						sa.passive = true
					}
					shimKey := secret
					if key == "wrong" {
						shimKey = "not-the-secret"
					}
					keys := writeKeys(t, dir, "keys.json", fmtKeysMD5(sa.me, shimKey))
					sh, sock := startShim(t, nsB, dir, "-keys", keys, "-queue", "41")
					before := md5Counters(t, nsA)
					b := startBIRD(t, nsB, dir, "b", sb)
					a := startBIRD(t, nsA, dir, "a", sa)
					if key == "good" {
						if !waitFor(30*time.Second, func() bool { return a.established() && b.established() }) {
							t.Fatalf("no Established session:\nA: %s\nB: %s", a.birdc("show", "protocols", "all", "peer"), b.birdc("show", "protocols", "all", "peer"))
						}
						if !waitFor(10*time.Second, func() bool { return a.hasRoute(sb.route) && b.hasRoute(sa.route) }) {
							t.Errorf("routes not exchanged:\nA: %s\nB: %s", a.birdc("show", "route"), b.birdc("show", "route"))
						}
						after := md5Counters(t, nsA)
						if after.Failure != before.Failure || after.NotFound != before.NotFound {
							t.Errorf("A's kernel: TCPMD5Failure %d -> %d, TCPMD5NotFound %d -> %d; want no change", before.Failure, after.Failure, before.NotFound, after.NotFound)
						}
						st, err := shimStatusOf(sock)
						if err != nil {
							t.Fatal(err)
						}
						if st.Counters.Signed == 0 || st.Counters.Verified == 0 || st.Counters.Dropped.BadMAC != 0 {
							t.Errorf("shim counters %+v: want signed and verified packets, no bad MAC", st.Counters)
						}
						t.Logf("A %s; shim signed %d, verified %d; A's TCPMD5Failure %d", strings.Fields(lastLine(a.birdc("show", "protocols", "peer")))[5],
							st.Counters.Signed, st.Counters.Verified, after.Failure)
					} else {
						if waitFor(8*time.Second, func() bool { return a.established() || b.established() }) {
							t.Fatalf("Established with a wrong key in the shim:\nA: %s", a.birdc("show", "protocols", "all", "peer"))
						}
						after := md5Counters(t, nsA)
						st, err := shimStatusOf(sock)
						if err != nil {
							t.Fatal(err)
						}
						// When B connects, its SYNs reach A signed with the
						// wrong key: A's kernel counts them. When A connects,
						// B's shim refuses A's SYNs (B never answers): the
						// shim counts them.
						if order == "B-connects" && after.Failure == before.Failure {
							t.Errorf("A's kernel TCPMD5Failure stayed %d with a wrong key in B's shim", after.Failure)
						}
						if order == "A-connects" && st.Counters.Dropped.BadMAC == 0 {
							t.Errorf("shim counters %+v: A's SYNs signed with the other key not counted as bad MAC", st.Counters)
						}
						t.Logf("wrong key: never Established; A's kernel TCPMD5Failure %d -> %d; shim dropped %d for a bad MAC", before.Failure, after.Failure, st.Counters.Dropped.BadMAC)
					}
					if err := stopShim(sh); err != nil {
						t.Errorf("shim exit on SIGTERM: %v", err)
					}
					if !rulesExist(t, nsB, "tcpsig-shim-41") {
						t.Error("no rules left after SIGTERM")
					}
					uninstall(t, nsB, 41)
				})
			}
		}
	}
}
