//go:build linux

package shim

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// metricsServer serves s's -metrics on a loopback port with limits l.
func metricsServer(t *testing.T, l httpLimits) (*Shim, string) {
	t.Helper()
	var log bytes.Buffer
	s, _ := metricsShim(t, &log)
	s.cfg.Metrics = "127.0.0.1:0"
	s.obs.httpLimits = l
	ln, err := s.serveMetrics()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return s, ln.Addr().String()
}

// holdConns opens n connections to addr: keepAlive ones make one scrape
// and then idle, as a kept-alive client does; the others send nothing.
// The counter rises as the server closes them.
func holdConns(t *testing.T, addr string, n int, keepAlive bool) *atomic.Int64 {
	t.Helper()
	closed := new(atomic.Int64)
	for range n {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		br := bufio.NewReader(c)
		if keepAlive {
			if _, err := io.WriteString(c, "GET /metrics HTTP/1.1\r\nHost: shim\r\n\r\n"); err != nil {
				t.Fatal(err)
			}
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || resp.Close {
				t.Fatalf("a kept-alive scrape: %s, close %v", resp.Status, resp.Close)
			}
		}
		go func() {
			_, _ = br.ReadByte() // returns when the server closes (or the test does)
			closed.Add(1)
		}()
	}
	return closed
}

// scrapeOnce is a new client's scrape of addr.
func scrapeOnce(t *testing.T, addr string) {
	t.Helper()
	c := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatalf("a new scrape: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), "tcpsig_shim_sessions_unseen") {
		t.Fatalf("a new scrape: %s\n%.200s", resp.Status, b)
	}
}

// TestMetricsConnCap: 40 kept-alive connections and 40 that never send a
// request, against a -metrics server of 8 connections whose timeouts are
// an hour (issue 38, finding 5): all but 8 are closed, the server holds
// no more than 8, and a new client's scrape is answered.
func TestMetricsConnCap(t *testing.T) {
	const max = 8
	s, addr := metricsServer(t, httpLimits{maxConns: max, readHeader: time.Hour, read: time.Hour, write: time.Hour, idle: time.Hour})
	kept := holdConns(t, addr, 40, true)
	silent := holdConns(t, addr, 40, false)
	if !waitUntil(30*time.Second, func() bool { return kept.Load()+silent.Load() >= 80-max && s.obs.metricsConns.open() <= max }) {
		t.Fatalf("closed %d kept-alive and %d silent connections of 80, the server holds %d; want all but %d closed",
			kept.Load(), silent.Load(), s.obs.metricsConns.open(), max)
	}
	scrapeOnce(t, addr)
	t.Logf("80 held: %d kept-alive and %d silent closed, %d open, %d closed for room", kept.Load(), silent.Load(),
		s.obs.metricsConns.open(), s.obs.metricsConns.closed.Load())
}

// TestMetricsTimeouts: with the idle and read-header timeouts made short
// for the test, kept-alive connections and connections that never send
// a request are all closed, and a new scrape is answered. Nothing here
// measures time: it waits for the state.
func TestMetricsTimeouts(t *testing.T) {
	s, addr := metricsServer(t, httpLimits{maxConns: 1000, readHeader: 50 * time.Millisecond, idle: 50 * time.Millisecond})
	kept := holdConns(t, addr, 20, true)
	silent := holdConns(t, addr, 20, false)
	if !waitUntil(30*time.Second, func() bool { return kept.Load() == 20 && silent.Load() == 20 }) {
		t.Fatalf("closed %d of 20 kept-alive and %d of 20 silent connections; want all", kept.Load(), silent.Load())
	}
	scrapeOnce(t, addr)
	if c := s.obs.metricsConns.closed.Load(); c != 0 {
		t.Errorf("%d connections closed for room under a cap of 1000", c)
	}
}

// TestHTTPLimitsDefaults: the -metrics server has every timeout and a cap.
func TestHTTPLimitsDefaults(t *testing.T) {
	srv, lim := httpLimits{}.server(http.NotFoundHandler())
	if srv.ReadHeaderTimeout <= 0 || srv.ReadTimeout <= 0 || srv.WriteTimeout <= 0 || srv.IdleTimeout <= 0 || lim.max <= 0 || srv.ConnState == nil {
		t.Errorf("server %+v, cap %d: want every timeout and a cap", srv, lim.max)
	}
}

func waitUntil(d time.Duration, cond func() bool) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}
