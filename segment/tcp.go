package segment

import "encoding/binary"

// Sizes, offsets and option kinds of the TCP header (RFC 9293 §3.1,
// RFC 2385 §3.0, RFC 5925 §2.2).
const (
	TCPMinimumSize    = 20 // header without options
	TCPChecksumOffset = 16 // offset of the 16-bit checksum field
	MaxHeaderLen      = 60 // data offset 15 × 4

	OptionKindEOL = 0  // end of option list
	OptionKindNOP = 1  // no-operation (padding)
	OptionKindMD5 = 19 // TCP MD5 signature option (RFC 2385)
	OptionKindAO  = 29 // TCP Authentication Option (RFC 5925)

	MD5OptionLen = 18 // kind, length and a 16-byte digest
	aoHeaderLen  = 4  // kind, length, KeyID, RNextKeyID: struct tcp_ao_hdr
)

// TCP is a TCP header, options included, as a byte slice (gVisor's
// header.TCP style): the accessors read the buffer directly. On a slice
// shorter than TCPMinimumSize they return 0 (Options: nil, when shorter
// than its data offset) and the setters do nothing; only AuthOptions
// reports what is wrong.
type TCP []byte

// SrcPort returns the source port.
func (t TCP) SrcPort() uint16 {
	if len(t) < TCPMinimumSize {
		return 0
	}
	return binary.BigEndian.Uint16(t[0:])
}

// DstPort returns the destination port.
func (t TCP) DstPort() uint16 {
	if len(t) < TCPMinimumSize {
		return 0
	}
	return binary.BigEndian.Uint16(t[2:])
}

// Seq returns the sequence number.
func (t TCP) Seq() uint32 {
	if len(t) < TCPMinimumSize {
		return 0
	}
	return binary.BigEndian.Uint32(t[4:])
}

// Ack returns the acknowledgment number.
func (t TCP) Ack() uint32 {
	if len(t) < TCPMinimumSize {
		return 0
	}
	return binary.BigEndian.Uint32(t[8:])
}

// DataOffset returns the header length in bytes (the data offset field × 4).
func (t TCP) DataOffset() int {
	if len(t) < TCPMinimumSize {
		return 0
	}
	return int(t[12]>>4) * 4
}

// Flags returns the eight flag bits of byte 13 (the AE bit is not included).
func (t TCP) Flags() Flags {
	if len(t) < TCPMinimumSize {
		return 0
	}
	return Flags(t[13])
}

// Window returns the window field.
func (t TCP) Window() uint16 {
	if len(t) < TCPMinimumSize {
		return 0
	}
	return binary.BigEndian.Uint16(t[14:])
}

// Checksum returns the checksum field.
func (t TCP) Checksum() uint16 {
	if len(t) < TCPMinimumSize {
		return 0
	}
	return binary.BigEndian.Uint16(t[TCPChecksumOffset:])
}

// Options returns the options, t[TCPMinimumSize:DataOffset()], without copying.
func (t TCP) Options() []byte {
	d := t.DataOffset()
	if d < TCPMinimumSize || d > len(t) {
		return nil
	}
	return t[TCPMinimumSize:d]
}

// Flags are the TCP control bits of byte 13: FIN, SYN, RST, PSH, ACK, URG,
// ECE and CWR, the constants below (SYN|ACK is a SYN-ACK). Has and Only
// test them; String prints them as tcpdump does.
type Flags uint8

// The TCP control bits (RFC 9293 §3.1, RFC 3168 §6.1).
const (
	FIN Flags = 1 << iota
	SYN
	RST
	PSH
	ACK
	URG
	ECE
	CWR
)

// String formats the flags as tcpdump does: "S" for a SYN, "S." for a
// SYN-ACK, "P." for PSH+ACK, in the order F S R P . U E W; "none" when no
// flag is set.
func (f Flags) String() string {
	if f == 0 {
		return "none"
	}
	const names = "FSRP.UEW" // bit i of f is names[i], ACK printed as "."
	var b [8]byte
	n := 0
	for i := range len(names) {
		if f&(1<<i) != 0 {
			b[n] = names[i]
			n++
		}
	}
	return string(b[:n])
}

// Auth locates the authentication options in a TCP header. MD5 and AO are
// offsets of the option's kind byte within the header, 0 when absent (an
// option is never at offset 0: options start at byte 20), so the zero Auth
// means "no option": the MD5 digest is at [MD5+2, MD5+18); the AO KeyID at
// AO+2, RNextKeyID at AO+3 and the MAC at [AO+4, AO+AOLen). At most one of
// MD5 and AO is present.
type Auth struct {
	MD5   int
	AO    int
	AOLen int // the AO option's length byte (4 + MAC length), 0 when absent
}

// HasAO reports whether the header has a TCP-AO option.
func (a Auth) HasAO() bool { return a.AO > 0 }

// HasMD5 reports whether the header has a TCP-MD5 option.
func (a Auth) HasMD5() bool { return a.MD5 > 0 }

// noAuth is the Auth of a header without authentication options, and the
// one returned with an error.
var noAuth = Auth{}

// AuthOptions validates the header's data offset and walks its options the
// way Linux's tcp_do_parse_auth_options() does (net/ipv4/tcp_input.c): EOL
// ends the walk, NOP is one byte, every other option has a length byte of at
// least 2 that must not run past the header; an MD5 option must be 18 bytes
// long, an AO option longer than 4; a second MD5 or AO option, or both kinds
// together, is an error. Any of these errors is Linux's
// SKB_DROP_REASON_TCP_AUTH_HDR: the segment must be dropped. With an error
// the returned Auth is the zero Auth.
//
// Like Linux, the walk stops when fewer than 5 option bytes remain (no
// authentication option fits in them), so a malformed option in the last
// four bytes is not reported: Linux accepts such a segment, and so does this.
func (t TCP) AuthOptions() (Auth, error) {
	if len(t) < TCPMinimumSize {
		return noAuth, ErrShortTCP
	}
	end := t.DataOffset()
	if end < TCPMinimumSize || end > len(t) {
		return noAuth, ErrDataOffset
	}
	a := noAuth
	for i := TCPMinimumSize; end-i >= aoHeaderLen+1; {
		kind := t[i]
		switch kind {
		case OptionKindEOL:
			return a, nil
		case OptionKindNOP:
			i++
			continue
		}
		size := int(t[i+1])
		if size < 2 || size > end-i {
			return noAuth, ErrOptionLength
		}
		switch kind {
		case OptionKindMD5:
			if size != MD5OptionLen {
				return noAuth, ErrAuthOption
			}
			if err := a.another(a.MD5); err != nil {
				return noAuth, err
			}
			a.MD5 = i
		case OptionKindAO:
			if size <= aoHeaderLen {
				return noAuth, ErrAuthOption
			}
			if err := a.another(a.AO); err != nil {
				return noAuth, err
			}
			a.AO, a.AOLen = i, size
		}
		i += size
	}
	return a, nil
}

// another reports the error for a second authentication option, given the
// offset already recorded for the same kind (Linux returns -EEXIST for both).
func (a *Auth) another(same int) error {
	switch {
	case same > 0:
		return ErrDuplicateAuth
	case a.MD5 > 0 || a.AO > 0:
		return ErrBothAuth
	}
	return nil
}
