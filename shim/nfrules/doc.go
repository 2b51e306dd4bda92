// Package nfrules installs and removes the netfilter rules that send a
// host's TCP traffic with given peers to a netfilter queue: one nftables
// table per address family (ip and ip6), of one name, owned by one
// process, so that removing it removes every rule it added and nothing else.
//
// The rules are written over nftables' netlink interface with
// github.com/google/nftables (pure Go), so they need neither the nft nor the
// iptables binary — a qemu guest or a router image has neither. A kernel
// built with nft_queue gets nftables' own queue statement; one built with
// only the xtables NFQUEUE target and nft_compat (as some distribution
// kernels are) gets that target, as iptables-nft would write it.
//
// The output chain (hook output, priority 300: after the output NAT and
// mangle chains) queues TCP to a peer; the input chain (hook input, priority
// -150) queues TCP from a peer, and the ICMP hard errors of RFC 5925 §7.8
// that quote a TCP packet to a peer (ICMPv4 destination unreachable codes
// 2-4, ICMPv6 destination unreachable codes 1 and 4), which the packet
// layer drops for a TCP-AO session; and, with IPv6 peers, the first
// fragment of every IPv6 packet whose fragment header is followed by
// anything but TCP, UDP or ESP: an ICMPv6 error in fragments passes the
// hook in pieces and the kernel reassembles it past the hook, so its first
// fragment goes to the layer, which drops a hard error it cannot clear
// (without its first fragment the message is never reassembled). Other
// ICMP is not queued. Only the
// host's own traffic passes these hooks, never forwarded packets. With
// several queues (Spec.Queues) each TCP rule also matches "symhash mod N":
// a symmetric hash of the addresses and ports, so a connection's packets
// both ways go to one queue; the ICMP rules go to the first. The queue is
// fail-closed: with no reader the kernel drops the queued packets.
package nfrules
