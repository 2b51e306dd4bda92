package packetauth

import (
	"encoding/binary"

	"github.com/tcpsig/tcpsig/segment"
)

// TCP option kinds the layer rewrites besides the authentication options.
const (
	optMSS    = 2 // RFC 9293 §3.2: kind 2, length 4
	optSACK   = 5 // RFC 2018 §3: kind 5, length 2 + 8 per block
	sackBlock = 8
)

// fitOptions appends to dst the options old (a stack's TCP options) in at
// most room bytes. When they do not fit, SACK blocks are dropped from the
// end, as Linux's tcp_established_options sends fewer blocks when an
// authentication option takes the space, and with no block left the SACK
// option goes with the NOPs that aligned it. It returns ErrNoRoom if the
// options still do not fit and ErrOptions if they do not parse.
func fitOptions(dst, old []byte, room int) ([]byte, error) {
	if len(old) <= room {
		return append(dst, old...), nil
	}
	// Find the (first) SACK option and the NOPs right before it.
	sack, nops := -1, 0
	run := 0
	for i := 0; i < len(old); {
		switch old[i] {
		case segment.OptionKindEOL:
			i = len(old)
			continue
		case segment.OptionKindNOP:
			run++
			i++
			continue
		}
		if i+1 >= len(old) || old[i+1] < 2 || i+int(old[i+1]) > len(old) {
			return dst, ErrOptions
		}
		if old[i] == optSACK && sack < 0 {
			sack, nops = i, run
		}
		run = 0
		i += int(old[i+1])
	}
	if sack < 0 {
		return dst, ErrNoRoom
	}
	size := int(old[sack+1])
	blocks := (size - 2) / sackBlock
	others := len(old) - size - nops
	keep := 0
	if avail := room - others - nops - 2; avail >= sackBlock {
		keep = min(blocks, avail/sackBlock)
	}
	if keep == 0 {
		if others > room {
			return dst, ErrNoRoom
		}
		dst = append(dst, old[:sack-nops]...)
		return append(dst, old[sack+size:]...), nil
	}
	dst = append(dst, old[:sack]...)
	dst = append(dst, optSACK, byte(2+keep*sackBlock))
	dst = append(dst, old[sack+2:sack+2+keep*sackBlock]...)
	return append(dst, old[sack+size:]...), nil
}

// clampMSS lowers the MSS option of a SYN's options by overhead (keeping
// at least 1), in place, and reports whether it changed anything.
func clampMSS(opts []byte, overhead int) bool {
	for i := 0; i < len(opts); {
		switch opts[i] {
		case segment.OptionKindEOL:
			return false
		case segment.OptionKindNOP:
			i++
			continue
		}
		if i+1 >= len(opts) || opts[i+1] < 2 || i+int(opts[i+1]) > len(opts) {
			return false
		}
		if opts[i] == optMSS && opts[i+1] == 4 {
			mss := int(binary.BigEndian.Uint16(opts[i+2:]))
			if mss <= overhead {
				return false
			}
			binary.BigEndian.PutUint16(opts[i+2:], uint16(mss-overhead))
			return true
		}
		i += int(opts[i+1])
	}
	return false
}
