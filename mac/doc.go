// Package mac is tcpsig's algorithm registry and its keyed, clonable MAC
// contexts: the MACs of TCP-AO (RFC 5925, with the algorithms of RFC 5926,
// the others Linux accepts, and draft-ietf-tcpm-tcp-ao-algs-07's
// HMAC-SHA256-128 and KMAC256-128) and the keyed MD5 of TCP-MD5 (RFC 2385).
//
// Algorithms are named as Linux names them ("hmac(sha1)", "cmac(aes128)",
// ...), the draft's in lower case ("kmac256-128"); an [Algorithm] also
// says which KDF, MAC length and master key length TCP-AO uses with it.
// Keying is split in two, the way tcpsig's pool uses it:
//
//   - a [Key] is a keyed template: the state of the MAC right after the key
//     was absorbed (HMAC inner and outer midstates, the AES key schedule
//     and CMAC subkeys, or KMAC's cSHAKE256 state). It is immutable once
//     built, so any number of
//     goroutines may read it.
//   - a [Context] is a working MAC. [Context.Load] copies a template's keyed
//     state into it (the clone), [Context.SetKey] runs the key schedule in
//     place (the re-key backend Linux used for algorithms it could not
//     clone), [Context.Reset] returns to the keyed state without running the
//     key schedule again, and [Context.Sum] appends the full digest to a
//     caller's buffer. Sum finishes the message: Sum again repeats its MAC,
//     and Write fails with [ErrFinished] until Reset starts the next one.
//
// After warm-up none of Load, Reset, Write and Sum allocate; neither does
// SetKey or [Key.Init] for the HMAC and KMAC algorithms (the AES key
// schedule of crypto/aes allocates once per key).
//
// In order: [Lookup] an algorithm by name; [Key.Init] a template per key;
// per message, [Context.Load] (or Reset, after the first), Write, Sum;
// [Key.Wipe] when the key goes. Receivers compare MACs with [Equal], never
// bytes.Equal.
//
// Go cannot promise that no copy of a key survives in memory: the runtime
// may move stacks, and crypto/aes keeps its own expanded key. [Key.Wipe]
// clears every byte this package owns.
package mac
