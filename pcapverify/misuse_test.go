package pcapverify_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
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

// failingReader returns its error after the bytes it holds.
type failingReader struct {
	b   []byte
	err error
}

func (r *failingReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, r.err
	}
	n := copy(p, r.b)
	r.b = r.b[n:]
	return n, nil
}

// Every error about the capture itself, from Open, Capture.Next or
// Verify, wraps ErrCapture (and the reader's own error, when it is one),
// with its one-line text unchanged.
func TestCaptureErrorsTyped(t *testing.T) {
	pcapHeader := func(link uint32) []byte {
		h := make([]byte, 24)
		binary.LittleEndian.PutUint32(h, 0xa1b2c3d4)
		binary.LittleEndian.PutUint16(h[4:], 2)
		binary.LittleEndian.PutUint16(h[6:], 4)
		binary.LittleEndian.PutUint32(h[16:], 65535)
		binary.LittleEndian.PutUint32(h[20:], link)
		return h
	}
	record := make([]byte, 16)
	binary.LittleEndian.PutUint32(record[8:], 60)  // captured length
	binary.LittleEndian.PutUint32(record[12:], 60) // original length
	badBOM := []byte{0x0a, 0x0d, 0x0d, 0x0a, 28, 0, 0, 0, 1, 2, 3, 4}
	readErr := errors.New("disk on fire")
	for _, tc := range []struct {
		name string
		r    io.Reader
		msg  string
		also error
	}{
		{"empty", bytes.NewReader(nil), "empty file, not a pcap or pcapng capture", nil},
		{"two bytes", bytes.NewReader([]byte{1, 2}), "not a pcap or pcapng capture (too short)", nil},
		{"text", bytes.NewReader([]byte("hello, world")), "not a pcap or pcapng capture", nil},
		{"short pcap header", bytes.NewReader(pcapHeader(1)[:10]), "pcap: file header truncated", nil},
		{"gzip garbage", bytes.NewReader([]byte{0x1f, 0x8b, 0, 0}), "gzip: unexpected EOF", io.ErrUnexpectedEOF},
		{"link type", bytes.NewReader(append(pcapHeader(147), append(record, make([]byte, 60)...)...)),
			"link type 147 (UnknownLinkType) is not supported: " +
				"Ethernet, Linux cooked (SLL, SLL2), raw IPv4/IPv6 and BSD loopback/null are", nil},
		{"truncated record", bytes.NewReader(append(pcapHeader(1), record[:10]...)),
			"the file ends in the middle of a packet (truncated capture)", nil},
		{"pcapng byte order", bytes.NewReader(badBOM), "pcapng: section header with a bad byte-order magic", nil},
		{"reader error", &failingReader{b: pcapHeader(1), err: readErr}, "pcap: disk on fire", readErr},
	} {
		err := func() error {
			c, err := pcapverify.Open(tc.r)
			for err == nil {
				_, _, err = c.Next()
			}
			return err
		}()
		if !errors.Is(err, pcapverify.ErrCapture) || err.Error() != tc.msg || (tc.also != nil && !errors.Is(err, tc.also)) {
			t.Errorf("%s: %q (ErrCapture %v), want %q wrapping ErrCapture and %v", tc.name, err,
				errors.Is(err, pcapverify.ErrCapture), tc.msg, tc.also)
		}
	}
	_, keys := loadDemo(t)
	_, err := pcapverify.Verify(bytes.NewReader([]byte("hello, world")), keys, nil, nil)
	if !errors.Is(err, pcapverify.ErrCapture) {
		t.Errorf("Verify of text: %v, want ErrCapture", err)
	}
}
