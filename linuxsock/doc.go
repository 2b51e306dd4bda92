// Package linuxsock configures the Linux kernel's own TCP-AO (RFC 5925)
// and TCP-MD5 (RFC 2385) on Go sockets from package keys' types, so one
// keys.AO or keys.MD5 drives the kernel here or the engine elsewhere.
//
// In order: ProbeAO / ProbeMD5 say what the kernel has;
// ListenConfig(keys).Listen or Dialer(keys).Dial install Keys (FileKeys of
// a keys file) before listen() / connect(); AddAOKey, SelectAOKeys and DeleteAOKey
// rotate keys on the live socket; ReadAOInfo and AOKeys read its counters.
// Every call takes a Socket: a *net.TCPConn, a *net.TCPListener, or Raw(c)
// of a syscall.RawConn. ListenConfig and Dialer also turn Multipath TCP
// off, which Go 1.24+ turns on for listeners and which refuses keys
// (ErrMPTCP; on a kernel without the feature, the error wraps ErrNoAO or
// ErrNoMD5 first).
//
// What each call needs from the kernel:
//
//	AddMD5Key, DeleteMD5Key   CONFIG_TCP_MD5SIG; one address: TCP_MD5SIG (any
//	                          Linux); a prefix: TCP_MD5SIG_EXT, Linux 4.13+;
//	                          an L3 domain (HasIfIndex): Linux 5.6+, and the
//	                          ifindex of a VRF (CONFIG_NET_VRF), else EINVAL.
//	AddAOKey, DeleteAOKey,    CONFIG_TCP_AO, Linux 6.7+. Algorithms are the
//	AOKeys, ReadAOInfo,       kernel's crypto API names ("hmac(sha1)",
//	SelectAOKeys, SetAOFlags, "cmac(aes128)", "hmac(sha256)", ...; RFC 5926
//	SetAOCounters             names are translated); which ones it accepts
//	                          depends on its CONFIG_CRYPTO_* options. maclen
//	                          up to 16 (the SYN's option space). IfIndex
//	                          scoping needs a VRF as for TCP-MD5.
//	ReadAORepair, SetAORepair CONFIG_TCP_AO, and the socket in TCP_REPAIR
//	                          mode (CAP_NET_ADMIN).
//
// Checked against Linux 6.12 (TCP-AO, under qemu) and 6.18 (TCP-MD5). A
// kernel without a feature (or another OS) gives ErrNoAO or ErrNoMD5, both
// wrapping errors.ErrUnsupported; other refusals are the kernel's errno,
// wrapped (syscall.EEXIST for overlapping KeyIDs, for example).
//
// A new connection's current and RNext keys are the last added matching
// the peer (an accepted one takes those its peer's SYN names); a peer has
// TCP-AO or TCP-MD5 keys, not both. Key bytes go to the kernel from a
// buffer then cleared; printing never shows them.
package linuxsock
