package main

import "os"

// "tcpsig verify" with no arguments verifies the capture built into the
// binary with its keys.
func Example_verify() {
	run([]string{"verify"}, os.Stdout, os.Stderr)
	// Output:
	// No capture given: verifying the built-in sample "bgp-hmac-sha1-rotation"
	// (engine-generated: tcpsig's ao package signing both ends, not a kernel
	// capture). A BGP session 192.0.2.1:50179 -> 192.0.2.2:179 with TCP-AO
	// HMAC-SHA-1-96: handshake, 4 exchanges, a key rotation from KeyIDs 100/200 to
	// 101/201 driven by the client, FIN close.
	//
	// flow 1: 192.0.2.1:50179 <-> 192.0.2.2:179
	//   FROM             ISN      AUTH           KEYIDS   SNE  GOOD  BAD  NO-KEY  UNSIGNED  MALFORMED  UNKNOWN-ISN
	//   192.0.2.1:50179  SYN      ao hmac(sha1)  100,101  0    12    0    0       0         0          0
	//   192.0.2.2:179    SYN-ACK  ao hmac(sha1)  200,201  0    10    0    0       0         0          0
	//
	// built-in sample: 22 packets, 22 segments checked: 22 good
	// result: every checked segment is good
	//
	// Verify your own capture: tcpsig verify -keys KEYS.json CAPTURE.pcap (tcpsig help
	// for the keys format; the sample's keys are cmd/tcpsig/testdata/demo.json).
}
