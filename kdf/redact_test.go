package kdf

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"testing"

	"github.com/tcpsig/tcpsig/internal/redact"
	"github.com/tcpsig/tcpsig/mac"
)

// masterKey's printed forms all hold letters; 40 bytes suit every
// algorithm but cmac(aes128), which reduces it (and the test looks for
// the reduced key as well), and the draft's, which take it whole.
var masterKey = []byte("Zebra-Quokka-Master-Key-\xfe\xa7-for-every-algo")

// secretsOf lists what must not be printed for a Master of alg under
// key: the key and the PRF key it is turned into (the reduced CMAC key,
// HKDF's PRK).
func secretsOf(alg *mac.Algorithm, key []byte) [][]byte {
	out := [][]byte{key}
	if alg.ReducesMasterKey() {
		var r [16]byte
		_ = ReduceCMACKey(alg.NewContext(), &r, key)
		out = append(out, r[:])
	}
	if alg.KDF() == mac.HKDFSHA256 {
		var prk [32]byte
		_ = Extract(alg.NewContext(), &prk, nil, key)
		out = append(out, prk[:])
	}
	return out
}

// TestMasterFormat prints a Master of every algorithm, before its first
// derivation (the key waits in the Master) and after it (the template),
// by pointer and as a field held by value, with every verb and through
// slog's handlers: no key bytes, in any encoding.
func TestMasterFormat(t *testing.T) {
	in := Input{Src: netip.MustParseAddr("192.0.2.1"), Dst: netip.MustParseAddr("192.0.2.2"), SrcPort: 179, DstPort: 40000, SrcISN: 1}
	for _, alg := range mac.Algorithms() {
		key := masterKey
		if !alg.ReducesMasterKey() && !alg.KeySizeOK(len(key)) {
			for n := 1; n <= len(masterKey); n++ {
				if alg.KeySizeOK(n) && alg.CheckMasterKey(n) == nil {
					key = masterKey[len(masterKey)-n:] // keep the letters at the end
				}
			}
		}
		holder := &struct {
			Name string
			M    Master // by value: fmt walks into it
		}{Name: "holder"}
		m := &holder.M
		if err := m.Init(alg, key); err != nil {
			t.Fatalf("%v: %v", alg, err)
		}
		for _, stage := range []string{"before its first derivation", "after it", "wiped"} {
			switch stage {
			case "after it":
				if _, err := m.Derive(alg.NewContext(), make([]byte, MaxInputLen), &in, nil); err != nil {
					t.Fatalf("%v: %v", alg, err)
				}
			case "wiped":
				m.Wipe()
			}
			var outs []string
			for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%x", "%X", "%q", "%d", "% x"} {
				for _, v := range []any{m, holder, []*Master{m}, struct{ P *Master }{m}} {
					outs = append(outs, verb+" "+fmt.Sprintf(verb, v))
				}
			}
			outs = append(outs, "String "+m.String(), "GoString "+m.GoString())
			if b, err := json.Marshal(holder); err == nil {
				outs = append(outs, "json "+string(b))
			}
			for _, h := range []func(*bytes.Buffer) slog.Handler{
				func(b *bytes.Buffer) slog.Handler { return slog.NewTextHandler(b, nil) },
				func(b *bytes.Buffer) slog.Handler { return slog.NewJSONHandler(b, nil) },
			} {
				var buf bytes.Buffer
				slog.New(h(&buf)).Info("master", "m", m, "holder", holder)
				outs = append(outs, "slog "+buf.String())
			}
			for _, out := range outs {
				for _, s := range secretsOf(alg, key) {
					if f := redact.Leak(out, s); f != "" {
						t.Errorf("%v, %s: %q shows key bytes as %q", alg, stage, out, f)
					}
				}
			}
			if s := fmt.Sprint(m); !strings.Contains(s, redact.Marker) && stage != "wiped" {
				t.Errorf("%v, %s: %q does not say the key is redacted", alg, stage, s)
			}
		}
	}
	var nilM *Master
	for _, s := range []string{fmt.Sprint(nilM), nilM.String(), nilM.GoString(), nilM.LogValue().String(), fmt.Sprint(&Master{})} {
		if s == "" || strings.Contains(s, "PANIC") {
			t.Errorf("nil or zero Master prints %q", s)
		}
	}
}

// TestMasterLogValue: slog shows the algorithm and whether a key is set.
func TestMasterLogValue(t *testing.T) {
	alg, _ := mac.Lookup("hmac(sha256)")
	var m Master
	if err := m.Init(alg, masterKey); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	slog.New(slog.NewTextHandler(&buf, nil)).Info("x", "m", &m)
	if !strings.Contains(buf.String(), "m.alg=hmac(sha256) m.key=[redacted]") {
		t.Errorf("slog text: %q", buf.String())
	}
}
