//go:build linux

package nfqueue

import (
	"encoding/binary"
	"errors"
	"testing"
)

// packetMsg builds the attributes of an NFQNL_MSG_PACKET (after the
// nlmsghdr): nfgenmsg, then each attribute.
func packetMsg(attrs ...[]byte) []byte {
	m := []byte{0, 0, 0, 7}
	for _, a := range attrs {
		m = append(m, a...)
	}
	return m
}

func attr(typ uint16, data []byte) []byte {
	b := binary.NativeEndian.AppendUint16(nil, uint16(4+len(data)))
	b = binary.NativeEndian.AppendUint16(b, typ)
	b = append(b, data...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

// TestParsePacket: the fields the kernel sends come out; a message without
// the packet header, with an attribute overrunning the message, or with a
// truncated packet is an error.
func TestParsePacket(t *testing.T) {
	hdr := attr(aPacketHdr, []byte{0, 0, 1, 2, 0x86, 0xdd, HookInput})
	payload := []byte{0x60, 1, 2, 3, 4}
	var p Packet
	if err := parsePacket(packetMsg(hdr, attr(aMark, []byte{0, 0, 0, 9}), attr(aInDev, []byte{0, 0, 0, 3}), attr(aPayload, payload)), &p); err != nil {
		t.Fatal(err)
	}
	if p.ID != 0x102 || p.Proto != 0x86dd || p.Hook != HookInput || p.Mark != 9 || p.InDev != 3 || string(p.Payload) != string(payload) {
		t.Errorf("parsed %+v", p)
	}
	for name, m := range map[string][]byte{
		"no header":     packetMsg(attr(aPayload, payload)),
		"short header":  packetMsg(attr(aPacketHdr, []byte{1, 2, 3})),
		"overrun":       append(packetMsg(hdr), 0xff, 0, aPayload, 0),
		"short nfgen":   {0, 0},
		"short mark":    packetMsg(hdr, attr(aMark, []byte{1})),
		"truncated pkt": packetMsg(hdr, attr(aCapLen, []byte{0, 0, 0x10, 0}), attr(aPayload, payload)),
	} {
		err := parsePacket(m, &p)
		want := ErrMalformed
		if name == "truncated pkt" {
			want = ErrTruncated
		}
		if !errors.Is(err, want) {
			t.Errorf("%s: %v, want %v", name, err, want)
		}
	}
}

// FuzzParsePacket: no message from the kernel makes the parser panic or
// return a payload outside the message.
func FuzzParsePacket(f *testing.F) {
	f.Add(packetMsg(attr(aPacketHdr, []byte{0, 0, 1, 2, 8, 0, HookOutput}), attr(aPayload, []byte{0x45, 0, 0, 20})))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, m []byte) {
		var p Packet
		if parsePacket(m, &p) == nil && len(p.Payload) > len(m) {
			t.Fatalf("payload of %d bytes from a %d-byte message", len(p.Payload), len(m))
		}
	})
}

// TestParseStats: the counters of the asked queue come out of
// nfnetlink_queue's proc file; a queue not listed, or a line that does not
// parse, is an error.
func TestParseStats(t *testing.T) {
	file := []byte("    7   1234     0 2 65535     0     0       12  1\n 7911   4321     3 2 65535    17     5    98765  1\n")
	st, err := parseStats(file, 7911)
	if err != nil || st != (Stats{Waiting: 3, Dropped: 17, UserDropped: 5}) {
		t.Errorf("queue 7911: %+v, %v", st, err)
	}
	if _, err := parseStats(file, 8); err == nil {
		t.Error("queue 8 is not listed, yet found")
	}
	if _, err := parseStats([]byte(" 8 1 x 2 65535 0 0 1 1\n"), 8); !errors.Is(err, ErrMalformed) {
		t.Errorf("unparsable line: %v, want ErrMalformed", err)
	}
}
