// Package packetauth signs and verifies whole IPv4/IPv6 packets with TCP-AO
// (RFC 5925) and TCP-MD5 (RFC 2385) for a TCP stack that knows neither:
// gVisor's netstack, a kernel built without them, a TUN tool. A [Layer]
// sits between the stack and the wire:
//
//   - [Layer.Outbound] takes what the stack sends. A packet to a peer no key
//     covers is returned untouched. To a covered peer the TCP-AO option (or
//     NOP NOP + the MD5 option) is inserted first among the options, as
//     Linux lays them out, SACK blocks are dropped when the 40 option bytes
//     would be exceeded, the MAC is computed and lengths and checksums fixed.
//   - [Layer.Inbound] takes what the wire delivers. A covered peer's segment
//     is passed on only after its MAC verified, with the option overwritten
//     by NOPs, the MSS of a SYN clamped by [Layer.Overhead] and the TCP
//     checksum recomputed; anything else from a covered peer is dropped
//     (a non-nil error) and counted.
//
// In order: keyrings (ao.NewKeyring, md5sig.NewKeyring) with their keys;
// [New]; tell the stack MTU − [Layer.Overhead]; per packet [Layer.Outbound]
// or [Layer.Inbound]; [Layer.Expire] from a ticker; [Layer.Counters],
// [Layer.Conns] and [Layer.SetRNext] to watch and rotate; [Layer.Close].
//
// TCP-AO needs both ISNs: the layer learns each connection from its
// handshake (an outbound SYN starts a client, an inbound SYN that verifies
// a server, whose ISN comes from its outbound SYN-ACK), follows the SNE
// across 2^32 through an [ao.Conn], and forgets the connection on RST,
// after FIN both ways (plus Config.TimeWait), or when idle ([Layer.Expire]).
// [Layer.Seed] restores one whose handshake was not seen; [Layer.SetCurrent]
// and [Layer.SetRNext] rotate its keys, and the peer's RNextKeyID moves
// the current key as in ao. A segment to a TCP-AO peer without a tracked
// connection (the stack's RST for an unknown connection, say) cannot be
// signed and is dropped, as Linux sends no RST it cannot sign; MD5 needs
// no state. Fragments of covered peers are dropped; ICMP hard errors for
// TCP-AO connections too (RFC 5925 §7.8). Front ends report
// MTU − [Layer.Overhead] to their stack, turn GSO off and call Expire from
// a ticker.
package packetauth
