package pcapverify

import (
	"bufio"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// Captures are read with gopacket's pcapgo, with two guards for hostile
// files. A pcap file's snap length is replaced by maxRecord: pcapgo takes
// records up to the file's own, which may be 4 GiB. A pcapng stream goes
// through ngGuard, which checks each block's framing: pcapgo trusts a
// block's lengths, and TestPcapgoTrustsBlockLengths shows what it does
// with a block shorter than its fields or a packet longer than its block.
// TestHostileLengths is what the two must keep true.

// maxRecord bounds one packet record (and pcapng block): 256 KiB is
// libpcap's MAXIMUM_SNAPLEN, the rest is room for GRO-sized loopback
// captures.
const maxRecord = 1 << 20

// maxInterfaces bounds the interfaces of a pcapng section: pcapgo keeps
// some 250 bytes for each 20-byte interface block.
const maxInterfaces = 1 << 16

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

// ErrCapture is wrapped by every error of Open and Capture.Next about
// the capture itself (not a pcap or pcapng file, truncated, a block or a
// link type it cannot read, or the reader's own error, which stays
// wrapped too); the error's text is its own one line, for a report.
var ErrCapture = errors.New("pcapverify: unreadable capture")

// captureError is an error about the capture: its message, wrapping
// ErrCapture and the cause, if any.
type captureError struct {
	msg   string
	cause error
}

func (e *captureError) Error() string { return e.msg }

func (e *captureError) Unwrap() []error {
	if e.cause == nil {
		return []error{ErrCapture}
	}
	return []error{ErrCapture, e.cause}
}

// captureErrorf is a captureError of cause (nil for none) with the
// formatted message.
func captureErrorf(cause error, format string, a ...any) error {
	return &captureError{msg: fmt.Sprintf(format, a...), cause: cause}
}

var errTruncated = captureErrorf(nil, "the file ends in the middle of a packet (truncated capture)")

// A Capture reads the frames of a pcap or pcapng file (gzipped or not),
// one at a time into pcapgo's reused buffer, and finds the IP packet in
// each: memory does not grow with the file.
type Capture struct {
	pcap  *pcapgo.Reader
	lt    layers.LinkType // of a pcap file's frames
	ng    *pcapgo.NgReader
	guard *ngGuard
	link  linkDecoder
}

// Open starts reading a capture, recognising its format from its first
// bytes. Its errors are one line, for a report.
func Open(r io.Reader) (*Capture, error) {
	if r == nil {
		return nil, ErrNotSetUp
	}
	br := bufio.NewReaderSize(r, 1<<16)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, captureErrorf(err, "gzip: %v", err)
		}
		br = bufio.NewReaderSize(zr, 1<<16)
	}
	magic, err := br.Peek(4)
	if err != nil {
		if len(magic) == 0 {
			return nil, captureErrorf(nil, "empty file, not a pcap or pcapng capture")
		}
		return nil, captureErrorf(nil, "not a pcap or pcapng capture (too short)")
	}
	if binary.LittleEndian.Uint32(magic) == pcapngSHB {
		c := &Capture{guard: &ngGuard{r: br}}
		if c.ng, err = pcapgo.NewNgReader(c.guard, pcapgo.NgReaderOptions{WantMixedLinkType: true}); err != nil {
			return nil, c.explain(err)
		}
		return c, nil
	}
	var order binary.ByteOrder
	switch {
	case binary.LittleEndian.Uint32(magic) == pcapMagicMicro || binary.LittleEndian.Uint32(magic) == pcapMagicNano:
		order = binary.LittleEndian
	case binary.BigEndian.Uint32(magic) == pcapMagicMicro || binary.BigEndian.Uint32(magic) == pcapMagicNano:
		order = binary.BigEndian
	default:
		return nil, captureErrorf(nil, "not a pcap or pcapng capture")
	}
	h, err := br.Peek(24)
	if err != nil {
		return nil, captureErrorf(nil, "pcap: file header truncated")
	}
	// pcapgo keeps 16 bits of the link type; the upper 6 are FCS flags.
	lt := order.Uint32(h[20:]) & 0x03ffffff
	c := &Capture{lt: layers.LinkType(lt)}
	if c.pcap, err = pcapgo.NewReader(br); err != nil {
		return nil, c.explain(err)
	}
	if uint32(c.lt) != lt || !supportedLink(c.lt) {
		return nil, unsupportedLink(lt)
	}
	c.pcap.SetSnaplen(maxRecord)
	return c, nil
}

