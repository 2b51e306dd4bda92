// Package keys is the key configuration that the engine (packages ao and
// md5sig), the kernel's sockets (linuxsock) and the keys file (keyfile)
// share: an MKT as Linux's TCP_AO_ADD_KEY takes it ([AO]), a TCP-MD5 key
// as TCP_MD5SIG_EXT takes it ([MD5]), and the checks Linux makes of them.
//
// It derives no key and holds no engine state: validating a key here is
// what the kernel would refuse with EINVAL or EMSGSIZE, judged from the
// configuration and the algorithm's properties alone, so a package of
// socket options or a file parser imports it without the signing engine.
// A keyring refuses what Validate refuses, and only adds what it cannot
// see here: a KeyID clash with the MKTs it already holds.
//
// Each configuration carries a [Lifetime] (RFC 8177): a send and an
// accept [Window] and an accept tolerance, with SendActive and
// AcceptActive for a moment. The zero Lifetime is "always", as a key was
// before lifetimes; which roads act on one is theirs to say.
//
// Printing a configuration never shows key bytes: not fmt of any verb,
// not json.Marshal, not slog (its text or JSON handler), not an error of
// Validate, which quotes no field that may hold a pasted key.
package keys
