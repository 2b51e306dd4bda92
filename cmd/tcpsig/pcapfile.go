package main

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// A streaming reader of pcap and pcapng files: one record at a time into
// a reused buffer, every length checked before it is used, so a hostile
// file can make it neither panic nor allocate more than maxRecord.
//
// (gopacket's pcapgo would do, but on Linux it imports golang.org/x/net,
// which this module does not require.)

// maxRecord bounds one packet record (and pcapng block): 256 KiB is
// libpcap's MAXIMUM_SNAPLEN, the rest is room for GRO-sized loopback
// captures.
const maxRecord = 1 << 20

const (
	pcapMagicMicro = 0xa1b2c3d4
	pcapMagicNano  = 0xa1b23c4d
	pcapngSHB      = 0x0a0d0d0a
	pcapngBOM      = 0x1a2b3c4d
	pcapngIDB      = 1
	pcapngPB       = 2 // obsolete packet block
	pcapngSPB      = 3
	pcapngEPB      = 6
)

// frame is one captured packet.
type frame struct {
	data     []byte // valid until the next read
	linkType uint32
	origLen  int // the packet's length on the wire
}

// pcapReader reads a classic pcap file.
type pcapReader struct {
	r        *bufio.Reader
	order    binary.ByteOrder
	linkType uint32
	hdr      [16]byte
	buf      []byte
}

func newPcapReader(r *bufio.Reader) (*pcapReader, error) {
	var h [24]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return nil, errors.New("pcap: file header truncated")
	}
	p := &pcapReader{r: r}
	switch {
	case binary.LittleEndian.Uint32(h[:]) == pcapMagicMicro || binary.LittleEndian.Uint32(h[:]) == pcapMagicNano:
		p.order = binary.LittleEndian
	case binary.BigEndian.Uint32(h[:]) == pcapMagicMicro || binary.BigEndian.Uint32(h[:]) == pcapMagicNano:
		p.order = binary.BigEndian
	default:
		return nil, errors.New("not a pcap or pcapng capture")
	}
	if major := p.order.Uint16(h[4:]); major != 2 {
		return nil, fmt.Errorf("pcap: version %d.%d is not supported", major, p.order.Uint16(h[6:]))
	}
	p.linkType = p.order.Uint32(h[20:]) & 0x03ffffff // LT_LINKTYPE: the upper bits are FCS flags
	return p, nil
}

func (p *pcapReader) next() (frame, error) {
	if _, err := io.ReadFull(p.r, p.hdr[:]); err != nil {
		if err == io.EOF {
			return frame{}, io.EOF
		}
		return frame{}, io.ErrUnexpectedEOF
	}
	incl, orig := p.order.Uint32(p.hdr[8:]), p.order.Uint32(p.hdr[12:])
	if incl > maxRecord {
		return frame{}, fmt.Errorf("pcap: record of %d bytes (the limit is %d)", incl, maxRecord)
	}
	if cap(p.buf) < int(incl) {
		p.buf = make([]byte, incl)
	}
	data := p.buf[:incl]
	if _, err := io.ReadFull(p.r, data); err != nil {
		return frame{}, io.ErrUnexpectedEOF
	}
	return frame{data: data, linkType: p.linkType, origLen: int(max(orig, incl))}, nil
}

// pcapngReader reads a pcapng file: any number of sections, each with its
// byte order and interfaces.
type pcapngReader struct {
	r      *bufio.Reader
	order  binary.ByteOrder
	ifaces []uint32 // link type per interface of the current section
	buf    []byte
}

func newPcapngReader(r *bufio.Reader) *pcapngReader { return &pcapngReader{r: r} }