// Next returns the next frame's IP packet (nil when it carries none) and
// whether the capture truncated the frame; io.EOF at the end. The packet
// is valid until the next call.
func (c *Capture) Next() (ip []byte, truncated bool, err error) {
	if c == nil || (c.pcap == nil && c.ng == nil) {
		return nil, false, ErrNotSetUp
	}
	var data []byte
	var ci gopacket.CaptureInfo
	lt := c.lt
	if c.ng != nil {
		if data, ci, err = c.ng.ZeroCopyReadPacketData(); err == nil {
			lt = ci.AncillaryData[0].(layers.LinkType)
		}
	} else if data, ci, err = c.pcap.ZeroCopyReadPacketData(); err == io.EOF && ci.CaptureLength > 0 {
		err = errTruncated // the file ends after a record header
	}
	if err != nil {
		return nil, false, c.explain(err)
	}
	if !supportedLink(lt) {
		return nil, false, unsupportedLink(uint32(lt))
	}
	return c.link.ip(lt, data), len(data) < ci.Length, nil
}

// explain turns pcapgo's error into one line for the report, preferring
// the guard's, which names the block at fault.
func (c *Capture) explain(err error) error {
	if c.guard != nil && c.guard.err != nil && c.guard.err != io.EOF {
		if errors.Is(c.guard.err, ErrCapture) {
			return c.guard.err
		}
		return captureErrorf(c.guard.err, "%v", c.guard.err) // the reader's own
	}
	switch {
	case err == io.EOF || err == errTruncated:
		return err
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errTruncated
	case c.guard != nil:
		return captureErrorf(err, "pcapng: %v", err)
	}
	return captureErrorf(err, "pcap: %v", err)
}

// ngGuard passes a pcapng stream on to pcapgo, checking each block's
// framing first: its length is a multiple of 4 and covers the block's
// fields, a packet fits in its block, and a block is at most maxRecord
// long. It passes on only the blocks the verifier needs, sections,
// interfaces and packets: pcapgo keeps every name record and decryption
// secret of a section in memory.
type ngGuard struct {
	r      *bufio.Reader
	order  binary.ByteOrder
	left   int // bytes of the current block still to pass on
	ifaces int // interface blocks in the current section
	err    error
}

// Read passes on the bytes of the blocks g lets through.
func (g *ngGuard) Read(p []byte) (int, error) {
	for g.left == 0 && g.err == nil {
		g.left, g.err = g.block()
	}
	if g.err != nil {
		return 0, g.err
	}
	n, err := g.r.Read(p[:min(len(p), g.left)])
	g.left -= n
	if n == 0 && err != nil {
		g.err = truncated(err) // an io.EOF here would end pcapgo's read as if between blocks
		err = g.err
	}
	return n, err
}

// block reads the header of the next block and returns how many of its
// bytes to pass on; 0 for a block it skipped.
func (g *ngGuard) block() (int, error) {
	h, err := g.r.Peek(12)
	if err == io.EOF && len(h) == 0 {
		return 0, io.EOF
	} else if err != nil {
		return 0, truncated(err)
	}
	typ := binary.LittleEndian.Uint32(h) // the SHB type reads the same both ways
	if typ == pcapngSHB {
		switch uint32(pcapngBOM) {
		case binary.LittleEndian.Uint32(h[8:]):
			g.order = binary.LittleEndian
		case binary.BigEndian.Uint32(h[8:]):
			g.order = binary.BigEndian
		default:
			return 0, captureErrorf(nil, "pcapng: section header with a bad byte-order magic")
		}
		g.ifaces = 0
	}
	typ, total := g.order.Uint32(h), g.order.Uint32(h[4:])
	var need uint32 // the block's fields: pcapgo reads them whatever its length
	keep := true
	switch typ {
	case pcapngSHB:
		need = 16
	case pcapngIDB:
		need = 8
	case pcapngEPB, pcapngPB:
		need = 20
	case pcapngSPB:
		need = 4
	default:
		keep = false
	}
	if total < 12+need || total%4 != 0 || (keep && total > maxRecord) {
		return 0, captureErrorf(nil, "pcapng: block of length %d", total)
	}
	switch typ {
	case pcapngIDB:
		if g.ifaces++; g.ifaces > maxInterfaces {
			return 0, captureErrorf(nil, "pcapng: more than %d interfaces in a section", maxInterfaces)
		}
	case pcapngSPB:
		if orig := g.order.Uint32(h[8:]); orig > maxRecord {
			return 0, captureErrorf(nil, "pcapng: packet of %d bytes (the limit is %d)", orig, maxRecord)
		}
	case pcapngEPB, pcapngPB:
		if h, err = g.r.Peek(28); err != nil {
			return 0, truncated(err)
		}
		if n := g.order.Uint32(h[20:]); n > total-32 {
			return 0, captureErrorf(nil, "pcapng: packet of %d bytes in a block of %d", n, total)
		}
	}
	if !keep {
		_, err := g.r.Discard(int(total))
		return 0, truncated(err)
	}
	return int(total), nil
}

// truncated turns an EOF inside a block into errTruncated.
func truncated(err error) error {
	if err == io.EOF {
		return errTruncated
	}
	return err
}
