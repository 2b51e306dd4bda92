// Package linux holds packets the Linux kernel put on the wire, for tests
// that prove byte-exactness with Linux on any machine. The TCP-AO captures
// that the qemu kernel lab makes (harness/kernellab: manifest.json and its
// pcap files) are read as files; this package loads the smaller sets kept
// as JSON:
//
//   - listen-rst.json: RSTs a Linux 6.12 TCP-AO listener signed in reply to
//     a bare ACK for no connection (the qemu live cases *-listen-rst), with
//     the ACKs and the listener's MKT.
package linux

import (
	"bytes"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/netip"
	"strings"
)

//go:embed listen-rst.json
var listenRST []byte

// ListenReset is one RST a Linux listener sent to an ACK for no
// connection, and the MKT it signed it with.
type ListenReset struct {
	Name           string       // the live case that produced it
	Alg            string       // Linux algorithm name
	Key            []byte       // the MKT's master key
	Peer           netip.Prefix // the MKT's peer: the ACK's sender
	SendID, RecvID uint8        // the listener's IDs
	MACLen         int
	ACK, RST       []byte // whole IP packets, as on the wire
}

// ListenResets returns the RSTs of listen-rst.json. The file is decoded
// strictly: an unknown field, a bad hex string or an empty set is an error.
func ListenResets() ([]ListenReset, error) {
	var in struct {
		Kernel, Notes string
		GeneratedBy   string `json:"generated_by"`
		Cases         []struct {
			Name, Alg, Key, Peer string
			SndID                uint8 `json:"sndid"`
			RcvID                uint8 `json:"rcvid"`
			MACLen               int   `json:"maclen"`
			ACK, RST             string
		}
	}
	dec := json.NewDecoder(bytes.NewReader(listenRST))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return nil, fmt.Errorf("listen-rst.json: %w", err)
	}
	if len(in.Cases) == 0 {
		return nil, fmt.Errorf("listen-rst.json: no cases")
	}
	out := make([]ListenReset, len(in.Cases))
	for i, c := range in.Cases {
		key, kerr := hex.DecodeString(strings.TrimPrefix(c.Key, "hex:"))
		ack, aerr := hex.DecodeString(c.ACK)
		rst, rerr := hex.DecodeString(c.RST)
		peer, perr := netip.ParsePrefix(c.Peer)
		if !strings.HasPrefix(c.Key, "hex:") || kerr != nil || aerr != nil || rerr != nil || perr != nil || len(ack) == 0 || len(rst) == 0 {
			return nil, fmt.Errorf("listen-rst.json: case %d (%s) does not decode", i, c.Name)
		}
		out[i] = ListenReset{Name: c.Name, Alg: c.Alg, Key: key, Peer: peer, SendID: c.SndID, RecvID: c.RcvID,
			MACLen: c.MACLen, ACK: ack, RST: rst}
	}
	return out, nil
}