func (p *pcapngReader) next() (frame, error) {
	for {
		var h [8]byte
		if _, err := io.ReadFull(p.r, h[:]); err != nil {
			if err == io.EOF {
				return frame{}, io.EOF
			}
			return frame{}, io.ErrUnexpectedEOF
		}
		typ := binary.LittleEndian.Uint32(h[:]) // the SHB type reads the same both ways
		if typ == pcapngSHB {
			bom, err := p.r.Peek(4)
			if err != nil {
				return frame{}, io.ErrUnexpectedEOF
			}
			switch {
			case binary.LittleEndian.Uint32(bom) == pcapngBOM:
				p.order = binary.LittleEndian
			case binary.BigEndian.Uint32(bom) == pcapngBOM:
				p.order = binary.BigEndian
			default:
				return frame{}, errors.New("pcapng: section header with a bad byte-order magic")
			}
			p.ifaces = p.ifaces[:0]
		} else if p.order == nil {
			return frame{}, errors.New("not a pcap or pcapng capture")
		} else {
			typ = p.order.Uint32(h[:])
		}
		total := p.order.Uint32(h[4:])
		if total < 12 || total%4 != 0 {
			return frame{}, fmt.Errorf("pcapng: block of length %d", total)
		}
		body := int(total) - 12 // without type, length and the trailing length
		switch typ {
		case pcapngSHB, pcapngIDB, pcapngEPB, pcapngSPB, pcapngPB:
		default:
			if _, err := p.r.Discard(body + 4); err != nil {
				return frame{}, io.ErrUnexpectedEOF
			}
			continue
		}
		if body > maxRecord {
			return frame{}, fmt.Errorf("pcapng: block of %d bytes (the limit is %d)", total, maxRecord)
		}
		if cap(p.buf) < body+4 {
			p.buf = make([]byte, body+4)
		}
		b := p.buf[:body+4]
		if _, err := io.ReadFull(p.r, b); err != nil {
			return frame{}, io.ErrUnexpectedEOF
		}
		if p.order.Uint32(b[body:]) != total {
			return frame{}, errors.New("pcapng: block lengths at its start and end differ")
		}
		b = b[:body]
		f, ok, err := p.block(typ, b)
		if err != nil || ok {
			return f, err
		}
	}
}

// block interprets one block's body; ok when it is a packet.
func (p *pcapngReader) block(typ uint32, b []byte) (f frame, ok bool, err error) {
	o := p.order
	switch typ {
	case pcapngSHB:
		if len(b) < 16 {
			return f, false, errors.New("pcapng: section header block too short")
		}
		if major := o.Uint16(b[4:]); major != 1 {
			return f, false, fmt.Errorf("pcapng: version %d is not supported", major)
		}
		return f, false, nil
	case pcapngIDB:
		if len(b) < 8 {
			return f, false, errors.New("pcapng: interface description block too short")
		}
		p.ifaces = append(p.ifaces, uint32(o.Uint16(b)))
		return f, false, nil
	case pcapngSPB:
		if len(b) < 4 {
			return f, false, errors.New("pcapng: simple packet block too short")
		}
		orig := o.Uint32(b)
		data := b[4:]
		if uint32(len(data)) > orig {
			data = data[:orig]
		}
		return p.packet(0, data, orig)
	}
	// EPB and the obsolete PB share their layout but for the interface
	// ID (32 bits in EPB; 16 bits and a drop count in PB).
	if len(b) < 20 {
		return f, false, errors.New("pcapng: packet block too short")
	}
	iface := o.Uint32(b)
	if typ == pcapngPB {
		iface = uint32(o.Uint16(b))
	}
	capLen, orig := o.Uint32(b[12:]), o.Uint32(b[16:])
	if uint64(capLen) > uint64(len(b)-20) {
		return f, false, fmt.Errorf("pcapng: packet of %d bytes in a block of %d", capLen, len(b)+12)
	}
	return p.packet(iface, b[20:20+capLen], orig)
}

func (p *pcapngReader) packet(iface uint32, data []byte, orig uint32) (frame, bool, error) {
	if uint64(iface) >= uint64(len(p.ifaces)) {
		return frame{}, false, fmt.Errorf("pcapng: packet on interface %d, which the section does not describe", iface)
	}
	return frame{data: data, linkType: p.ifaces[iface], origLen: int(max(orig, uint32(len(data))))}, true, nil
}
