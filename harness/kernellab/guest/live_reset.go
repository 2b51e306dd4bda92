//go:build linux

package main

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/tcpsig/tcpsig/ao"
	"github.com/tcpsig/tcpsig/segment"
)

// runListenReset: the engine sends a signed bare ACK that belongs to no
// connection to a kernel TCP-AO listener, signed with the ISNs Linux infers
// for a possible syncookie ACK (seq−1, ack−1) so that the listener verifies
// it. The listener then answers with a RST signed the way only a listening
// socket signs (tcp_ao_prepare_reset, TCP_LISTEN): the key of the ACK's own
// direction with ISNs (its seq, 0), the MKT whose RecvID is the ACK's
// RNextKeyID. With SendID == RecvID (7/7) such an MKT exists: the RST is on
// the wire, and listenerReset, given the listener's MKTs,
// reproduces its MAC byte for byte. With SendID ≠ RecvID (100/200) none
// does: the kernel verifies the ACK and sends nothing, and listenerReset
// returns ao.ErrKeyNotFound.
func (c liveCase) runListenReset(r *liveReport, n *liveNet) error {
	for _, m := range []liveMKT{
		{key: keyMaterial(c.name, "sameid", c.alg.keyLen, false), send: 7, recv: 7},
		{key: keyMaterial(c.name, "distinct", c.alg.keyLen, false), send: 100, recv: 200},
	} {
		if err := c.listenReset(r, n, m); err != nil {
			return fmt.Errorf("MKT %d/%d: %w", m.send, m.recv, err)
		}
	}
	return nil
}

func (c liveCase) listenReset(r *liveReport, n *liveNet, m liveMKT) error {
	ms := []liveMKT{m}
	ln, err := kernelListen(n, c.kernelKeys(n, ms))
	if err != nil {
		return err
	}
	defer ln.Close()
	ring, err := c.engineRing(n, ms)
	if err != nil {
		return err
	}
	// The kernel listener's MKTs, for reproducing its RST.
	mirror := ao.NewKeyring(nil)
	for _, k := range c.kernelKeys(n, ms) {
		if _, err := mirror.Add(k.AO); err != nil {
			return err
		}
	}

	// Sequence numbers away from the wrap, so SNE is 0 whichever way.
	seq, ack := rand.Uint32N(1<<30)+1<<20, rand.Uint32N(1<<30)+1<<20
	var conn ao.Conn
	defer conn.Close()
	err = conn.Init(ring, ao.Endpoint{Local: n.engineAP(), Remote: n.kernelAP(), LocalISN: seq - 1, Established: true,
		RemoteISN: ack - 1, SendSeq: seq, RecvSeq: ack, CurrentSendID: m.send, RNextRecvID: m.recv}, ao.Policy{})
	if err != nil {
		return err
	}
	pkt, err := aoPacket(n.engineAP(), n.kernelAP(), seq, ack, c.maclen, conn.Sign)
	if err != nil {
		return err
	}
	before, err := readAOStats()
	if err != nil {
		return err
	}
	mark := n.link.mark()
	if err := n.link.WritePacket(pkt); err != nil {
		return err
	}
	var rst []byte
	buf := make([]byte, 65536)
	for deadline := time.Now().Add(1500 * time.Millisecond); rst == nil; {
		k, err := n.link.ReadPacket(buf, deadline)
		if err != nil {
			break // a timeout: nothing (more) came
		}
		if s, err := segment.ParsePacket(buf[:k]); err == nil && s.Header().Flags()&segment.RST != 0 {
			rst = bytes.Clone(buf[:k])
		}
	}
	after, err := readAOStats()
	if err != nil {
		return err
	}
	if d := after.minus(before); d.good != 1 || d.bad != 0 || d.keyNotFound != 0 {
		r.errorf("MKT %d/%d: the kernel's counters for the ACK: %v, want TCPAOGood +1 only", m.send, m.recv, d)
	}

	in, err := segment.ParsePacket(pkt)
	if err != nil {
		return err
	}
	if m.send != m.recv {
		if rst != nil {
			r.errorf("MKT %d/%d: the listener sent a RST: %v", m.send, m.recv, n.link.segments(mark))
		}
		probe := make([]byte, len(pkt))
		copy(probe, pkt) // any segment with room for the option will do
		out, err := segment.ParsePacket(probe)
		if err != nil {
			return err
		}
		if err := listenerReset(mirror, &in, &out); !errors.Is(err, ao.ErrKeyNotFound) {
			r.errorf("MKT %d/%d: listenerReset = %v, want ErrKeyNotFound (the kernel sent nothing)", m.send, m.recv, err)
		}
		r.logf("MKT %d/%d: the kernel verified the ACK and sent no RST; listenerReset: key not found", m.send, m.recv)
		return nil
	}
	if rst == nil {
		return errors.New("no RST from the kernel listener")
	}
	want, err := segment.ParsePacket(rst)
	if err != nil {
		return err
	}
	if want.Auth().AO == 0 {
		return fmt.Errorf("the kernel's RST is not signed: %x", rst)
	}
	o := want.Header()[want.Auth().AO:]
	got := bytes.Clone(rst)
	mine, _ := segment.ParsePacket(got)
	clear(mine.Header()[mine.Auth().AO+4 : mine.Auth().AO+int(o[1])])
	mine.Header()[mine.Auth().AO+2], mine.Header()[mine.Auth().AO+3] = 0, 0
	if err := listenerReset(mirror, &in, &mine); err != nil {
		return fmt.Errorf("listenerReset: %w", err)
	}
	if !bytes.Equal(got, rst) {
		r.errorf("listenerReset reproduced the RST as\n%x\nthe kernel sent\n%x", got, rst)
	}
	// A connection with the engine's real view of it cannot verify that RST.
	if err := conn.Verify(&want); err == nil {
		r.errorf("the engine's connection verified the listener's RST")
	}
	r.logf("MKT %d/%d: kernel RST seq %d KeyID %d RNextKeyID %d MAC %x reproduced by listenerReset\n  ack %x\n  rst %x",
		m.send, m.recv, want.Header().Seq(), o[2], o[3], o[4:o[1]], pkt, rst)
	return nil
}

