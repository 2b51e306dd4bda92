package ao

import (
	"errors"

	"github.com/tcpsig/tcpsig/segment"
)

// ErrOption reports a malformed TCP-AO option.
var ErrOption = errors.New("ao: malformed TCP-AO option")

// Option is a parsed TCP-AO option. MAC aliases the segment's bytes.
type Option struct {
	KeyID      uint8
	RNextKeyID uint8
	MAC        []byte
}

// OptionSpace returns the header space the option takes with the NOPs
// that pad it to a 4-byte boundary: what a stack laying out headers
// reserves (Linux tcp_ao_len_aligned).
func OptionSpace(maclen int) int { return (optionLen(maclen) + 3) &^ 3 }

// ParseOption parses the TCP-AO option at the start of opt.
func ParseOption(opt []byte) (Option, error) { return parseOption(opt) }

// AppendOption appends a TCP-AO option for a MAC of maclen bytes,
// followed by NOPs up to a 4-byte boundary (Linux tcp_options_write):
// KeyID, RNextKeyID and MAC zero, for the signer to fill in.
func AppendOption(dst []byte, maclen int) []byte {
	maclen = max(0, min(maclen, 255-optionHeaderLen))
	dst = append(dst, optionKind, byte(optionLen(maclen)), 0, 0)
	for i := 0; i < maclen; i++ {
		dst = append(dst, 0)
	}
	for i := optionLen(maclen); i < OptionSpace(maclen); i++ {
		dst = append(dst, segment.OptionKindNOP)
	}
	return dst
}
