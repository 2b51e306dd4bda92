package ao

import (
	"errors"
	"fmt"

	"github.com/tcpsig/tcpsig/segment"
)

// optionKind is the TCP option kind of TCP-AO (RFC 5925 §2.2).
const optionKind = segment.OptionKindAO

// optionHeaderLen is the option's kind, length, KeyID and RNextKeyID.
const optionHeaderLen = 4

// ErrOption reports a malformed TCP-AO option.
var ErrOption = errors.New("ao: malformed TCP-AO option")

// Option is a parsed TCP-AO option. MAC aliases the segment's bytes.
type Option struct {
	KeyID      uint8
	RNextKeyID uint8
	MAC        []byte
}

// optionLen returns the option's length byte for a MAC of maclen bytes:
// 4 + maclen, unpadded, as Linux writes it.
func optionLen(maclen int) int { return optionHeaderLen + maclen }

// OptionSpace returns the header space the option takes with the NOPs
// that pad it to a 4-byte boundary: what a stack laying out headers
// reserves (Linux tcp_ao_len_aligned).
func OptionSpace(maclen int) int { return (optionLen(maclen) + 3) &^ 3 }

// ParseOption parses the TCP-AO option at the start of opt.
func ParseOption(opt []byte) (Option, error) {
	if len(opt) < 2 || opt[0] != optionKind {
		return Option{}, ErrOption
	}
	n := int(opt[1])
	if n <= optionHeaderLen || n > len(opt) {
		return Option{}, fmt.Errorf("%w: length %d", ErrOption, n)
	}
	return Option{KeyID: opt[2], RNextKeyID: opt[3], MAC: opt[4:n:n]}, nil
}

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

// findOption returns the offset of seg's AO option and the option, or
// [ErrNoOption].
func findOption(seg *segment.Segment) (int, Option, error) {
	off := seg.Auth().AO
	if off == 0 {
		return 0, Option{}, ErrNoOption
	}
	o, err := ParseOption(seg.Header[off:])
	if err != nil {
		return 0, Option{}, err
	}
	return off, o, nil
}
