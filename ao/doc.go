// Package ao implements the TCP Authentication Option (RFC 5925) with the
// algorithms of RFC 5926 and the others Linux accepts, byte-for-byte as
// Linux (6.7 and later) puts it on the wire, for userspace TCP stacks.
//
// The pieces, in RFC terms:
//
//   - an [MKT] (Master Key Tuple): peer prefix, SendID, RecvID, algorithm,
//     master key, MAC length, whether options are excluded, L3 index;
//   - a [Keyring] holding the MKTs of a listener and its connections,
//     read without locks on every segment;
//   - [SignSegment] and [VerifySegment], the per-segment core: an MKT, the
//     two ISNs, the SNE and a segment, nothing else;
//   - a [Conn]: one connection's ISNs, cached traffic keys (RFC 5925 §5.2),
//     sequence number extensions (§6.2), current and RNext keys (§7.5.2)
//     and counters; [Conn.Sign] and [Conn.Verify] are the per-segment calls;
//   - a [Listener] that verifies SYNs, starts connections and signs
//     SYN-ACKs (with payload, for server-first protocols), and signs RSTs
//     for segments that have no connection as Linux does: with ISNs from a
//     TIME-WAIT record or a syncookie ([Listener.SignReset]), or as a
//     listening socket without any ([Listener.SignListenReset]).
//
// Segments come as whole IPv4/IPv6 packets or as TCP segments with their
// addresses (see [segment.Segment]); payload is hashed where it lies. A
// Conn's two directions each own a working context and their traffic
// keys, so connections on different cores share nothing per segment; the
// connection-less calls go through a [sigpool.Pool]. Nothing allocates in
// steady state; MACs are compared in constant time. Errors are sentinels
// for [errors.Is]; one generic [ErrBadMAC] answers every forged MAC.
//
// Where Linux and the RFC differ, Linux is the default and the RFC is an
// option: unknown KeyIDs are dropped (RFC 5925 §7.3 says accept; see
// [Policy.AcceptUnknownKeyID]).
package ao
