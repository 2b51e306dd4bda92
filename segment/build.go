package segment

import "encoding/binary"

// Fields are the fixed fields of a TCP header, for [AppendTCP].
type Fields struct {
	SrcPort, DstPort uint16
	Seq, Ack         uint32
	Flags            Flags
	Window           uint16
	Urgent           uint16
}

// AppendTCP appends a TCP header with fields f and the given options
// (the TCP-AO or TCP-MD5 option first, as Linux lays them out), padded
// with NOPs to a 4-byte boundary, with the data offset set and the
// checksum zero. It is for stacks and tests that build segments; options
// longer than 40 bytes do not fit a TCP header and yield nil.
func AppendTCP(dst []byte, f Fields, options ...[]byte) []byte {
	n := 0
	for _, o := range options {
		n += len(o)
	}
	pad := (4 - n%4) % 4
	if n+pad > MaxHeaderLen-TCPMinimumSize {
		return nil
	}
	var h [TCPMinimumSize]byte
	binary.BigEndian.PutUint16(h[0:], f.SrcPort)
	binary.BigEndian.PutUint16(h[2:], f.DstPort)
	binary.BigEndian.PutUint32(h[4:], f.Seq)
	binary.BigEndian.PutUint32(h[8:], f.Ack)
	h[12] = byte((TCPMinimumSize + n + pad) / 4 << 4)
	h[13] = byte(f.Flags)
	binary.BigEndian.PutUint16(h[14:], f.Window)
	binary.BigEndian.PutUint16(h[18:], f.Urgent)
	dst = append(dst, h[:]...)
	for _, o := range options {
		dst = append(dst, o...)
	}
	for i := 0; i < pad; i++ {
		dst = append(dst, OptionKindNOP)
	}
	return dst
}
