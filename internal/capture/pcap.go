package capture

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// LinkType is a pcap link-layer header type (LINKTYPE_* in the tcpdump
// registry).
type LinkType uint32

// The link types this package produces.
const (
	// LinkTypeEthernet is LINKTYPE_ETHERNET: a 14-byte Ethernet header
	// precedes the IP packet. Linux's loopback device uses it.
	LinkTypeEthernet LinkType = 1
	// LinkTypeRaw is LINKTYPE_RAW: the packet starts with its IPv4 or IPv6
	// header. TUN devices use it.
	LinkTypeRaw LinkType = 101
)

// String returns the link type's name in the tcpdump registry.
func (l LinkType) String() string {
	switch l {
	case LinkTypeEthernet:
		return "ETHERNET"
	case LinkTypeRaw:
		return "RAW"
	}
	return fmt.Sprintf("LINKTYPE(%d)", uint32(l))
}

// IP returns the IP packet inside frame, a packet of link type l. It
// returns nil if frame is too short or l is not a link type this package
// knows, or if an Ethernet frame does not carry IPv4 or IPv6.
func (l LinkType) IP(frame []byte) []byte {
	switch l {
	case LinkTypeRaw:
		return frame
	case LinkTypeEthernet:
		if len(frame) < 14 {
			return nil
		}
		switch binary.BigEndian.Uint16(frame[12:14]) {
		case 0x0800, 0x86dd:
			return frame[14:]
		}
	}
	return nil
}

// Packet is one captured packet.
type Packet struct {
	// Time is when the kernel handled the packet.
	Time time.Time
	// Data is the packet as captured, starting with its link-layer header;
	// it may be shorter than Length if the capture truncated it.
	Data []byte
	// Length is the packet's length on the wire.
	Length int
}

// DefaultSnapLen is the snapshot length written into pcap headers and the
// largest packet [Capture] keeps whole. Linux's loopback device can carry
// GSO packets of up to 64 KiB plus headers.
const DefaultSnapLen = 262144

const (
	magicMicro        = 0xa1b2c3d4
	magicNano         = 0xa1b23c4d
	fileHeaderLen     = 24
	recordHeaderLen   = 16
	maxRecordCapLen   = 1 << 24 // sanity bound for reading untrusted files
	pcapVersionMajor  = 2
	pcapVersionMinor  = 4
	microsecondPerSec = 1e6
)

// ErrFormat is returned (wrapped) for input that is not a pcap file this
// package can read.
var ErrFormat = errors.New("capture: not a pcap file")

// Writer writes a classic pcap file: little-endian, microsecond timestamps.
// Its methods mirror gopacket's pcapgo.Writer.
type Writer struct {
	w   io.Writer
	buf [fileHeaderLen]byte
}

// NewWriter returns a Writer that writes to w. Call WriteFileHeader once
// before the first WritePacket.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// WriteFileHeader writes the pcap global header.
func (w *Writer) WriteFileHeader(snaplen uint32, lt LinkType) error {
	b := w.buf[:fileHeaderLen]
	le := binary.LittleEndian
	le.PutUint32(b[0:], magicMicro)
	le.PutUint16(b[4:], pcapVersionMajor)
	le.PutUint16(b[6:], pcapVersionMinor)
	le.PutUint32(b[8:], 0)  // thiszone
	le.PutUint32(b[12:], 0) // sigfigs
	le.PutUint32(b[16:], snaplen)
	le.PutUint32(b[20:], uint32(lt))
	_, err := w.w.Write(b)
	return err
}

// WritePacket writes one packet record. p.Length is written as the
// original length; if it is smaller than len(p.Data), len(p.Data) is used.
func (w *Writer) WritePacket(p Packet) error {
	b := w.buf[:recordHeaderLen]
	le := binary.LittleEndian
	length := max(p.Length, len(p.Data))
	t := p.Time.UnixMicro()
	le.PutUint32(b[0:], uint32(t/microsecondPerSec))
	le.PutUint32(b[4:], uint32(t%microsecondPerSec))
	le.PutUint32(b[8:], uint32(len(p.Data)))
	le.PutUint32(b[12:], uint32(length))
	if _, err := w.w.Write(b); err != nil {
		return err
	}
	_, err := w.w.Write(p.Data)
	return err
}

