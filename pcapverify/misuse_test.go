package pcapverify_test

import (
	"bytes"
	"errors"
	"os"
	"testing"

	"github.com/tcpsig/tcpsig/keyfile"
	"github.com/tcpsig/tcpsig/pcapverify"
)

// loadDemo reads the built-in sample capture (the one tcpsig verify checks
// when given none) and its keys.
func loadDemo(t *testing.T) ([]byte, *pcapverify.Keys) {
	t.Helper()
	demo, err := os.ReadFile("../cmd/tcpsig/testdata/demo.pcap")
	if err != nil {
		t.Fatal(err)
	}
	kf, err := keyfile.Load("../cmd/tcpsig/testdata/demo.keys.json")
	if err != nil {
		t.Fatal(err)
	}
	keys, err := pcapverify.LoadKeys(kf)
	if err != nil {
		t.Fatal(err)
	}
	return demo, keys
}

// A nil or zero value, or a nil argument, is ErrNotSetUp: never a panic,
// never a capture that verified nothing and said nothing.
func TestNotSetUp(t *testing.T) {
	demo, keys := loadDemo(t)
	var nilVerifier *pcapverify.Verifier
	var nilCapture *pcapverify.Capture
	for name, call := range map[string]func() error{
		"LoadKeys(nil)": func() error { _, err := pcapverify.LoadKeys(nil); return err },
		"NewVerifier(nil keys)": func() error {
			_, err := pcapverify.NewVerifier(nil, nil, nil)
			return err
		},
		"NewVerifier(zero Keys)": func() error {
			_, err := pcapverify.NewVerifier(&pcapverify.Keys{}, nil, nil)
			return err
		},
		"nil Verifier.Packet":  func() error { return nilVerifier.Packet(1, nil, false) },
		"zero Verifier.Packet": func() error { return new(pcapverify.Verifier).Packet(1, nil, false) },
		"Open(nil)":            func() error { _, err := pcapverify.Open(nil); return err },
		"nil Capture.Next":     func() error { _, _, err := nilCapture.Next(); return err },
		"zero Capture.Next":    func() error { _, _, err := new(pcapverify.Capture).Next(); return err },
		"Verify(nil reader)":   func() error { _, err := pcapverify.Verify(nil, keys, nil, nil); return err },
		"Verify(nil keys)": func() error {
			_, err := pcapverify.Verify(bytes.NewReader(demo), nil, nil, nil)
			return err
		},
	} {
		if err := call(); !errors.Is(err, pcapverify.ErrNotSetUp) {
			t.Errorf("%s: %v, want ErrNotSetUp", name, err)
		}
	}
	// What reads nothing of a Verifier that was never set up answers
	// empty, and Close does nothing.
	nilVerifier.Close()
	new(pcapverify.Verifier).Close()
	if n := nilVerifier.Totals().Packets; n != 0 || nilVerifier.Flows() != nil {
		t.Errorf("nil Verifier: %d packets, flows %v", n, nilVerifier.Flows())
	}
	// Nil Totals and Options count and warn of nothing; adding nil adds
	// nothing.
	var nilTotals *pcapverify.Totals
	var nilOptions *pcapverify.Options
	nilTotals.Add(&pcapverify.Totals{Packets: 1})
	nilOptions.WarnUnseen()
	tot := pcapverify.Totals{Packets: 2}
	tot.Add(nil)
	if tot.Packets != 2 || nilTotals.Checked() != 0 || nilTotals.Failing() || nilTotals.Verdicts() != (pcapverify.VerdictCounts{}) {
		t.Errorf("nil Totals: %+v, %d checked, failing %v", tot, nilTotals.Checked(), nilTotals.Failing())
	}
	if s := pcapverify.Verdict(200).String(); s != "Verdict(200)" {
		t.Errorf("Verdict(200) is %q", s)
	}
	if s := pcapverify.Kind(9).String(); s != "Kind(9)" {
		t.Errorf("Kind(9) is %q", s)
	}
}

// One flipped bit in the last segment (it carries no data: its last bytes
// are its MAC) is the one failing verdict of the built-in sample.
func TestVerifyFlippedBit(t *testing.T) {
	demo, keys := loadDemo(t)
	demo = bytes.Clone(demo)
	demo[len(demo)-1] ^= 1
	var bad []pcapverify.Result
	rep, err := pcapverify.Verify(bytes.NewReader(demo), keys, nil, func(r *pcapverify.Result) {
		if r.Verdict != pcapverify.Good {
			bad = append(bad, *r)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(bad) != 1 || bad[0].Frame != 49 || bad[0].Verdict != pcapverify.Bad || bad[0].Reason != "MAC does not match" {
		t.Fatalf("failing segments %+v, want frame 49 bad", bad)
	}
	if c := rep.Totals.Verdicts(); c.Good != 48 || c.Bad != 1 || !rep.Totals.Failing() {
		t.Errorf("totals %+v", c)
	}
}
