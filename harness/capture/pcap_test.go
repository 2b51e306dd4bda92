package capture

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestPcapRoundTrip(t *testing.T) {
	pkts := []Packet{
		{Time: time.Unix(1700000000, 123456000), Data: []byte{1, 2, 3}, Length: 3},
		{Time: time.Unix(1700000001, 999999000), Data: bytes.Repeat([]byte{0xab}, 1500), Length: 1500},
		{Time: time.Unix(1700000002, 0), Data: []byte{9}, Length: 70000}, // truncated
		{Time: time.Unix(1700000003, 0), Data: nil, Length: 0},
	}
	path := filepath.Join(t.TempDir(), "x.pcap")
	if err := WriteFile(path, LinkTypeRaw, pkts); err != nil {
		t.Fatal(err)
	}
	lt, got, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if lt != LinkTypeRaw {
		t.Errorf("link type %v, want %v", lt, LinkTypeRaw)
	}
	if len(got) != len(pkts) {
		t.Fatalf("%d packets, want %d", len(got), len(pkts))
	}
	for i := range pkts {
		if !got[i].Time.Equal(pkts[i].Time) || !bytes.Equal(got[i].Data, pkts[i].Data) || got[i].Length != pkts[i].Length {
			t.Errorf("packet %d: got %v %x %d, want %v %x %d", i, got[i].Time, got[i].Data, got[i].Length,
				pkts[i].Time, pkts[i].Data, pkts[i].Length)
		}
	}
}

// The header layout is the classic one every reader knows.
func TestPcapHeaderBytes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.pcap")
	if err := WriteFile(path, LinkTypeEthernet, nil); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := []byte{0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4, 0, 1, 0, 0, 0}
	if !bytes.Equal(got, want) {
		t.Errorf("header %x, want %x", got, want)
	}
}

// Big-endian, nanosecond files (written by other tools) read too.
func TestPcapReadBigEndianNanos(t *testing.T) {
	be := binary.BigEndian
	b := be.AppendUint32(nil, 0xa1b23c4d)
	b = be.AppendUint16(b, 2)
	b = be.AppendUint16(b, 4)
	b = append(b, make([]byte, 8)...)
	b = be.AppendUint32(b, 1000)
	b = be.AppendUint32(b, 101)
	for _, v := range []uint32{5, 7, 2, 2} { // seconds, nanoseconds, captured, original length
		b = be.AppendUint32(b, v)
	}
	b = append(b, 0x45, 0)
	lt, pkts, err := ReadAll(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if lt != LinkTypeRaw || len(pkts) != 1 || !pkts[0].Time.Equal(time.Unix(5, 7)) || !bytes.Equal(pkts[0].Data, []byte{0x45, 0}) {
		t.Errorf("got %v %+v", lt, pkts)
	}
}

func TestPcapReadErrors(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.pcap")
	if err := WriteFile(path, LinkTypeRaw, []Packet{{Time: time.Unix(1, 0), Data: []byte{1, 2, 3, 4}}}); err != nil {
		t.Fatal(err)
	}
	full, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		in   []byte
	}{
		{"empty", nil},
		{"short header", full[:10]},
		{"bad magic", append([]byte{1, 2, 3, 4}, full[4:]...)},
		{"short record header", full[:24+8]},
		{"record header only", full[:24+16]},
		{"short record", full[:len(full)-1]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := ReadAll(bytes.NewReader(tc.in))
			if !errors.Is(err, ErrFormat) {
				t.Errorf("err = %v, want ErrFormat", err)
			}
		})
	}
	if _, pkts, err := ReadAll(bytes.NewReader(full)); err != nil || len(pkts) != 1 {
		t.Errorf("good file: %v, %d packets", err, len(pkts))
	}
}

func TestLinkTypeIP(t *testing.T) {
	eth := make([]byte, 14+20)
	eth[12], eth[13] = 0x08, 0x00
	if ip := LinkTypeEthernet.IP(eth); len(ip) != 20 {
		t.Errorf("ethernet IPv4: %d bytes", len(ip))
	}
	eth[12], eth[13] = 0x08, 0x06 // ARP
	if ip := LinkTypeEthernet.IP(eth); ip != nil {
		t.Errorf("ARP frame gave IP %x", ip)
	}
	if ip := LinkTypeEthernet.IP(eth[:10]); ip != nil {
		t.Errorf("short frame gave IP")
	}
	if ip := LinkTypeRaw.IP(eth); len(ip) != len(eth) {
		t.Errorf("raw: %d bytes", len(ip))
	}
}

func TestTCPPorts(t *testing.T) {
	v4 := make([]byte, 40)
	v4[0], v4[9] = 0x45, 6
	binary.BigEndian.PutUint16(v4[20:], 1000)
	binary.BigEndian.PutUint16(v4[22:], 179)
	v6 := make([]byte, 60)
	v6[0], v6[6] = 0x60, 6
	binary.BigEndian.PutUint16(v6[40:], 179)
	binary.BigEndian.PutUint16(v6[42:], 2000)
	udp := append([]byte(nil), v4...)
	udp[9] = 17
	f := TCPPorts(179)
	for _, tc := range []struct {
		name string
		pkt  []byte
		want bool
	}{
		{"v4 dst", v4, true}, {"v6 src", v6, true}, {"udp", udp, false},
		{"short", v4[:10], false}, {"empty", nil, false},
	} {
		if got := f(tc.pkt); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	if TCPPorts(80)(v4) {
		t.Error("port 80 matched")
	}
}
