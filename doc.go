// Package tcpsig is the root of a pure-Go engine that signs and verifies
// TCP segments with TCP-AO (RFC 5925, the algorithms of RFC 5926 and the
// others Linux accepts) and TCP-MD5 (RFC 2385), byte for byte as Linux.
// It has no API of its own (it holds the engine's benchmarks). Where to
// start: an operator runs cmd/tcpsig (tcpsig help); a program that checks
// captures uses pcapverify; one with kernel sockets, linuxsock; a
// userspace or gVisor stack, packetauth or the netstack module; a stack
// that tracks its own connections, ao and md5sig. All read keys with
// keyfile. The packages, under github.com/tcpsig/tcpsig/, top down:
//
//   - cmd/tcpsig: the command: verify captures, bench, shim
//   - pcapverify: verify a capture's segments against a keys file
//   - keyfile: the keys file (JSON) into ao.Config and md5sig.Config
//   - linuxsock: the Linux kernel's own TCP-AO and TCP-MD5 on Go sockets
//   - packetauth: whole IP packets signed/verified for a stack without either
//   - netstack: a module of its own (gVisor): netstack over packetauth
//   - ao/aopacket: TCP-AO for a stack that builds whole IP packets itself
//   - ao: TCP-AO MKTs, keyring, connections, listener, SNE, sign/verify
//   - md5sig: TCP-MD5 keys by peer prefix, sign/verify
//   - segment: zero-copy segments, pseudo-headers, packet building
//   - kdf: RFC 5926 traffic-key derivation
//   - sigpool: per-CPU pool of MAC contexts (Linux's tcp_sigpool)
//   - scratch: per-shard scratch buffers for sigpool
//   - mac: the algorithm registry; keyed, clonable MAC contexts
//   - testvectors: RFC test vectors, with loaders
//   - testvectors/linux: Linux TCP-AO captures (its guest command makes them)
//   - testvectors/md5: Linux TCP-MD5 captures
//
// internal/ holds what no program imports: the shim, its netfilter queue
// and rules, the lock-free prefix index, the deferred key wipe and the
// test harness. The README's "Using tcpsig from your module" gives the
// go.mod lines a program needs.
package tcpsig
