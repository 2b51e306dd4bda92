package main

import (
	"os"
	"testing"
)

// TestVerifyLinuxsockCapture runs verify on the capture the qemu guest's
// linuxsock-ao case recorded (testvectors/linux/linuxsock): Linux 6.12
// sockets configured through package linuxsock from a keys file, for
// every algorithm Linux accepts, IPv4 and IPv6, maclen 4..16, options
// excluded or not, two rotations. Given the very keys file those
// programs loaded, every segment is good; with one MAC byte changed, not.
func TestVerifyLinuxsockCapture(t *testing.T) {
	const dir = "../../testvectors/linux/linuxsock/"
	keys, capFile := dir+"linuxsock-keys.json", dir+"linuxsock-ao.pcap"
	code, out, errOut := cli(t, "verify", "-json", "-keys", keys, capFile)
	segs, sum := jsonLines(t, out)
	v := verdictsOf(segs)
	if code != 0 || len(segs) == 0 || v["good"] != len(segs) || sum.Summary.Checked != sum.Summary.Packets {
		t.Fatalf("exit %d, %d packets, %d segments judged, verdicts %v (%s)", code, sum.Summary.Packets, sum.Summary.Checked, v, errOut)
	}
	t.Logf("%d packets, every one judged good", sum.Summary.Packets)

	// The same capture with the last byte of its last frame (a MAC byte:
	// Linux puts the option first, and a segment without payload ends
	// with its options) flipped.
	b, err := os.ReadFile(capFile)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-1] ^= 1
	code, out, _ = cli(t, "verify", "-json", "-keys", keys, writeFile(t, "bent.pcap", b))
	segs, _ = jsonLines(t, out)
	if v := verdictsOf(segs); code != 1 || v["bad"] != 1 {
		t.Errorf("one flipped byte: exit %d, verdicts %v", code, v)
	}
}
