package main

import (
	"encoding/binary"
	"net/netip"
	"strings"

	"github.com/tcpsig/tcpsig/ao"
	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/mac"
	"github.com/tcpsig/tcpsig/md5sig"
	"github.com/tcpsig/tcpsig/segment"
	"github.com/tcpsig/tcpsig/sigpool"
)

// What "tcpsig bench" measures: a worker that signs or verifies one
// segment of a TCP-AO or TCP-MD5 connection over and over.

// benchWorker signs or verifies one segment over and over.
type benchWorker struct {
	step  func() error
	bytes int
}

var (
	benchA = netip.MustParseAddrPort("10.0.0.1:40000")
	benchB = netip.MustParseAddrPort("10.0.0.2:179")
)

// benchSetup adds the keys of both ends to one keyring over pool and
// returns a maker of workers.
func benchSetup(alg string, pool *sigpool.Pool) (func(op string, payload int) (*benchWorker, error), error) {
	host := func(a netip.Addr) netip.Prefix { return netip.PrefixFrom(a, 32) }
	if alg == "md5" {
		ring := md5sig.NewKeyring(pool)
		for _, p := range []netip.Addr{benchA.Addr(), benchB.Addr()} {
			if _, err := ring.Add(keys.MD5{Peer: host(p), Key: []byte("bgp-session-secret")}); err != nil {
				return nil, err
			}
		}
		return func(op string, payload int) (*benchWorker, error) {
			seg, err := benchSegment(payload, []byte{segment.OptionKindMD5, segment.MD5OptionLen, 15: 0, 17: 0})
			if err != nil {
				return nil, err
			}
			if err := ring.Sign(&seg, 0); err != nil {
				return nil, err
			}
			if op == "sign" {
				return &benchWorker{step: func() error { return ring.Sign(&seg, 0) }, bytes: seg.Len()}, nil
			}
			return &benchWorker{step: func() error { return ring.Verify(&seg, 0) }, bytes: seg.Len()}, nil
		}, nil
	}
	keyLen := 20
	switch alg {
	case "cmac(aes128)":
		keyLen = 16
	case "cmac(aes)":
		keyLen = 32
	}
	if a, err := mac.Lookup(alg); err == nil {
		keyLen = max(keyLen, a.MinMasterKey()) // the draft's algorithms take 32 bytes or more
	}
	key := []byte(strings.Repeat("k", keyLen))
	ring := ao.NewKeyring(pool)
	m, err := ring.Add(keys.AO{Peer: host(benchB.Addr()), SendID: 1, RecvID: 2, Algorithm: alg, Key: key})
	if err != nil {
		return nil, err
	}
	if _, err := ring.Add(keys.AO{Peer: host(benchA.Addr()), SendID: 2, RecvID: 1, Algorithm: alg, Key: key}); err != nil {
		return nil, err
	}
	const isnA, isnB = 1000, 5000
	return func(op string, payload int) (*benchWorker, error) {
		var snd, rcv ao.Conn
		if err := snd.Init(ring, ao.Endpoint{Local: benchA, Remote: benchB, LocalISN: isnA,
			Established: true, RemoteISN: isnB, CurrentSendID: 1, RNextRecvID: 2}, ao.Policy{}); err != nil {
			return nil, err
		}
		if err := rcv.Init(ring, ao.Endpoint{Local: benchB, Remote: benchA, LocalISN: isnB,
			Established: true, RemoteISN: isnA, CurrentSendID: 2, RNextRecvID: 1}, ao.Policy{}); err != nil {
			return nil, err
		}
		seg, err := benchSegment(payload, ao.AppendOption(nil, m.MACLen()))
		if err != nil {
			return nil, err
		}
		if err := snd.Sign(&seg); err != nil {
			return nil, err
		}
		if op == "sign" {
			return &benchWorker{step: func() error { return snd.Sign(&seg) }, bytes: seg.Len()}, nil
		}
		return &benchWorker{step: func() error { return rcv.Verify(&seg) }, bytes: seg.Len()}, nil
	}, nil
}

// benchSegment lays out an IPv4 data segment from A to B: a TCP header
// with timestamps and the authentication option auth, and a payload.
func benchSegment(payload int, auth []byte) (segment.Segment, error) {
	opts := append([]byte{segment.OptionKindNOP, segment.OptionKindNOP, 8, 10, 0, 0, 1, 0, 0, 0, 2, 0}, auth...)
	for len(opts)%4 != 0 {
		opts = append(opts, segment.OptionKindNOP)
	}
	tcp := make([]byte, 20+len(opts)+payload)
	binary.BigEndian.PutUint16(tcp[0:], benchA.Port())
	binary.BigEndian.PutUint16(tcp[2:], benchB.Port())
	binary.BigEndian.PutUint32(tcp[4:], 1001)
	binary.BigEndian.PutUint32(tcp[8:], 5001)
	tcp[12] = byte((20 + len(opts)) / 4 << 4)
	tcp[13] = byte(segment.ACK | segment.PSH)
	binary.BigEndian.PutUint16(tcp[14:], 512)
	copy(tcp[20:], opts)
	for i := range payload {
		tcp[20+len(opts)+i] = byte(i)
	}
	return segment.FromTCP(benchA.Addr(), benchB.Addr(), tcp)
}
