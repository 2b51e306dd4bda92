// Package onpath is an on-path attacker for tests: a router between two
// hosts that watches their TCP sessions and forges segments into them, so
// that a test can show what a host's TCP-AO or TCP-MD5 protection (the
// kernel's, or tcpsig shim's) refuses, and that it would have mattered.
//
// [New] makes three network namespaces, A — M — B, joined by two veth
// links, with M routing between them (Linux only, needs root):
//
//	ns A: opA  192.0.2.1/24      default via 192.0.2.254
//	ns M: opMA 192.0.2.254/24    opMB 198.51.100.254/24   ip_forward on
//	ns B: opB  198.51.100.2/24   default via 198.51.100.254
//
// M is a router, not a bridge: it is the path itself, as a compromised
// router is, forging at the IP layer, and a forged peer's answers (to
// 192.0.2.7, say) come back through it to the sniffer.
//
// [Start] runs, in M, the attacker: a sniffer (an AF_PACKET socket over all
// of M's interfaces, keeping what arrives and ignoring what M sends) that
// feeds a [Tracker], and an injector that, every few milliseconds, sends
// each [Flow] it was given the [Kind]s asked for: unsigned data (the
// [Marker]) at the target's rcv_nxt, an RST at exactly rcv_nxt, an RST
// elsewhere in the window, a SYN in the window; built by [Build] from what
// the tracker learnt (sequence and acknowledgement numbers, window and its
// scale, timestamps copied from the impersonated peer so that PAWS passes)
// and sent from a raw IPv4 socket (IP_HDRINCL) with the peer's address as
// the source. It counts what it sent, per flow and kind.
//
// For attackers who hold more than the wire: [Attacker.Watch] hands a test
// each packet the sniffer sees in one direction (to capture a genuinely
// signed segment), [Attacker.SendPacket] sends a whole packet as it is (to
// replay it, numbered with [SetIPv4ID], which no MAC covers), and
// [BuildSignedSYN] builds a SYN signed with a TCP-AO MKT the attacker
// holds. [Listen] opens an [Inbox] in a host's namespace: a raw socket
// that sees what the host's TCP is handed after the netfilter input hook,
// so behind tcpsig shim exactly what the shim let through.
//
// The tracker and [Build] are plain code, usable without root on captured
// packets; the topology and the attacker are IPv4 only.
package onpath
