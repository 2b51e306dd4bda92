package main

import (
	"fmt"
	"io"
	"os"
	"time"
)

// progress shows, on a terminal only, how far through a file verify is.
type progress struct {
	w     io.Writer
	name  string
	size  int64
	read  *countingReader
	next  time.Time
	shown bool
}

// newProgress returns nil (no progress) unless w is a terminal.
func newProgress(w io.Writer, name string, size int64, read *countingReader) *progress {
	f, ok := w.(*os.File)
	if !ok {
		return nil
	}
	st, err := f.Stat()
	if err != nil || st.Mode()&os.ModeCharDevice == 0 {
		return nil
	}
	return &progress{w: w, name: name, size: size, read: read, next: time.Now().Add(time.Second)}
}

// tick is called per frame; it looks at the clock every 4096 frames.
func (p *progress) tick(frame int) {
	if p == nil || frame%4096 != 0 {
		return
	}
	now := time.Now()
	if now.Before(p.next) {
		return
	}
	p.next = now.Add(250 * time.Millisecond)
	if p.size > 0 {
		fmt.Fprintf(p.w, "\r%s: frame %d, %d%%", p.name, frame, 100*p.read.n/p.size)
	} else {
		fmt.Fprintf(p.w, "\r%s: frame %d, %d MB", p.name, frame, p.read.n>>20)
	}
	p.shown = true
}

// done erases the progress line.
func (p *progress) done() {
	if p != nil && p.shown {
		fmt.Fprint(p.w, "\r\033[K")
	}
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n += int64(n)
	return n, err
}
