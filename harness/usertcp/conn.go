package usertcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/netip"
	"os"
	"time"
)

type state int

const (
	stateListen      state = iota // Accept: waiting for a SYN
	stateSynSent                  // Dial: SYN sent
	stateSynReceived              // Accept: SYN-ACK sent
	stateEstablished              // data both ways; a FIN may have been sent or received
	stateClosed                   // closed by Close, Abort or a RST
)

const (
	recvWindow = 65535 // advertised when the receive buffer is empty (no window scaling)
	maxPacket  = 60 + 60 + 65535
	// pollSlice bounds each wait for a packet while a context can cancel
	// Dial or Accept.
	pollSlice = 50 * time.Millisecond
)

// errRTO is the internal signal that the retransmission timer expired.
var errRTO = errors.New("usertcp: retransmission timeout")

// Conn is one TCP connection of a userspace endpoint. It is driven by the
// goroutine that calls its methods: a Conn is not safe for concurrent use,
// and packets are read from the Link only while a method runs.
type Conn struct {
	link  Link
	cfg   Config
	local netip.AddrPort
	// remote is invalid while Accept waits for a SYN from anyone.
	remote netip.AddrPort

	state    state
	iss, irs uint32

	// Send side. sndUna is the oldest unacknowledged sequence number
	// and sndNxt the next to send; sndMax is the highest ever sent, to
	// tell retransmissions. sndBuf holds the unacknowledged data; once
	// the SYN is acknowledged sndBuf[0] has sequence number sndUna.
	sndUna, sndNxt, sndMax uint32
	sndWnd                 uint32
	sndBuf                 []byte
	synAcked               bool
	finSent, finAcked      bool
	finSeq                 uint32
	peerMSS                int

	// Receive side.
	rcvNxt  uint32
	rcvBuf  []byte
	finRcvd bool
	lastWnd uint16

	err      error // why the connection ended (ErrReset, ErrRefused)
	deadline time.Time
	ctx      context.Context // set while Dial or Accept runs
	ipID     uint16
	rbuf     []byte
	wbuf     []byte
	sbuf     []byte // what Auth.Outbound returns
	stats    Stats
}

func newConn(link Link, cfg Config) (*Conn, error) {
	cfg = cfg.withDefaults()
	if link == nil {
		return nil, errors.New("usertcp: nil Link")
	}
	if !cfg.Local.IsValid() || cfg.Local.Port() == 0 {
		return nil, errors.New("usertcp: Config.Local needs an address and a port")
	}
	c := &Conn{
		link:  link,
		cfg:   cfg,
		local: unmap(cfg.Local),
		rbuf:  make([]byte, maxPacket),
		wbuf:  make([]byte, maxPacket),
		sbuf:  make([]byte, 0, maxPacket+maxOptionLen),
	}
	if cfg.Remote.IsValid() {
		c.remote = unmap(cfg.Remote)
		if c.remote.Addr().Is4() != c.local.Addr().Is4() {
			return nil, errors.New("usertcp: Local and Remote are of different address families")
		}
	}
	if cfg.MSS <= 0 || cfg.MSS > 65535 {
		return nil, fmt.Errorf("usertcp: MSS %d leaves no room for data", cfg.MSS)
	}
	c.iss = cfg.ISS
	for c.iss == 0 {
		c.iss = rand.Uint32()
	}
	c.sndUna, c.sndNxt, c.sndMax = c.iss, c.iss, c.iss
	return c, nil
}

func unmap(ap netip.AddrPort) netip.AddrPort {
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}

