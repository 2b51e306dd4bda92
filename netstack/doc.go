// Package netstack gives gVisor's netstack (gvisor.dev/gvisor/pkg/tcpip)
// TCP-AO (RFC 5925) and TCP-MD5 (RFC 2385) without patching gVisor: an
// [Endpoint] wraps any stack.LinkEndpoint — a TUN device's fdbased
// endpoint, a channel endpoint, wireguard-go's netstack device — and
// passes every packet through a [packetauth.Layer] built from the
// engine's keyrings (a keys file: package keyfile).
//
//	aoRing, md5Ring := ao.NewKeyring(nil), md5sig.NewKeyring(nil)
//	_, err := aoRing.AddAll(f.AOConfigs()) // f from keyfile.Load; all or none
//	_, err = md5Ring.AddAll(f.MD5Configs())
//	layer, _ := packetauth.New(packetauth.Config{AO: aoRing, MD5: md5Ring, StackChecksums: true})
//	ep, _ := netstack.New(child, layer)
//	s.CreateNIC(1, ep) // gonet.DialContextTCP, gonet.ListenTCP as usual
//
// Segments to and from peers a key covers are signed on the way out and
// verified on the way in; the stack never sees a covered peer's segment
// whose MAC did not verify, nor the option itself (the layer overwrites
// it with NOPs and clamps the peer's MSS). Everything else passes
// untouched. The endpoint reports the child's MTU less
// [packetauth.Layer.Overhead], so a full-sized segment still fits once
// the option is in; it turns GSO and TX checksum offload off; SACK blocks
// that would overflow 40 option bytes are trimmed by the layer, as Linux
// trims them. With offload off, netstack fills every TCP checksum it
// sends, so the layer may update it for the option rather than sum the
// segment again: packetauth.Config.StackChecksums.
//
// Counters, per-connection state and key rotation (Conn by 4-tuple, then
// SetCurrent / SetRNext) are the layer's: [Endpoint.Layer].
//
// RSTs (packetauth's choice, tested here): netstack answers a segment for
// no connection, or a SYN to a closed port, with a RST. TCP-MD5 needs no
// ISNs: such a RST is signed like any segment, so the peer sees
// "connection refused", as from Linux. A TCP-AO RST needs both ISNs: for
// a connection the layer does not track, or one whose SYN it verified but
// netstack refused, it cannot be signed, and the layer drops it
// (packetauth.ErrNoConn, counted); the peer's own timers end its side (RFC
// 5925 section 7.7). A TCP-AO peer's segment for no tracked connection
// cannot be verified, so the layer drops it before netstack could answer.
package netstack
