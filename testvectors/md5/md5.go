// Package md5 holds TCP-MD5 (RFC 2385) captures made on Linux, the
// fixtures that tcpsig's md5sig package is checked against byte for byte.
//
// RFC 2385 publishes no test vectors, and one popular tool computes TCP-MD5
// wrongly, so the reference is the Linux kernel itself: the captures are
// TCP-MD5 connections between kernel sockets on lo inside a network
// namespace, IPv4 and IPv6, with keys of 1, 13 and 80 bytes, two concurrent
// connections with different keys on one listener, data both ways in
// several segment sizes, and MD5-signed RSTs. manifest.json describes each
// capture: its file, the keys configured on its endpoints in the shape of
// the tcpsig command's keys file, and how many packets it has and how many
// are signed (all of them). The generator is this package's test:
//
//	go test ./testvectors/md5 -run TestKernelCaptures -update
//
// run as root on a kernel with CONFIG_TCP_MD5SIG.
package md5

import (
	"bytes"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"strings"

	"github.com/tcpsig/tcpsig/harness/capture"
)

//go:embed manifest.json *.pcap
var files embed.FS

// FS returns the fixture files: manifest.json and the pcap files.
func FS() fs.FS { return files }

// Load parses the embedded manifest.json and checks that every capture it
// lists is present.
func Load() (*Manifest, error) {
	b, err := files.ReadFile("manifest.json")
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var m Manifest
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("md5: manifest.json: %w", err)
	}
	if len(m.Captures) == 0 {
		return nil, errors.New("md5: manifest.json lists no captures")
	}
	for _, c := range m.Captures {
		if _, err := fs.Stat(files, c.File); err != nil {
			return nil, fmt.Errorf("md5: capture %s: %w", c.Name, err)
		}
		for _, k := range c.Keys.MD5 {
			if _, err := k.Prefix(); err != nil {
				return nil, fmt.Errorf("md5: capture %s: key peer: %w", c.Name, err)
			}
			if _, err := k.Bytes(); err != nil {
				return nil, fmt.Errorf("md5: capture %s: %w", c.Name, err)
			}
		}
	}
	return &m, nil
}

// Read returns the link type and the packets of the capture's pcap file,
// and checks that the file holds as many packets as the manifest says.
func (c Capture) Read() (capture.LinkType, []capture.Packet, error) {
	b, err := files.ReadFile(c.File)
	if err != nil {
		return 0, nil, err
	}
	lt, pkts, err := capture.ReadAll(bytes.NewReader(b))
	if err != nil {
		return 0, nil, fmt.Errorf("md5: %s: %w", c.File, err)
	}
	if len(pkts) != c.Packets {
		return 0, nil, fmt.Errorf("md5: %s has %d packets, the manifest says %d", c.File, len(pkts), c.Packets)
	}
	return lt, pkts, nil
}

// Manifest is the content of manifest.json.
type Manifest struct {
	// Kernel is the release of the kernel that made the captures.
	Kernel string `json:"kernel"`
	// Captures lists the captures in the order they were made.
	Captures []Capture `json:"captures"`
}

// Capture describes one pcap file.
type Capture struct {
	// Name identifies the capture, for example "v4-typical".
	Name string `json:"name"`
	// File is the pcap file's name, relative to this directory.
	File string `json:"file"`
	// Keys are the keys configured on the capture's endpoints.
	Keys KeysFile `json:"keys"`
	// Packets is the number of packets in the file.
	Packets int `json:"packets"`
	// MD5Signed is the number of packets that carry a TCP-MD5 option.
	MD5Signed int `json:"md5_signed"`
	// Notes says how the capture was made.
	Notes string `json:"notes"`
}

// KeysFile has the shape of the tcpsig command's keys file, with TCP-MD5
// keys only.
type KeysFile struct {
	// MD5 are the TCP-MD5 keys.
	MD5 []Key `json:"md5"`
}

// Key is one TCP-MD5 key as configured on an endpoint: the endpoint signs
// segments to, and checks segments from, addresses in Peer. Where several
// keys' prefixes contain an address, the longest prefix wins, as in Linux.
type Key struct {
	// Peer is the peer's address prefix, for example "127.0.0.2/32".
	Peer string `json:"peer"`
	// Key is the secret as "hex:..." or "text:...".
	Key string `json:"key"`
}

// Prefix parses k.Peer.
func (k Key) Prefix() (netip.Prefix, error) { return netip.ParsePrefix(k.Peer) }

// Bytes decodes k.Key.
func (k Key) Bytes() ([]byte, error) { return ParseKey(k.Key) }

// ParseKey decodes a key spelled "hex:..." or "text:...".
func ParseKey(s string) ([]byte, error) {
	switch {
	case strings.HasPrefix(s, "hex:"):
		b, err := hex.DecodeString(s[4:])
		if err != nil {
			return nil, fmt.Errorf("md5: bad hex key: %w", err)
		}
		return b, nil
	case strings.HasPrefix(s, "text:"):
		return []byte(s[5:]), nil
	}
	return nil, errors.New(`md5: key must start with "hex:" or "text:"`)
}