// Dial opens a connection from cfg.Local to cfg.Remote: it sends a SYN,
// retransmitting it as configured, and completes the handshake. The
// context can cancel the wait.
func Dial(ctx context.Context, link Link, cfg Config) (*Conn, error) {
	if !cfg.Remote.IsValid() {
		return nil, errors.New("usertcp: Dial needs Config.Remote")
	}
	c, err := newConn(link, cfg)
	if err != nil {
		return nil, err
	}
	c.ctx = ctx
	defer func() { c.ctx = nil }()
	c.state = stateSynSent
	sendSyn := func() error { return c.output(flagSYN, c.iss, nil) }
	if err := sendSyn(); err != nil {
		return nil, err
	}
	c.sndNxt = c.iss + 1
	if err := c.await(func() bool { return c.state == stateEstablished }, sendSyn); err != nil {
		return nil, err
	}
	return c, nil
}

// Accept waits for a SYN to cfg.Local (from cfg.Remote if that is set),
// answers it with a SYN-ACK that carries cfg.Greeting if there is one, and
// completes the handshake, retransmitting the SYN-ACK as configured. The
// context bounds the wait for the SYN.
func Accept(ctx context.Context, link Link, cfg Config) (*Conn, error) {
	c, err := newConn(link, cfg)
	if err != nil {
		return nil, err
	}
	c.ctx = ctx
	defer func() { c.ctx = nil }()
	c.state = stateListen
	c.sndBuf = append(c.sndBuf, cfg.Greeting...)
	if err := c.await(func() bool { return c.state != stateListen }, nil); err != nil {
		return nil, err
	}
	if err := c.await(func() bool { return c.state == stateEstablished }, c.sendSynAck); err != nil {
		return nil, err
	}
	// A peer that discarded the greeting on the SYN-ACK acknowledged only
	// the SYN: send the greeting again now, as ordinary data.
	c.sndNxt = c.sndUna
	if err := c.flush(); err != nil {
		return nil, err
	}
	return c, nil
}

// sendSynAck sends (or resends) the SYN-ACK with as much of the greeting
// as fits in one segment.
func (c *Conn) sendSynAck() error {
	n := min(len(c.sndBuf), c.maxPayload())
	if err := c.output(flagSYN|flagACK, c.iss, c.sndBuf[:n]); err != nil {
		return err
	}
	c.sndNxt = c.iss + 1 + uint32(n)
	return nil
}

// LocalAddr returns the local address and port.
func (c *Conn) LocalAddr() netip.AddrPort { return c.local }

// RemoteAddr returns the peer's address and port.
func (c *Conn) RemoteAddr() netip.AddrPort { return c.remote }

// Stats returns the connection's counters.
func (c *Conn) Stats() Stats { return c.stats }

// SetDeadline sets a deadline for Read, Write and Close; the zero time
// removes it. When it passes they return an error wrapping
// os.ErrDeadlineExceeded.
func (c *Conn) SetDeadline(t time.Time) { c.deadline = t }

