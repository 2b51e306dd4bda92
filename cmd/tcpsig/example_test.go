package main

import "os"

// "tcpsig verify" with no arguments verifies the capture built into the
// binary with its keys.
func Example_verify() {
	run([]string{"verify"}, os.Stdout, os.Stderr)
	// Output:
	// No capture given: verifying the built-in sample "hmac-sha1-v4-maclen12"
	// (captured from Linux 6.12.117, kernel to kernel on lo under qemu:
	// testvectors/linux). TCP-AO between two Linux sockets, HMAC-SHA-1-96:
	// handshake, data both ways, a key rotation driven from both ends (MKT 100/200,
	// then 101/201), FIN close.
	//
	// flow 1: 127.0.0.2:40001 <-> 127.0.0.1:40002
	//   FROM             ISN      AUTH           KEYIDS   SNE  GOOD  BAD  NO-KEY  UNSIGNED  MALFORMED  UNKNOWN-ISN
	//   127.0.0.2:40001  SYN      ao hmac(sha1)  100,101  0    26    0    0       0         0          0
	//   127.0.0.1:40002  SYN-ACK  ao hmac(sha1)  200,201  0    23    0    0       0         0          0
	//
	// built-in sample: 49 packets, 49 segments judged: 49 good
	// result: every checked segment is good
	//
	// Verify your own capture: tcpsig verify -keys KEYS.json CAPTURE.pcap (tcpsig help
	// keys for the keys format). This sample, from a clone of the repository:
	//   tcpsig verify -keys cmd/tcpsig/testdata/demo.keys.json cmd/tcpsig/testdata/demo.pcap
}
