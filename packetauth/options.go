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
// authentication option takes the space; with no block left the SACK
// option goes with the NOPs that aligned it. If that leaves no block, or
// does not fit at all (a SYN's MSS, NOP NOP TS, NOP WS, NOP NOP
// SACK-permitted beside MD5, say), the options are packed without their
// aligning NOPs (options may start on any byte, RFC 9293 §3.1) and SACK
// blocks trimmed from that, whichever keeps more. It returns ErrNoRoom if
// the options still do not fit and ErrOptions if they do not parse.
func fitOptions(dst, old []byte, room int) ([]byte, error) {
	if len(old) <= room {
		return append(dst, old...), nil
	}
	start := len(dst)
	out, kept, err := trimSACK(dst, old, room)
	if err == nil && kept > 0 {
		return out, nil
	}
	var buf, packed [segment.MaxOptionsLen]byte
	p, perr := pack(buf[:0], old)
	if perr != nil {
		return dst, perr
	}
	out2, kept2, err2 := trimSACK(packed[:0], p, room)
	if err2 == nil && (err != nil || kept2 > kept) {
		return append(dst[:start], out2...), nil
	}
	return out, err
}

// pack appends old without its NOPs, up to (not including) an EOL.
func pack(dst, old []byte) ([]byte, error) {
	for i := 0; i < len(old); {
		switch old[i] {
		case segment.OptionKindEOL:
			return dst, nil
		case segment.OptionKindNOP:
			i++
			continue
		}
		if i+1 >= len(old) || old[i+1] < 2 || i+int(old[i+1]) > len(old) {
			return dst, ErrOptions
		}
		dst = append(dst, old[i:i+int(old[i+1])]...)
		i += int(old[i+1])
	}
	return dst, nil
}

// trimSACK appends old to dst with as many of its (first) SACK option's
// blocks as fit in room, and returns how many it kept.
func trimSACK(dst, old []byte, room int) ([]byte, int, error) {
	if len(old) <= room {
		return append(dst, old...), -1, nil
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
			return dst, 0, ErrOptions
		}
		if old[i] == optSACK && sack < 0 {
			sack, nops = i, run
		}
		run = 0
		i += int(old[i+1])
	}
	if sack < 0 {
		return dst, 0, ErrNoRoom
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
			return dst, 0, ErrNoRoom
		}
		dst = append(dst, old[:sack-nops]...)
		return append(dst, old[sack+size:]...), 0, nil
	}
	dst = append(dst, old[:sack]...)
	dst = append(dst, optSACK, byte(2+keep*sackBlock))
	dst = append(dst, old[sack+2:sack+2+keep*sackBlock]...)
	return append(dst, old[sack+size:]...), keep, nil
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
