package capture

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
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

// ErrFormat is returned (wrapped) for input that is not a pcap file this
// package can read.
var ErrFormat = errors.New("capture: not a pcap file")

// WriteFile writes pkts, packets of link type lt, to a new pcap file at
// path with gopacket's pcapgo: little-endian, microsecond timestamps. A
// packet's Length smaller than len(Data) is written as len(Data).
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
	w := pcapgo.NewWriter(bw)
	if err := w.WriteFileHeader(DefaultSnapLen, layers.LinkType(lt)); err != nil {
		return err
	}
	for _, p := range pkts {
		ci := gopacket.CaptureInfo{Timestamp: p.Time, CaptureLength: len(p.Data), Length: max(p.Length, len(p.Data))}
		if err := w.WritePacket(ci, p.Data); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// ReadAll reads a whole pcap stream, of either byte order and timestamp
// resolution, with gopacket's pcapgo, and returns its link type and
// packets.
func ReadAll(r io.Reader) (LinkType, []Packet, error) {
	rd, err := pcapgo.NewReader(r)
	if err != nil {
		return 0, nil, fmt.Errorf("%w: %v", ErrFormat, err)
	}
	var pkts []Packet
	for {
		data, ci, err := rd.ReadPacketData()
		if err == io.EOF && ci.CaptureLength == 0 {
			return LinkType(rd.LinkType()), pkts, nil
		}
		if err == io.EOF { // after a record header
			err = io.ErrUnexpectedEOF
		}
		if err != nil {
			return 0, nil, fmt.Errorf("%w: packet %d: %v", ErrFormat, len(pkts)+1, err)
		}
		pkts = append(pkts, Packet{Time: ci.Timestamp, Data: data, Length: ci.Length})
	}
}

// ReadFile reads the pcap file at path.
func ReadFile(path string) (LinkType, []Packet, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, nil, err
	}
	defer f.Close()
	return ReadAll(f)
}
