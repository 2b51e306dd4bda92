// Package keychain reads and writes key chains as RFC 8177's ietf-key-chain
// model has them, with RFC 9648's TCP-AO and TCP-MD5 augment (ietf-tcp),
// in RFC 7951 JSON: the form NETCONF and RESTCONF servers and FRR's
// management daemon speak. It turns a document into entries of the keys
// file (package keyfile) for the peers a caller names, and a keys file
// into a document.
//
// A key chain names no peer (which peers a chain protects is a device's
// configuration elsewhere, a BGP neighbour's "authentication key-chain
// X"), so [Import] takes the peers of each chain, and [Export] returns
// them beside the document. An imported entry is named "CHAIN/KEY-ID"
// (bgp-r1/2), which is how Export finds the chain and key-id again; an
// entry without such a name goes to a chain named after its peer.
//
// The mapping is exact or refused. Algorithm identities map both ways:
// RFC 8177's hmac-sha-1, hmac-sha-256, hmac-sha-384, hmac-sha-512 (TCP-AO
// with 12-byte MACs, as RFC 5926 and Linux default to) and md5 (TCP-MD5),
// RFC 9648's aes-128 for AES-128-CMAC; on import also RFC 8177's
// hmac-sha-1-12 and aes-cmac-prf-128. What the model cannot say is an
// [ErrUnrepresentable] error on export, never a silent substitution: an
// algorithm it has no identity for (the draft's KMAC, say), a MAC length
// other than 12, an ifindex, entries of one chain with different
// tolerances. A document that breaks the model (a send-id of 300, an
// unknown identity, two keys of one chain with the same send-id and
// overlapping send lifetimes) is an [ErrModel] error naming the data path.
//
// Lifetimes are RFC 8177's: send-accept-lifetime is the keys file's
// "lifetime", send-lifetime and accept-lifetime its "send_lifetime" and
// "accept_lifetime", the chain's accept-tolerance every entry's
// "accept_tolerance"; an end-date-time is the first moment the key is
// out of its lifetime, and a duration is read as the end it gives.
//
// Keys are never printed: [Key] and [Chain] print and marshal (json) with
// the key redacted; only [Marshal] and [Export] write them. The key
// strings of a document pass through Go strings, which cannot be wiped.
package keychain
