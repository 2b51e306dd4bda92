// Package ao implements the TCP Authentication Option (RFC 5925) with the
// algorithms of RFC 5926 and the others Linux accepts, byte-for-byte as
// Linux (6.7 and later) puts it on the wire, for userspace TCP stacks.
//
// MKTs (Master Key Tuples, configured as [keys.AO]) go into a [Keyring]
// with [Keyring.Add]; lookups never lock. Then, for each kind of user:
//
//   - A stack that owns its connections keeps a [Conn] per connection,
//     which caches its traffic keys (RFC 5925 §5.2), follows the SNEs
//     (§6.2) and the current and RNext keys (§7.5.2). A client calls
//     [Conn.Init], [Conn.Sign] on its SYN, [Conn.Verify] on the SYN-ACK.
//     A server calls [Listener.Accept] on a SYN, then [Conn.Sign] on its
//     SYN-ACK (which may carry payload), whose sequence number is the
//     local ISN. A connection whose handshake is known already (both ISNs,
//     SNEs, keys: another stack made it, or it is restored) starts with
//     [Conn.Init] of an Established [Endpoint]; [Conn.Endpoint] gives it
//     back. From there on every segment is [Conn.Sign] or [Conn.Verify].
//   - A tool without connections (a capture verifier, a middlebox) derives
//     a [TrafficKey] once per direction and segment type with
//     [TrafficKey.Derive], then calls [TrafficKey.Sign] or
//     [TrafficKey.Verify] per segment, with the SNE it tracks
//     ([ComputeSNE]).
//   - RSTs take the same calls: [Conn.Sign] while the connection (or its
//     TIME-WAIT) is held, a [TrafficKey] from the ISNs the stack still
//     knows otherwise (see the example for Linux's choice of key).
//
// A Conn keeps its traffic keys, SNEs and roles. A [Keyring.Delete]
// always wins (its sessions move to another key of their peer or are
// revoked), and MKTs with lifetimes (keys.Lifetime) act on the keyring's
// clock ([Keyring.Run]).
//
// Segments come as whole IPv4/IPv6 packets or as TCP segments with their
// addresses (see [segment.Segment]) and a TCP-AO option the stack laid out
// with [AppendOption]; payload is hashed where it lies. Nothing allocates
// in steady state; MACs are compared in constant time. Errors are
// sentinels for [errors.Is]; one generic [ErrBadMAC] answers every forged
// MAC. Where Linux and the RFC differ, Linux is the default and the RFC is
// an option: unknown KeyIDs are dropped (RFC 5925 §7.3 says accept; see
// [Policy.AcceptUnknownKeyID]).
package ao
