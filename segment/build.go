package segment

import "encoding/binary"

// Fields describe a TCP header for [AppendTCP] and [AppendPacket]: its
// fixed fields and its options. The data offset and the checksum are not
// among them: the builders compute them.
type Fields struct {
	SrcPort, DstPort uint16
	Seq, Ack         uint32
	Flags            Flags
	Window           uint16
	Urgent           uint16

	// Options are the header's options, each a whole option (kind,
	// length, data), laid out in this order (the TCP-AO or TCP-MD5
	// option first, as Linux lays them out) and padded with NOPs to a
	// 4-byte boundary.
	Options [][]byte
}

// optionsLen is the length of f's options, padded to a 4-byte boundary.
func (f *Fields) optionsLen() int {
	n := 0
	for _, o := range f.Options {
		n += len(o)
	}
	return (n + 3) &^ 3
}

// AppendTCP appends a TCP header with the fields and options of f, with
// the data offset set and the checksum zero. It is for stacks and tests
// that build segments; options longer than 40 bytes do not fit a TCP
// header and yield nil.
func AppendTCP(dst []byte, f Fields) []byte {
	n := f.optionsLen()
	if n > MaxOptionsLen {
		return nil
	}
	var h [TCPMinimumSize]byte
	binary.BigEndian.PutUint16(h[0:], f.SrcPort)
	binary.BigEndian.PutUint16(h[2:], f.DstPort)
	binary.BigEndian.PutUint32(h[4:], f.Seq)
	binary.BigEndian.PutUint32(h[8:], f.Ack)
	h[12] = byte((TCPMinimumSize + n) / 4 << 4)
	h[13] = byte(f.Flags)
	binary.BigEndian.PutUint16(h[14:], f.Window)
	binary.BigEndian.PutUint16(h[18:], f.Urgent)
	start := len(dst)
	dst = append(dst, h[:]...)
	for _, o := range f.Options {
		dst = append(dst, o...)
	}
	for len(dst)-start < TCPMinimumSize+n {
		dst = append(dst, OptionKindNOP)
	}
	return dst
}
