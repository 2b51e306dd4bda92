package testvectors

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha3"
	"crypto/sha512"
	"hash"

	//lint:ignore SA1019 hmac(rmd160): Linux accepts the algorithm for TCP-AO.
	"golang.org/x/crypto/ripemd160"
)

// Hashes maps each HMAC algorithm, by its Linux name, to the hash it is
// built on, taken straight from the standard library and x/crypto: a
// reference that shares no code with tcpsig's mac package, for
// recomputing vectors and for benchmarking against the bare hash.
var Hashes = map[string]func() hash.Hash{
	"hmac(md5)":    md5.New,
	"hmac(sha1)":   sha1.New,
	"hmac(sha224)": sha256.New224,
	"hmac(sha256)": sha256.New,
	// HMAC-SHA256-128's MAC is HMAC-SHA256 (its first 16 bytes).
	"hmac-sha256-128": sha256.New,
	"hmac(sha384)":    sha512.New384,
	"hmac(sha512)":    sha512.New,
	"hmac(rmd160)":    ripemd160.New,
	"hmac(sha3-224)":  func() hash.Hash { return sha3.New224() },
	"hmac(sha3-256)":  func() hash.Hash { return sha3.New256() },
	"hmac(sha3-384)":  func() hash.Hash { return sha3.New384() },
	"hmac(sha3-512)":  func() hash.Hash { return sha3.New512() },
}
