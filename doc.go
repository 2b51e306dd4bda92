// Package tcpsig signs and verifies TCP segments with TCP-AO (RFC 5925/5926
// and the algorithms Linux and the draft add) and TCP-MD5 (RFC 2385) in
// pure Go, byte for byte as Linux; this package holds benchmarks only.
// Start with cmd/tcpsig (operators), pcapverify (captures), linuxsock,
// packetauth or netstack (stacks without TCP-AO), ao and md5sig (stacks
// that track connections); internal/ holds what they share. By floor:
//
//   - cmd/tcpsig: the command: verify captures, bench, shim
//   - pcapverify: verify a capture's segments against a keys file
//   - diagnose: name the misconfiguration behind segments that do not verify
//   - shim: tcpsig shim without the command line (Linux)
//   - shim/nfqueue: the netfilter queue client (NFQUEUE)
//   - shim/nfrules: the shim's nftables rules
//   - keyfile: the keys file (JSON) into keys.AO and keys.MD5
//   - keychain: RFC 8177/9648 key-chain documents (ietf-key-chain JSON) in and out of keys files
//   - keys: MKT and TCP-MD5 key configuration and Linux's checks of it
//   - linuxsock: the Linux kernel's own TCP-AO and TCP-MD5 on Go sockets
//   - packetauth: whole IP packets signed/verified for a stack without either
//   - netstack: a module of its own (gVisor): netstack over packetauth
//   - ao: TCP-AO MKTs, keyring, connections, listener, SNE, sign/verify
//   - md5sig: TCP-MD5 keys by peer prefix, sign/verify
//   - segment: zero-copy segments, pseudo-headers, packet building
//   - kdf: RFC 5926 traffic-key derivation
//   - sigpool: per-CPU pool of MAC contexts (Linux's tcp_sigpool), the keyrings' own
//   - scratch: per-shard scratch buffers for sigpool
//   - mac: the algorithm registry; keyed, clonable MAC contexts (under ao and md5sig)
//   - harness: the test and interop scaffolding, in these packages:
//   - harness/capture: record an interface's packets, read and write pcap
//   - harness/heapgrowth: heap growth per unit, each round in a fresh child process of the test binary
//   - harness/kstat: the kernel's TCP-MD5/TCP-AO counters
//   - harness/netns: run code in a fresh network namespace
//   - harness/nfprobe: whether this kernel can run the shim's queue
//   - harness/onpath: an on-path attacker between two namespaces, for tests
//   - harness/proc: the end-to-end tests' helper processes
//   - harness/tcprepair: Linux's TCP_REPAIR socket options
//   - harness/usertcp: a userspace TCP endpoint over TUN
//   - harness/vrfproof: VRF-bound TCP-MD5 keys, proven on the kernel
//   - testvectors: RFC test vectors, with loaders
//   - testvectors/linux: Linux TCP-AO captures (harness/kernellab records them)
//   - testvectors/md5: Linux TCP-MD5 captures
package tcpsig
