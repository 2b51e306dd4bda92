// Package tcpsig is the root of a pure-Go engine that signs and verifies
// TCP segments with the TCP Authentication Option (TCP-AO, RFC 5925 with
// the algorithms of RFC 5926 and the others Linux accepts) and with
// TCP-MD5 (RFC 2385), byte-for-byte as Linux puts them on the wire. It is
// meant for userspace TCP stacks and for tools that check captures.
//
// This package has no API of its own: it holds the engine's benchmarks
// (bench_test.go; the results, with the machine and the command that
// produced them, are in BENCHMARKS.md). The work is done by its packages,
// from the bottom up:
//
//   - [github.com/tcpsig/tcpsig/mac]: the algorithm registry ("hmac(sha1)",
//     "cmac(aes128)", ...) and keyed MAC contexts whose keyed state can be
//     restored or cloned without running the key schedule again;
//   - [github.com/tcpsig/tcpsig/kdf]: RFC 5926 traffic-key derivation from a
//     master key prepared once;
//   - [github.com/tcpsig/tcpsig/scratch] and [github.com/tcpsig/tcpsig/sigpool]:
//     per-shard scratch buffers and the sharded pool of MAC contexts that
//     every signature goes through (the Go form of Linux's tcp_sigpool);
//   - [github.com/tcpsig/tcpsig/ao]: TCP-AO master key tuples, the lock-free
//     keyring, connections (traffic keys, sequence number extensions, key
//     rotation), and the listener side (SYN, SYN-ACK, RST);
//   - [github.com/tcpsig/tcpsig/md5sig]: TCP-MD5 keys by peer prefix and
//     L3 index, sign and verify;
//   - [github.com/tcpsig/tcpsig/segment]: zero-copy TCP segment parsing and
//     the pseudo-headers that TCP-AO and TCP-MD5 share (public, since ao and
//     md5sig take its Segment);
//   - [github.com/tcpsig/tcpsig/pcapverify]: the capture verifier;
//   - [github.com/tcpsig/tcpsig/cmd/tcpsig]: the command that verifies
//     captures and prints the benchmark table.
package tcpsig