// Write sends p and returns once the peer has acknowledged all of it.
func (c *Conn) Write(p []byte) (int, error) {
	switch {
	case c.err != nil:
		return 0, c.err
	case c.state == stateClosed || c.finSent:
		return 0, ErrClosed
	}
	c.sndBuf = append(c.sndBuf, p...)
	if err := c.flush(); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Read reads data the peer sent, waiting for some if none is buffered. It
// returns io.EOF once the peer's FIN has been read past.
func (c *Conn) Read(p []byte) (int, error) {
	if len(c.rcvBuf) == 0 {
		if c.finRcvd {
			return 0, io.EOF
		}
		if c.err == nil && c.state == stateClosed {
			return 0, ErrClosed
		}
		if err := c.await(func() bool { return len(c.rcvBuf) > 0 || c.finRcvd }, nil); err != nil {
			return 0, err
		}
		if len(c.rcvBuf) == 0 {
			return 0, io.EOF
		}
	}
	n := copy(p, c.rcvBuf)
	c.rcvBuf = c.rcvBuf[n:]
	if len(c.rcvBuf) == 0 {
		c.rcvBuf = c.rcvBuf[:0:0]
	}
	// The window opened well beyond what the peer last heard: tell it.
	if c.lastWnd < recvWindow/2 && c.window() >= recvWindow/2 && !c.finRcvd {
		if err := c.output(flagACK, c.sndNxt, nil); err != nil {
			return n, err
		}
	}
	return n, nil
}

// Close sends a FIN after any unacknowledged data, and waits until it is
// acknowledged and the peer's FIN has arrived. There is no TIME-WAIT.
// Data the peer sends after Close is discarded.
func (c *Conn) Close() error {
	if c.state == stateClosed {
		if c.err != nil {
			return nil
		}
		return ErrClosed
	}
	defer func() { c.state = stateClosed }()
	if c.err != nil {
		return c.err
	}
	if err := c.flush(); err != nil {
		return err
	}
	c.finSent, c.finSeq = true, c.sndNxt
	c.sndNxt++
	sendFin := func() error {
		if c.finAcked {
			return nil // only waiting for the peer's FIN
		}
		return c.output(flagFIN|flagACK, c.finSeq, nil)
	}
	if err := sendFin(); err != nil {
		return err
	}
	return c.await(func() bool { return c.finAcked && c.finRcvd }, sendFin)
}

// Abort sends a RST and closes the connection at once.
func (c *Conn) Abort() error {
	if c.state == stateClosed {
		return nil
	}
	c.state = stateClosed
	return c.output(flagRST|flagACK, c.sndNxt, nil)
}

// maxPayload is the largest payload of one segment.
func (c *Conn) maxPayload() int {
	mss := c.cfg.MSS
	if c.peerMSS != 0 {
		mss = min(mss, c.peerMSS)
	}
	return max(mss, 1)
}

func (c *Conn) window() uint16 {
	return uint16(max(recvWindow-len(c.rcvBuf), 0))
}

// flush sends the buffered data and waits until it is all acknowledged,
// going back to the oldest unacknowledged byte on each timeout.
func (c *Conn) flush() error {
	if err := c.sendData(); err != nil {
		return err
	}
	return c.await(func() bool { return len(c.sndBuf) == 0 }, func() error {
		c.sndNxt = c.sndUna
		return c.sendData()
	})
}

// sendData sends what the window allows of the data not yet in flight.
func (c *Conn) sendData() error {
	maxSeg := c.maxPayload()
	for {
		off := int(c.sndNxt - c.sndUna) // bytes of sndBuf in flight
		if off >= len(c.sndBuf) {
			return nil
		}
		wnd := int(c.sndWnd)
		if wnd == 0 && off == 0 {
			wnd = 1 // a zero-window probe
		}
		if off >= wnd {
			return nil
		}
		n := min(len(c.sndBuf)-off, maxSeg, wnd-off)
		flags := uint8(flagACK)
		if off+n == len(c.sndBuf) {
			flags |= flagPSH
		}
		if err := c.output(flags, c.sndNxt, c.sndBuf[off:off+n]); err != nil {
			return err
		}
		c.sndNxt += uint32(n)
	}
}

// output builds, signs and sends one segment.
func (c *Conn) output(flags uint8, seq uint32, payload []byte) error {
	syn := flags&flagSYN != 0
	h := header{
		src: c.local, dst: c.remote,
		seq: seq, ack: c.rcvNxt, flags: flags,
		wnd:  c.window(),
		ipID: c.ipID,
	}
	if syn {
		h.mss = c.cfg.MSS
	}
	c.ipID++
	pkt, tcpOff := build(c.wbuf, h, payload)
	finish(pkt, tcpOff)
	if c.cfg.Auth != nil {
		out, err := c.cfg.Auth.Outbound(c.sbuf[:0], pkt)
		if err != nil {
			return fmt.Errorf("usertcp: sign: %w", err)
		}
		pkt = out
	}
	if err := c.link.WritePacket(pkt); err != nil {
		return fmt.Errorf("usertcp: write: %w", err)
	}
	c.lastWnd = h.wnd
	c.stats.Sent++
	end := seq + uint32(len(payload))
	if flags&(flagSYN|flagFIN) != 0 {
		end++
	}
	if seqLT(seq, c.sndMax) && flags&flagRST == 0 && end != seq {
		c.stats.Retransmits++
	}
	if seqLT(c.sndMax, end) {
		c.sndMax = end
	}
	return nil
}

// await processes incoming packets until done reports true. With a
// resend function, a retransmission timer runs: when it expires resend is
// called and the timeout doubles, at most MaxRetries times in a row
// without an acknowledgement that makes progress; then ErrTimeout.
func (c *Conn) await(done func() bool, resend func() error) error {
	rto := c.cfg.RTO
	tries := 0
	var timer time.Time
	if resend != nil {
		timer = time.Now().Add(rto)
	}
	for !done() {
		if c.err != nil {
			return c.err
		}
		progress, err := c.poll(timer)
		switch {
		case err == errRTO:
			if tries++; tries > c.cfg.MaxRetries {
				return ErrTimeout
			}
			if err := resend(); err != nil {
				return err
			}
			rto *= 2
			timer = time.Now().Add(rto)
		case err != nil:
			return err
		case progress && resend != nil:
			tries, rto = 0, c.cfg.RTO
			timer = time.Now().Add(rto)
		}
	}
	return nil
}

// poll reads and processes one packet, waiting at most until timer (the
// zero time: no timer). It reports whether the packet acknowledged new
// data, errRTO when the timer expired, and the user's or the context's
// deadline error.
func (c *Conn) poll(timer time.Time) (progress bool, err error) {
	d, kind := timer, errRTO
	if !c.deadline.IsZero() && (d.IsZero() || c.deadline.Before(d)) {
		d, kind = c.deadline, os.ErrDeadlineExceeded
	}
	if c.ctx != nil {
		if err := c.ctx.Err(); err != nil {
			return false, err
		}
		if c.ctx.Done() != nil {
			if slice := time.Now().Add(pollSlice); d.IsZero() || slice.Before(d) {
				d, kind = slice, nil // only a chance to look at the context
			}
		}
	}
	n, err := c.link.ReadPacket(c.rbuf, d)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		if kind == os.ErrDeadlineExceeded {
			return false, fmt.Errorf("usertcp: %w", os.ErrDeadlineExceeded)
		}
		return false, kind
	}
	if err != nil {
		return false, fmt.Errorf("usertcp: read: %w", err)
	}
	return c.input(c.rbuf[:n])
}

