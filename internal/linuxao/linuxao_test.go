package linuxao

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"testing"
)

// The offsets below were read with gcc offsetof() from Linux 6.12.117's
// include/uapi/linux/tcp.h on x86-64.

func TestAddKeyLayout(t *testing.T) {
	k := AddKey{Peer: netip.MustParsePrefix("192.0.2.0/24"), Alg: "hmac(sha1)", Ifindex: 7,
		SetCurrent: true, SetRNext: true, SndID: 100, RcvID: 200, MACLen: 12,
		KeyFlags: TCP_AO_KEYF_EXCLUDE_OPT, Key: []byte("secret")}
	b, err := k.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != 288 {
		t.Fatalf("size %d", len(b))
	}
	want := map[int]byte{0: 2, 1: 0, 4: 192, 5: 0, 6: 2, 7: 0, 128: 'h', 192: 7, 196: 3, 202: 24, 203: 100, 204: 200, 205: 12, 206: 2, 207: 6, 208: 's', 213: 't', 214: 0}
	for off, v := range want {
		if b[off] != v {
			t.Errorf("byte %d = %d, want %d", off, b[off], v)
		}
	}
	k.Peer = netip.MustParsePrefix("fd00::1/128")
	b, _ = k.Marshal()
	if binary.LittleEndian.Uint16(b) != 10 || b[8] != 0xfd || b[23] != 1 || b[202] != 128 {
		t.Errorf("IPv6 sockaddr wrong: % x", b[:24])
	}
	if _, err := (AddKey{Peer: k.Peer, Alg: "x", Key: make([]byte, 81)}).Marshal(); err == nil {
		t.Error("81-byte key accepted")
	}
}

func TestDelInfoRepairLayout(t *testing.T) {
	d, err := DelKey{Peer: netip.MustParsePrefix("10.0.0.1/32"), SetCurrent: true, DelAsync: true,
		SndID: 1, RcvID: 2, CurrentKey: 3, RNext: 4, KeyFlags: 1}.Marshal()
	if err != nil || len(d) != 144 {
		t.Fatal(len(d), err)
	}
	if d[132] != 5 || d[138] != 32 || d[139] != 1 || d[140] != 2 || d[141] != 3 || d[142] != 4 || d[143] != 1 {
		t.Errorf("tcp_ao_del: % x", d[128:])
	}
	i := Info{AcceptICMPs: true, SetRNext: true, CurrentKey: 5, RNext: 6, PktGood: 9, PktDroppedICMP: 11}.Marshal()
	if len(i) != 48 || binary.LittleEndian.Uint32(i) != 0x12 || i[6] != 5 || i[7] != 6 || i[8] != 9 || i[40] != 11 {
		t.Errorf("tcp_ao_info_opt: % x", i)
	}
	back, _ := UnmarshalInfo(i)
	if !back.AcceptICMPs || !back.SetRNext || back.SetCurrent || back.PktGood != 9 || back.RNext != 6 {
		t.Errorf("round trip %+v", back)
	}
	r := Repair{SntISN: 0x01020304, RcvISN: 0x05060708, SndSNE: 1, RcvSNE: 2}.Marshal()
	if !bytes.Equal(r, []byte{1, 2, 3, 4, 5, 6, 7, 8, 1, 0, 0, 0, 2, 0, 0, 0}) {
		t.Errorf("tcp_ao_repair: % x", r)
	}
}

func TestGetKeysAndRepairLayout(t *testing.T) {
	req := MarshalGetKeysRequest(true, 2)
	if len(req) != 608 || binary.LittleEndian.Uint32(req[272:]) != 2 || req[276] != 4 {
		t.Errorf("request: len %d", len(req))
	}
	b := make([]byte, 304)
	binary.LittleEndian.PutUint16(b, 2)
	copy(b[4:], []byte{127, 0, 0, 1})
	copy(b[128:], "cmac(aes)")
	copy(b[192:], "0123456789abcdef")
	binary.LittleEndian.PutUint32(b[272:], 1)
	b[276] = 3
	b[278], b[279], b[280], b[281], b[282], b[283] = 1, 2, 32, 16, 2, 16
	b[288], b[296] = 5, 6
	k, err := UnmarshalKeyInfo(b)
	if err != nil {
		t.Fatal(err)
	}
	if k.Alg != "cmac(aes)" || string(k.Key) != "0123456789abcdef" || !k.IsCurrent || !k.IsRNext ||
		k.SndID != 1 || k.RcvID != 2 || k.Peer.String() != "127.0.0.1/32" || k.MACLen != 16 || k.PktGood != 5 || k.PktBad != 6 {
		t.Errorf("%+v", k)
	}
	o := MarshalRepairOpts([]RepairOpt{{TCPOPT_MSS, 1460}, {TCPOPT_TIMESTAMP, 0}})
	if len(o) != 16 || o[0] != 2 || binary.LittleEndian.Uint32(o[4:]) != 1460 || o[8] != 8 {
		t.Errorf("repair opts % x", o)
	}
	if w := (RepairWindow{1, 2, 3, 4, 5}).Marshal(); len(w) != 20 || w[16] != 5 {
		t.Errorf("repair window % x", w)
	}
}
