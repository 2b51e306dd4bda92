// Package md5sig implements the TCP MD5 Signature Option (RFC 2385) for
// userspace TCP stacks, byte for byte as Linux signs and checks it.
//
// What it promises:
//
//   - Byte-exact with Linux (tcp_v4_md5_hash_skb, tcp_v6_md5_hash_skb): the
//     digest is MD5 over the TCP pseudo-header (IPv4: 12 bytes, IPv6: 40,
//     with the real length of the segment, options and payload included),
//     the 20-byte TCP header without options with its checksum zeroed and
//     its data offset unchanged, the payload, and then the key. TCP options,
//     the MD5 option itself included, are not covered. Captures of the
//     host kernel's TCP-MD5 traffic are checked in the tests.
//   - Linux's receive decisions (tcp_inbound_hash, tcp_inbound_md5_hash):
//     an unsigned segment from a peer without a key is accepted; an
//     unsigned segment from a peer with a key is [ErrMissing]
//     (TCPMD5NotFound); a signed segment from a peer without a key is
//     [ErrUnexpected] (TCPMD5Unexpected); a wrong digest is [ErrBadMAC]
//     (TCPMD5Failure); a TCP-AO option is [ErrAOOption]. Malformed or
//     duplicate MD5/AO options and segments carrying both are the errors
//     of package segment (Linux's SKB_DROP_REASON_TCP_AUTH_HDR).
//   - Linux's key selection (__tcp_md5_do_lookup, better_md5_match): keys
//     by peer prefix, the longest prefix wins, a key bound to an L3 domain
//     (TCP_MD5SIG_FLAG_IFINDEX) matches only that domain, and one bound to
//     a VRF wins over every key that is not; keys are 1 to 80 bytes.
//   - Digests are compared in constant time ([mac.Equal]).
//   - [Keyring.Sign] and [Keyring.Verify] take no lock on the keyring and
//     allocate nothing; their cost does not grow with the number of keys.
//   - Deleted keys are wiped once no reader can use them any more (Linux
//     frees them with kfree_sensitive after an RCU grace period): a
//     synchronous delete returns after the wipe, an asynchronous one at
//     once.
//
// A stack reserves [OptionSpace] bytes with [AppendOption] for a peer that
// has a key and calls [Keyring.Sign]; it calls [Keyring.Verify] on every
// received segment (packetauth.Layer does both on whole IP packets, with
// SignWith and VerifyWith for a peer's schedule of keys with lifetimes).
//
// Go cannot promise that no copy of a key survives in memory: the runtime
// may move stacks and the garbage collector frees without zeroing. A wipe
// clears every byte of key material this package and package mac own.
package md5sig