// input checks one packet from the link and, if it is of this
// connection and passes Auth.Inbound, processes what Inbound returns.
func (c *Conn) input(pkt []byte) (bool, error) {
	seg, err := parse(pkt)
	if err != nil || seg.dst != c.local || (c.remote.IsValid() && seg.src != c.remote) {
		c.stats.Ignored++
		return false, nil
	}
	if c.cfg.Auth != nil {
		out, err := c.cfg.Auth.Inbound(pkt[:0], pkt)
		if err == nil {
			seg, err = parse(out)
		}
		if err != nil {
			c.stats.AuthDropped++
			return false, nil
		}
	}
	c.stats.Received++
	return c.handle(seg)
}

// handle runs the state machine on one verified segment of this
// connection (RFC 9293 §3.10.7, reduced to what this endpoint does).
func (c *Conn) handle(seg segment) (bool, error) {
	if seg.flags&flagRST != 0 {
		c.onReset(seg)
		return false, nil
	}
	switch c.state {
	case stateClosed:
		return false, nil
	case stateListen:
		if seg.flags&(flagSYN|flagACK) != flagSYN {
			return false, nil
		}
		c.remote = seg.src
		c.irs, c.rcvNxt = seg.seq, seg.seq+1
		c.peerMSS, c.sndWnd = mssOrDefault(seg.mss), seg.wnd
		c.state = stateSynReceived
		return true, c.sendSynAck()
	case stateSynSent:
		if seg.flags&(flagSYN|flagACK) != flagSYN|flagACK || seg.ack != c.iss+1 {
			return false, nil
		}
		c.irs, c.rcvNxt = seg.seq, seg.seq+1
		c.peerMSS = mssOrDefault(seg.mss)
		c.state = stateEstablished
		c.onAck(seg.ack)
		c.sndWnd = seg.wnd
		// Unlike Linux, accept data on a SYN-ACK (a server-first greeting).
		seg.seq++
		c.receive(seg)
		if len(seg.payload) == 0 && seg.flags&flagFIN == 0 {
			return true, c.output(flagACK, c.sndNxt, nil) // the handshake's third segment
		}
		return true, nil
	case stateSynReceived:
		if seg.flags&(flagSYN|flagACK) == flagSYN {
			if seg.seq == c.irs { // the SYN again: our SYN-ACK was lost
				return false, c.sendSynAck()
			}
			return false, nil
		}
		if seg.flags&flagACK == 0 || !seqLT(c.iss, seg.ack) || seqLT(c.sndNxt, seg.ack) {
			return false, nil
		}
		c.state = stateEstablished
	}
	// Established (possibly with a FIN sent or received).
	if seg.flags&flagSYN != 0 { // the SYN-ACK again: our ACK was lost
		return false, c.output(flagACK, c.sndNxt, nil)
	}
	if seg.flags&flagACK == 0 {
		return false, nil
	}
	progress := c.onAck(seg.ack)
	c.sndWnd = seg.wnd
	if err := c.receive(seg); err != nil {
		return progress, err
	}
	if progress && !c.finSent {
		return true, c.sendData() // the window may have opened
	}
	return progress, nil
}

