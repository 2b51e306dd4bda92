package md5sig

import "github.com/tcpsig/tcpsig/segment"

// Sizes of the option (RFC 2385 §3.0; Linux TCPOLEN_MD5SIG,
// TCPOLEN_MD5SIG_ALIGNED).
const (
	OptionKind  = segment.OptionKindMD5 // 19
	OptionLen   = segment.MD5OptionLen  // kind, length, 16-byte digest
	OptionSpace = 20                    // NOP, NOP, then the option: what a stack reserves
	DigestSize  = 16
)

// AppendOption appends the option as Linux lays it out
// (tcp_options_write): NOP, NOP, kind 19, length 18 and a zero digest,
// OptionSpace bytes in all, so that the digest ends on a 4-byte boundary.
// [Keyring.Sign] fills in the digest.
func AppendOption(dst []byte) []byte {
	dst = append(dst, segment.OptionKindNOP, segment.OptionKindNOP, OptionKind, OptionLen)
	return append(dst, make([]byte, DigestSize)...)
}
