package ao_test

import (
	"bytes"
	"encoding/json"
	"net/netip"
	"os"
	"strings"
	"testing"

	"github.com/tcpsig/tcpsig/ao"
	"github.com/tcpsig/tcpsig/harness/capture"
	"github.com/tcpsig/tcpsig/keyfile"
	"github.com/tcpsig/tcpsig/segment"
)

// TestLinuxTimeWaitReply reproduces, byte for byte, the signed ACK a Linux
// 6.12 TIME-WAIT socket sent in reply to a segment for which it holds no
// full connection (testvectors/linux, *-timewait captures): a Conn set up
// from the two ISNs of the capture's handshake, with the MKT the probe's
// RNextKeyID names as its current key, must sign it with the kernel's
// KeyID, RNextKeyID and MAC, with the AO option after the timestamps as
// Linux lays it out there.
func TestLinuxTimeWaitReply(t *testing.T) {
	var man struct {
		Captures []struct {
			Name, File string
			Keys       json.RawMessage // a keys file (package keyfile)
		}
	}
	b, err := os.ReadFile("../testvectors/linux/manifest.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &man); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range man.Captures {
		if !strings.Contains(c.Name, "timewait") {
			continue
		}
		lt, pkts, err := capture.ReadFile("../testvectors/linux/" + c.File)
		if err != nil {
			t.Fatal(err)
		}
		var segs []segment.Segment
		for _, p := range pkts {
			s, err := segment.ParsePacket(lt.IP(p.Data))
			if err != nil {
				t.Fatalf("%s: %v", c.Name, err)
			}
			segs = append(segs, s)
		}
		// The handshake gives the ISNs; the client is the SYN's sender.
		syn, synack := segs[0], segs[1]
		if syn.Header().Flags() != segment.SYN || synack.Header().Flags() != segment.SYN|segment.ACK {
			t.Fatalf("%s: no handshake at the start", c.Name)
		}
		client, cisn, sisn := syn.Src(), syn.Header().Seq(), synack.Header().Seq()
		// The TIME-WAIT reply: from the client, AO after the timestamps.
		reply := -1
		for i, s := range segs {
			if s.Src() == client && s.Auth().AO > segment.TCPMinimumSize && i > 0 {
				reply = i
			}
		}
		if reply < 1 {
			t.Fatalf("%s: no TIME-WAIT reply found", c.Name)
		}
		probe, out := segs[reply-1], segs[reply]
		if probe.Src() == client {
			t.Fatalf("%s: the segment before the reply is not the server's probe", c.Name)
		}
		// The client's MKTs: those whose peer is the server.
		kf, err := keyfile.Parse(c.Keys)
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		ring := ao.NewKeyring(nil)
		for _, k := range kf.AO {
			if k.Config.Peer.Contains(client) {
				continue
			}
			if _, err := ring.Add(k.Config); err != nil {
				t.Fatal(err)
			}
		}
		// The TIME-WAIT socket still holds its connection, and signs its
		// reply with it like any other segment: current key the MKT the
		// probe's RNextKeyID names (Linux tcp_ao_prepare_reset), the
		// handshake's ISNs.
		opt, err := ao.ParseOption(probe.Header()[probe.Auth().AO:])
		if err != nil {
			t.Fatalf("%s: probe: %v", c.Name, err)
		}
		m := ring.LookupSend(probe.Src(), opt.RNextKeyID, 0)
		if m == nil {
			t.Fatalf("%s: no MKT with SendID %d", c.Name, opt.RNextKeyID)
		}
		var conn ao.Conn
		ep := ao.Endpoint{Local: netip.AddrPortFrom(client, out.Header().SrcPort()), Remote: netip.AddrPortFrom(probe.Src(), probe.Header().SrcPort()),
			LocalISN: cisn, Established: true, RemoteISN: sisn, CurrentSendID: m.SendID(), RNextRecvID: m.RecvID()}
		if err := conn.Init(ring, ep, ao.Policy{}); err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		want := bytes.Clone(out.Header())
		off := out.Auth().AO
		clear(out.Header()[off+2 : off+int(out.Header()[off+1])]) // IDs and MAC: Sign writes them
		if err := conn.Sign(&out); err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		conn.Close()
		if !bytes.Equal(out.Header(), want) {
			t.Fatalf("%s: signed reply\n%x\nkernel sent\n%x", c.Name, []byte(out.Header()), want)
		}
		n++
	}
	if n == 0 {
		t.Fatal("no timewait capture in the manifest")
	}
	t.Logf("%d Linux TIME-WAIT replies reproduced byte for byte", n)
}