// aoPacket builds an IPv4 or IPv6 packet holding a bare ACK from src to
// dst with a TCP-AO option of maclen bytes, has sign fill it in, and sets
// the TCP checksum (the kernel checks it on a TUN).
func aoPacket(src, dst netip.AddrPort, seq, ack uint32, maclen int, sign func(*segment.Segment) error) ([]byte, error) {
	build := func(opt []byte) ([]byte, error) {
		tcp := &layers.TCP{SrcPort: layers.TCPPort(src.Port()), DstPort: layers.TCPPort(dst.Port()), Seq: seq, Ack: ack,
			ACK: true, Window: 512, Options: []layers.TCPOption{{OptionType: 29, OptionLength: uint8(len(opt) + 2), OptionData: opt}}}
		var ip gopacket.SerializableLayer
		if src.Addr().Is4() {
			ip4 := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolTCP,
				SrcIP: net.IP(src.Addr().AsSlice()), DstIP: net.IP(dst.Addr().AsSlice())}
			tcp.SetNetworkLayerForChecksum(ip4)
			ip = ip4
		} else {
			ip6 := &layers.IPv6{Version: 6, HopLimit: 64, NextHeader: layers.IPProtocolTCP,
				SrcIP: net.IP(src.Addr().AsSlice()), DstIP: net.IP(dst.Addr().AsSlice())}
			tcp.SetNetworkLayerForChecksum(ip6)
			ip = ip6
		}
		b := gopacket.NewSerializeBuffer()
		err := gopacket.SerializeLayers(b, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, ip, tcp)
		return b.Bytes(), err
	}
	if (4+maclen)%4 != 0 {
		return nil, fmt.Errorf("maclen %d: the option would need padding", maclen)
	}
	pkt, err := build(make([]byte, 2+maclen))
	if err != nil {
		return nil, err
	}
	s, err := segment.ParsePacket(pkt)
	if err != nil {
		return nil, err
	}
	if err := sign(&s); err != nil {
		return nil, err
	}
	// Again with the signed option, for the checksum (the MAC leaves the
	// checksum out, so it does not change).
	return build(bytes.Clone(s.Header()[s.Auth().AO+2 : s.Auth().AO+4+maclen]))
}

// listenerReset signs rst as a Linux listening socket answers in, a
// segment it has no connection for (tcp_ao_prepare_reset, TCP_LISTEN):
// the MKT whose RecvID is in's RNextKeyID, the traffic key of in's own
// direction with ISNs (in's sequence number, 0), SNE 0, KeyID the MKT's
// SendID and RNextKeyID its RecvID. Without such an MKT Linux sends
// nothing: ao.ErrKeyNotFound.
func listenerReset(ring *ao.Keyring, in, rst *segment.Segment) error {
	if in.Auth().AO == 0 {
		return ao.ErrNoOption
	}
	opt, err := ao.ParseOption(in.Header()[in.Auth().AO:])
	if err != nil {
		return err
	}
	m := ring.LookupRecv(in.Src(), opt.RNextKeyID, 0)
	if m == nil {
		return ao.ErrKeyNotFound
	}
	var k ao.TrafficKey
	defer k.Wipe()
	if err := k.Derive(m, ao.ISNs{Src: in.Header().Seq()}, in); err != nil {
		return err
	}
	return k.Sign(rst, 0, m.RecvID())
}