// WriteFile writes pkts, packets of link type lt, to a new pcap file at
// path.
func WriteFile(path string, lt LinkType, pkts []Packet) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	bw := bufio.NewWriter(f)
	w := NewWriter(bw)
	if err := w.WriteFileHeader(DefaultSnapLen, lt); err != nil {
		return err
	}
	for _, p := range pkts {
		if err := w.WritePacket(p); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// Reader reads a classic pcap file of either byte order and either
// timestamp resolution. Its methods mirror gopacket's pcapgo.Reader.
type Reader struct {
	r        io.Reader
	order    binary.ByteOrder
	nanos    bool
	linkType LinkType
	snaplen  uint32
	hdr      [recordHeaderLen]byte
}

// NewReader reads the pcap global header from r and returns a Reader
// positioned at the first packet.
func NewReader(r io.Reader) (*Reader, error) {
	var h [fileHeaderLen]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return nil, fmt.Errorf("%w: short header: %v", ErrFormat, err)
	}
	rd := &Reader{r: r}
	switch {
	case binary.LittleEndian.Uint32(h[:]) == magicMicro:
		rd.order = binary.LittleEndian
	case binary.LittleEndian.Uint32(h[:]) == magicNano:
		rd.order, rd.nanos = binary.LittleEndian, true
	case binary.BigEndian.Uint32(h[:]) == magicMicro:
		rd.order = binary.BigEndian
	case binary.BigEndian.Uint32(h[:]) == magicNano:
		rd.order, rd.nanos = binary.BigEndian, true
	default:
		return nil, fmt.Errorf("%w: bad magic %x", ErrFormat, h[:4])
	}
	if major := rd.order.Uint16(h[4:]); major != pcapVersionMajor {
		return nil, fmt.Errorf("%w: version %d", ErrFormat, major)
	}
	rd.snaplen = rd.order.Uint32(h[16:])
	rd.linkType = LinkType(rd.order.Uint32(h[20:]) & 0x0fffffff)
	return rd, nil
}

// LinkType returns the link type of the file's packets.
func (r *Reader) LinkType() LinkType { return r.linkType }

// Snaplen returns the snapshot length recorded in the file header.
func (r *Reader) Snaplen() uint32 { return r.snaplen }

// ReadPacket returns the next packet, or io.EOF after the last one.
func (r *Reader) ReadPacket() (Packet, error) {
	if _, err := io.ReadFull(r.r, r.hdr[:]); err != nil {
		if err == io.ErrUnexpectedEOF {
			return Packet{}, fmt.Errorf("%w: truncated record header", ErrFormat)
		}
		return Packet{}, err
	}
	sec := int64(r.order.Uint32(r.hdr[0:]))
	frac := int64(r.order.Uint32(r.hdr[4:]))
	capLen := r.order.Uint32(r.hdr[8:])
	origLen := r.order.Uint32(r.hdr[12:])
	if capLen > maxRecordCapLen {
		return Packet{}, fmt.Errorf("%w: record of %d bytes", ErrFormat, capLen)
	}
	if !r.nanos {
		frac *= 1000
	}
	p := Packet{Time: time.Unix(sec, frac), Data: make([]byte, capLen), Length: int(origLen)}
	if _, err := io.ReadFull(r.r, p.Data); err != nil {
		return Packet{}, fmt.Errorf("%w: truncated record: %v", ErrFormat, err)
	}
	return p, nil
}

// ReadAll reads a whole pcap stream and returns its link type and packets.
func ReadAll(r io.Reader) (LinkType, []Packet, error) {
	rd, err := NewReader(r)
	if err != nil {
		return 0, nil, err
	}
	var pkts []Packet
	for {
		p, err := rd.ReadPacket()
		if err == io.EOF {
			return rd.LinkType(), pkts, nil
		}
		if err != nil {
			return 0, nil, err
		}
		pkts = append(pkts, p)
	}
}

// ReadFile reads the pcap file at path.
func ReadFile(path string) (LinkType, []Packet, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, nil, err
	}
	defer f.Close()
	return ReadAll(bufio.NewReader(f))
}
