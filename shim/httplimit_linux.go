//go:build linux

package shim

import (
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// httpLimits bound what the -metrics server gives any client that can
// reach its address (any local user, on a loopback address): how long a
// request may take to arrive and be answered, how long a kept-alive
// connection may idle, and how many connections it holds at once, so that
// nobody can run the shim out of descriptors (and a reload out of the one
// it needs to read the keys file).
type httpLimits struct {
	readHeader, read, write, idle time.Duration
	maxConns                      int
}

// defaultHTTPLimits: a scrape is one small request and an answer of some
// kilobytes, so seconds are plenty; Prometheus keeps one connection per
// target and scrapes every 15 s to 1 min, so an idle minute keeps its
// connection between scrapes.
var defaultHTTPLimits = httpLimits{readHeader: 5 * time.Second, read: 10 * time.Second, write: 10 * time.Second,
	idle: time.Minute, maxConns: 16}

// server returns an http.Server for h with the limits l; a zero field
// takes its default.
func (l httpLimits) server(h http.Handler) (*http.Server, *connLimiter) {
	d := defaultHTTPLimits
	pick := func(v, def time.Duration) time.Duration {
		if v > 0 {
			return v
		}
		return def
	}
	lim := &connLimiter{max: d.maxConns, conns: map[net.Conn]connEntry{}}
	if l.maxConns > 0 {
		lim.max = l.maxConns
	}
	return &http.Server{Handler: h, ReadHeaderTimeout: pick(l.readHeader, d.readHeader), ReadTimeout: pick(l.read, d.read),
		WriteTimeout: pick(l.write, d.write), IdleTimeout: pick(l.idle, d.idle), ConnState: lim.connState}, lim
}

// connLimiter keeps an http.Server to max connections through its
// ConnState hook: a new connection that finds max open closes the one
// that has waited longest without a request in progress (new, its request
// not begun, or idle between requests), or else itself. So clients that
// hold connections open cannot keep a new scrape out; only requests being
// answered, each bounded by the timeouts, hold their place.
type connLimiter struct {
	max    int
	mu     sync.Mutex
	conns  map[net.Conn]connEntry
	closed atomic.Uint64 // connections closed to make room
}

// connEntry is a connection's state and since when.
type connEntry struct {
	state http.ConnState
	since time.Time
}

func (l *connLimiter) connState(c net.Conn, s http.ConnState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch s {
	case http.StateClosed, http.StateHijacked:
		delete(l.conns, c)
		return
	case http.StateNew:
		if len(l.conns) >= l.max && !l.closeOldestWaiting() {
			l.closed.Add(1)
			c.Close() // every place is answering a request
			return
		}
	}
	l.conns[c] = connEntry{state: s, since: time.Now()}
}

// closeOldestWaiting closes the connection that has waited longest with
// no request in progress; under l.mu.
func (l *connLimiter) closeOldestWaiting() bool {
	var oldest net.Conn
	var at time.Time
	for c, e := range l.conns {
		if e.state == http.StateActive {
			continue
		}
		if oldest == nil || e.since.Before(at) {
			oldest, at = c, e.since
		}
	}
	if oldest == nil {
		return false
	}
	delete(l.conns, oldest)
	l.closed.Add(1)
	oldest.Close()
	return true
}

// open is the number of connections held.
func (l *connLimiter) open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.conns)
}
