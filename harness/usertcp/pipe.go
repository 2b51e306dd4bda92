package usertcp

import (
	"os"
	"time"
)

// pipeQueue is how many packets a Pipe holds in each direction; beyond
// that, packets are dropped, as a full device queue drops them.
const pipeQueue = 256

type pipeEnd struct {
	in  <-chan []byte
	out chan<- []byte
}

// Pipe returns the two ends of an in-memory link: a packet written to one
// end is read from the other. It stands in for a network in tests and
// examples.
func Pipe() (Link, Link) {
	a, b := make(chan []byte, pipeQueue), make(chan []byte, pipeQueue)
	return &pipeEnd{in: a, out: b}, &pipeEnd{in: b, out: a}
}

func (p *pipeEnd) ReadPacket(b []byte, deadline time.Time) (int, error) {
	var timeout <-chan time.Time
	if !deadline.IsZero() {
		t := time.NewTimer(time.Until(deadline))
		defer t.Stop()
		timeout = t.C
	}
	select {
	case pkt := <-p.in:
		return copy(b, pkt), nil
	case <-timeout:
		return 0, os.ErrDeadlineExceeded
	}
}

func (p *pipeEnd) WritePacket(pkt []byte) error {
	select {
	case p.out <- append([]byte(nil), pkt...):
	default: // queue full: dropped
	}
	return nil
}