func mssOrDefault(mss int) int {
	if mss == 0 {
		return defaultMSSRFC
	}
	return mss
}

// onAck takes an acknowledgement number and reports whether it
// acknowledged anything new.
func (c *Conn) onAck(ack uint32) bool {
	if !seqLT(c.sndUna, ack) || seqLT(c.sndNxt, ack) {
		return false
	}
	n := ack - c.sndUna
	if !c.synAcked {
		c.synAcked = true
		c.sndUna++
		n--
	}
	data := min(int(n), len(c.sndBuf))
	c.sndBuf = c.sndBuf[data:]
	c.sndUna += uint32(data)
	if int(n) > data && c.finSent {
		c.finAcked = true
		c.sndUna++
	}
	return true
}

// receive takes the payload and FIN of a segment that is next in
// sequence, trimming what was already received; anything else is dropped
// with a duplicate ACK, for the peer to retransmit.
func (c *Conn) receive(seg segment) error {
	data, fin := seg.payload, seg.flags&flagFIN != 0
	if len(data) == 0 && !fin {
		return nil
	}
	if c.finRcvd {
		return c.output(flagACK, c.sndNxt, nil)
	}
	if seqLT(seg.seq, c.rcvNxt) {
		old := int(c.rcvNxt - seg.seq)
		if old > len(data) || old == len(data) && !fin {
			return c.output(flagACK, c.sndNxt, nil) // all old: re-ACK
		}
		data = data[old:]
	} else if seg.seq != c.rcvNxt {
		return c.output(flagACK, c.sndNxt, nil) // out of order
	}
	c.rcvBuf = append(c.rcvBuf, data...)
	c.rcvNxt += uint32(len(data))
	if fin {
		c.finRcvd = true
		c.rcvNxt++
	}
	return c.output(flagACK, c.sndNxt, nil)
}

// onReset takes a RST: in SYN-SENT it must acknowledge our SYN; later it
// must fall in the receive window (RFC 9293 §3.10.7.3).
func (c *Conn) onReset(seg segment) {
	switch c.state {
	case stateListen, stateClosed:
		return
	case stateSynSent:
		if seg.flags&flagACK != 0 && seg.ack == c.iss+1 {
			c.err, c.state = ErrRefused, stateClosed
		}
		return
	}
	if seqLEQ(c.rcvNxt, seg.seq) && seqLT(seg.seq, c.rcvNxt+uint32(max(c.window(), 1))) {
		c.err, c.state = ErrReset, stateClosed
	}
}
