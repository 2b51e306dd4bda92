package pcapverify_test

import (
	"bytes"
	"os"
	"testing"

	"github.com/tcpsig/tcpsig/keyfile"
	"github.com/tcpsig/tcpsig/pcapverify"
	"github.com/tcpsig/tcpsig/segment"
)

// A keys file of no entry: Keyless, and with Options.Explain the demo
// capture gives an empty (not nil) list of diagnoses; without its
// handshake, isn for both directions; without Explain, none.
func TestKeylessDiagnoses(t *testing.T) {
	b, err := os.ReadFile("../cmd/tcpsig/testdata/demo.pcap")
	if err != nil {
		t.Fatal(err)
	}
	keys, err := pcapverify.LoadKeys(&keyfile.File{})
	if err != nil {
		t.Fatal(err)
	}
	run := func(explain, handshake bool) []pcapverify.Diagnosis {
		v, err := pcapverify.NewVerifier(keys, &pcapverify.Options{Explain: explain}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer v.Close()
		if !v.Keyless() {
			t.Fatal("a keys file of no entry is not keyless")
		}
		c, err := pcapverify.Open(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		for frame := 1; ; frame++ {
			ip, _, err := c.Next()
			if err != nil {
				break
			}
			if s, err := segment.ParsePacket(ip); !handshake && err == nil && s.Header().Flags()&segment.SYN != 0 {
				continue
			}
			_ = v.Packet(frame, ip, false)
		}
		return v.Diagnoses()
	}
	if ds := run(true, true); ds == nil || len(ds) != 0 {
		t.Errorf("whole capture: %+v, want an empty list", ds)
	}
	if ds := run(false, false); ds != nil {
		t.Errorf("without Explain: %+v", ds)
	}
	ds := run(true, false)
	if len(ds) != 2 || ds[0].Cause != "isn" || ds[1].Cause != "isn" || ds[0].From != ds[1].To || ds[0].Entry != "" {
		t.Errorf("without the handshake: %+v, want isn for both directions", ds)
	}
	var v *pcapverify.Verifier
	if v.Keyless() {
		t.Error("a nil Verifier is keyless")
	}
}
