// Package mac is tcpsig's algorithm registry and its keyed, clonable MAC
// contexts: the MACs of TCP-AO (RFC 5925, with the algorithms of RFC 5926,
// the others Linux accepts, and draft-ietf-tcpm-tcp-ao-algs-07's
// HMAC-SHA256-128 and KMAC256-128) and the keyed MD5 of TCP-MD5 (RFC 2385).
//
// Most programs do not need it: they sign with packages ao, md5sig or
// packetauth, which take the algorithm by name ([Names] lists them).
//
// Algorithms are named as Linux names them ("hmac(sha1)", "cmac(aes128)",
// ...), the draft's in lower case ("kmac256-128"); an [Algorithm] also
// says which KDF, MAC length and master key length TCP-AO uses with it.
// Keying is split in two, the way tcpsig's pool uses it:
//
//   - a [Key] is a keyed template: the state of the MAC right after the key
//     was absorbed (HMAC inner and outer midstates, the AES key schedule
//     and CMAC subkeys, or KMAC's cSHAKE256 state). It is immutable once
//     built, so any number of goroutines may read it.
//   - a [Context] computes one message's MAC at a time, and is not a
//     hash.Hash: [Context.Start] begins a message under a Key, Write
//     absorbs it, [Context.Finish] ends it and appends the MAC. A finished
//     message stays finished: Finish again repeats its MAC, Write fails
//     with [ErrFinished] until Start or [Context.Restart] begins the next.
//     [Context.Compute] is the three for a whole message in one call.
//   - a context clones at Start (copies the Key's template) or, made by
//     [Algorithm.NewRekeyContext], re-runs the key schedule from the Key's
//     bytes at every Start, as Linux does; [Algorithm.Clones] says whether
//     that differs.
//
// Each family (HMAC over a hash.Hash, AES-CMAC, KMAC256, TCP-MD5's keyed
// MD5) is its own implementation, which the registry picks; a context
// holds its family's state only, sized for its algorithm. After warm-up a
// cloning context allocates nothing per message. The package keeps no
// working state: sigpool makes the contexts.
//
// In order: [Lookup] an algorithm; [Key.Init] (or [Context.Schedule]) a
// template per key; per message [Context.Start], Write, [Context.Finish]
// (or [Context.Compute]); [Key.Wipe] when the key goes. Receivers compare
// MACs with [Equal], never bytes.Equal.
package mac
