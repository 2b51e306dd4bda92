//go:build linux

// Package kstat reads what the kernel counts and queues, for tests that
// take the kernel's verdict as the proof: the TcpExt counters of the
// calling thread's network namespace (TCPMD5*, TCPAO*), and whether a
// listener completed a handshake.
package kstat

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// MD5 are the kernel's per-namespace TCP-MD5 counters.
type MD5 struct {
	Failure    uint64 // TCPMD5Failure: wrong signature
	NotFound   uint64 // TCPMD5NotFound: unsigned segment from a peer with a key
	Unexpected uint64 // TCPMD5Unexpected: signed segment from a peer without a key
}

// ReadMD5 returns the TCP-MD5 counters of the calling thread's namespace.
func ReadMD5() (MD5, error) {
	m, err := TCPExt()
	if err != nil {
		return MD5{}, err
	}
	return MD5{Failure: m["TCPMD5Failure"], NotFound: m["TCPMD5NotFound"], Unexpected: m["TCPMD5Unexpected"]}, nil
}

// TCPExt returns the TcpExt counters of the calling thread's network
// namespace, from /proc/thread-self/net/netstat (/proc/net is the
// process's namespace, which differs for a thread moved elsewhere).
func TCPExt() (map[string]uint64, error) {
	b, err := os.ReadFile("/proc/thread-self/net/netstat")
	if err != nil {
		return nil, fmt.Errorf("kstat: %w", err)
	}
	return parseNetstat(b, "TcpExt")
}

// parseNetstat parses the header/value line pairs of /proc/net/netstat for
// one section.
func parseNetstat(b []byte, section string) (map[string]uint64, error) {
	var names []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || f[0] != section+":" {
			continue
		}
		if names == nil {
			names = f[1:]
			continue
		}
		if len(f)-1 != len(names) {
			return nil, fmt.Errorf("kstat: %s: %d names, %d values", section, len(names), len(f)-1)
		}
		m := make(map[string]uint64, len(names))
		for i, s := range f[1:] {
			v, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("kstat: %s %s: %w", section, names[i], err)
			}
			m[names[i]] = v
		}
		return m, nil
	}
	return nil, fmt.Errorf("kstat: no %s section in netstat", section)
}

// Pending reports whether a kernel listener has a connection to accept,
// that is whether the kernel completed a handshake; it does not wait.
// Tests use it to show that the kernel refused a peer. A connection it
// finds is accepted and closed.
func Pending(ln *net.TCPListener) bool {
	rc, err := ln.SyscallConn()
	if err != nil {
		return false
	}
	got := false
	rc.Control(func(fd uintptr) {
		nfd, _, err := syscall.Accept4(int(fd), syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC)
		if err == nil {
			got = true
			syscall.Close(nfd)
		}
	})
	return got
}
