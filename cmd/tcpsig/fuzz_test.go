package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"io"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/tcpsig/tcpsig/keyfile"
	"github.com/tcpsig/tcpsig/pcapverify"
	"github.com/tcpsig/tcpsig/segment"
)

// FuzzKeysFile: any bytes as a keys file either load or give one line
// that names the file, never a panic.
func FuzzKeysFile(f *testing.F) {
	f.Add(demoKeys(f))
	f.Add([]byte(`{"md5": [{"peer": "192.0.2.1/32", "key": "text:secret"}, {"peer": "2001:db8::/64", "key": "hex:0a0b"}]}`))
	f.Add([]byte(`{"ao": [{"alg": "cmac(aes128)", "key": "hex:00", "sndid": 0, "rcvid": 255, "peer": "0.0.0.0/0", "maclen": 4, "exclude_options": true, "name": "x"},
		{"alg": "cmac(aes128)", "key": "hex:01", "sndid": 0, "rcvid": 255, "peer": "0.0.0.0/0"}]}`))
	f.Add([]byte(`{"ao": [{"alg": "hmac(sha1)", "key": "text:k", "sndid": 1, "rcvid": 1, "peer": "::ffff:10.0.0.1"}]}`))
	f.Add([]byte(`{"ao": [{"alg": "KMAC256-128", "key": "text:0123456789abcdef0123456789abcdef", "sndid": 1, "rcvid": 2, "peer": "::/0"},
		{"alg": "HMAC-SHA256-128", "key": "text:0123456789abcdef0123456789abcdef", "sndid": 3, "rcvid": 4, "peer": "10.0.0.0/8", "maclen": 16}]}`))
	f.Add([]byte(`{"ao": [{}], "md5": [1]}`))
	f.Add([]byte("{\"ao\": [{\"alg\": \"hmac(sha1)\",\n \"key\": \"hex:zz\"}]}"))
	f.Fuzz(func(t *testing.T, b []byte) {
		kf, err := keyfile.Parse(b)
		if err == nil {
			_, err = pcapverify.LoadKeys(kf)
		}
		if err != nil {
			msg := err.Error()
			if strings.ContainsAny(msg, "\n\r") {
				t.Fatalf("error is not one line: %q", msg)
			}
		}
	})
}

// fuzzKeys are the keys FuzzCapture verifies with: the built-in sample's,
// TCP-MD5 keys for the synthetic flows, the engine-generated session's,
// and wide MKTs so that segments from anywhere meet a key.
func fuzzKeys(f *testing.F) []byte {
	var k struct {
		AO  []map[string]any `json:"ao"`
		MD5 []map[string]any `json:"md5"`
	}
	if err := json.Unmarshal(demoKeys(f), &k); err != nil {
		f.Fatal(err)
	}
	var eng struct {
		AO []map[string]any `json:"ao"`
	}
	cv := newConvo(f, demoConfig())
	if err := json.Unmarshal(cv.keys(), &eng); err != nil {
		f.Fatal(err)
	}
	k.AO = append(k.AO, eng.AO...)
	k.AO = append(k.AO,
		map[string]any{"alg": "cmac(aes128)", "key": "text:any", "sndid": 1, "rcvid": 1, "peer": "0.0.0.0/0"},
		map[string]any{"alg": "hmac(sha256)", "key": "text:any", "sndid": 2, "rcvid": 2, "peer": "::/0", "maclen": 16},
		map[string]any{"alg": "KMAC256-128", "key": "text:0123456789abcdef0123456789abcdef", "sndid": 3, "rcvid": 3, "peer": "0.0.0.0/0"},
		map[string]any{"alg": "HMAC-SHA256-128", "key": "text:0123456789abcdef0123456789abcdef", "sndid": 4, "rcvid": 4, "peer": "::/0"})
	k.MD5 = append(k.MD5, map[string]any{"peer": "198.51.100.0/24", "key": "text:md5-secret"})
	b, err := json.Marshal(k)
	if err != nil {
		f.Fatal(err)
	}
	return b
}

// FuzzCapture: any bytes as a capture are verified or refused with one
// line, never a panic, whatever the verdicts.
func FuzzCapture(f *testing.F) {
	f.Add(demoPcap)
	cv := newConvo(f, demoConfig())
	cv.session(1, 0)
	f.Add(pcapngFile(ltLoop, framed(ltLoop, cv.pkts)))
	md := newConvo(f, convoConfig{client: netip.MustParseAddrPort("198.51.100.1:1"), server: netip.MustParseAddrPort("198.51.100.2:2"), md5Key: []byte("md5-secret")})
	md.session(1, 0)
	f.Add(pcapFile(ltSLL, true, framed(ltSLL, md.pkts)))
	v6 := newConvo(f, convoConfig{client: netip.MustParseAddrPort("[::1]:1"), server: netip.MustParseAddrPort("[::1]:2"),
		mkts: []mktSpec{{alg: "hmac(sha256)", key: []byte("any"), sndID: 2, rcvID: 2, maclen: 16}}})
	v6.send(v6.c, segment.SYN, nil)
	v6.send(v6.s, segment.SYN|segment.ACK, nil)
	f.Add(pcapFile(ltRaw, false, v6.pkts))
	f.Add([]byte{0x0a, 0x0d, 0x0d, 0x0a, 0x1c, 0, 0, 0, 0x4d, 0x3c, 0x2b, 0x1a})
	f.Add(append(pcapngSection(binary.BigEndian, []uint32{ltRaw, ltSLL2}, framed(ltRaw, v6.pkts)),
		pcapngFile(ltSLL, framed(ltSLL, md.pkts))...))
	h := hostile()
	for _, name := range slices.Sorted(maps.Keys(h)) {
		f.Add(h[name])
	}

	kf, err := keyfile.Parse(fuzzKeys(f))
	if err != nil {
		f.Fatal(err)
	}
	ks, err := pcapverify.LoadKeys(kf) // shared by the inputs, as by the files of one run
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := pcapverify.Open(bytes.NewReader(b))
		if err != nil {
			if strings.ContainsAny(err.Error(), "\n\r") {
				t.Fatalf("error is not one line: %q", err)
			}
			return
		}
		var txt textReporter
		txt.w = io.Discard
		v, err := pcapverify.NewVerifier(ks, &pcapverify.Options{}, func(r *pcapverify.Result) { txt.segment("f", r) })
		if err != nil {
			t.Fatal(err)
		}
		for frame := 1; frame < 10000; frame++ {
			ip, truncated, err := c.Next()
			if err != nil {
				if err != io.EOF && strings.ContainsAny(err.Error(), "\n\r") {
					t.Fatalf("error is not one line: %q", err)
				}
				break
			}
			v.Packet(frame, ip, truncated)
		}
		txt.end("f", v.Totals(), v.Flows(), nil)
	})
}
