// Package diagnose names the misconfiguration behind TCP-AO (RFC 5925)
// and TCP-MD5 (RFC 2385) segments that do not verify.
//
// [Explain] takes a few failing segments of one flow direction, how many
// of its segments verified and failed, and the keys file they were judged
// with. It searches the configurations an operator plausibly meant: each
// entry's secret under the other algorithms, exclude_options the other
// way, the KeyID on the wire instead of the entry's (and send and receive
// IDs swapped), the MAC length on the wire, the secret read another way
// (hex typed as text, text as hex, whitespace or a newline at either end,
// a "text:"/"hex:" prefix taken literally), TCP-MD5 against TCP-AO and an
// entry for another address. The [Diagnosis] names the cause with one
// word of a fixed vocabulary ([Cause]), the entry to change and a
// one-line fix. It never prints a key byte (the candidate keys it builds
// are wiped before it returns): a secret is named by the entry whose
// secret verifies.
//
// Each candidate is checked with the engine itself (ao.TrafficKey,
// md5sig.Keyring), so a diagnosis is a configuration under which the
// segments verify, not a guess. The search costs some dozens of MAC
// computations per segment: it is for a few segments of a failing
// direction ([MaxSegments]), off any packet path.
//
// [FromWire] judges a direction without any keys file, from what its
// segments and its reverse's carry: Unsigned, AuthKind and ISN, the
// causes that need no secret.
//
// [Lint] finds, without a capture, the mistakes a keys file can show on
// its own: mirrored entries that differ in one field, an entry with no
// mirror, whitespace around a key, a "text:" key of hex digits, one
// secret under two algorithms.
package diagnose
