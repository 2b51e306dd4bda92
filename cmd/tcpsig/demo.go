package main

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"net/netip"
	"strings"

	"github.com/tcpsig/tcpsig/keyfile"
	"github.com/tcpsig/tcpsig/pcapverify"
)

// The built-in sample that "tcpsig verify" checks without arguments: a
// capture, its keys file and its description (a capture entry of
// testvectors/linux/manifest.json without the keys).
var (
	//go:embed testdata/demo.pcap
	demoPcap []byte
	//go:embed testdata/demo.keys.json
	demoKeysJSON []byte
	//go:embed testdata/demo.json
	demoJSON []byte
)

// demoEntry is testdata/demo.json.
type demoEntry struct {
	Name   string            `json:"name"`
	Source string            `json:"source"`
	Notes  string            `json:"notes"`
	ISN    map[string]uint32 `json:"isn"`
	SNE    map[string]uint32 `json:"sne"`
}

type demo struct {
	input    input
	keys     *pcapverify.Keys
	isn, sne map[netip.AddrPort]uint32
}

func loadDemo() (*demo, error) {
	var e demoEntry
	dec := json.NewDecoder(bytes.NewReader(demoJSON))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		return nil, err
	}
	kf, err := keyfile.Parse(demoKeysJSON)
	if err != nil {
		return nil, err
	}
	ks, err := pcapverify.LoadKeys(kf)
	if err != nil {
		return nil, err
	}
	d := &demo{keys: ks}
	if d.isn, err = endpointMap(e.ISN); err != nil {
		return nil, err
	}
	if d.sne, err = endpointMap(e.SNE); err != nil {
		return nil, err
	}
	title := wrap(fmt.Sprintf("No capture given: verifying the built-in sample %q (%s). %s", e.Name, e.Source, e.Notes), 78)
	d.input = input{name: "built-in sample", title: title, open: func() (io.ReadCloser, int64, error) {
		return io.NopCloser(bytes.NewReader(demoPcap)), int64(len(demoPcap)), nil
	}}
	return d, nil
}

// demoHint ends the text report of the built-in sample.
const demoHint = "\nVerify your own capture: tcpsig verify -keys KEYS.json CAPTURE.pcap (tcpsig help\nkeys for the keys format). This sample, from a clone of the repository:\n  " + demoCommand

// demoCommand verifies the built-in sample's files, from the repository's
// top directory.
const demoCommand = "tcpsig verify -keys cmd/tcpsig/testdata/demo.keys.json cmd/tcpsig/testdata/demo.pcap"

// wrap breaks s into lines of at most width columns, at spaces.
func wrap(s string, width int) string {
	var b strings.Builder
	n := 0
	for i, w := range strings.Fields(s) {
		if i > 0 && n+1+len(w) > width {
			b.WriteByte('\n')
			n = 0
		} else if i > 0 {
			b.WriteByte(' ')
			n++
		}
		b.WriteString(w)
		n += len(w)
	}
	return b.String()
}

func endpointMap(m map[string]uint32) (map[netip.AddrPort]uint32, error) {
	out := map[netip.AddrPort]uint32{}
	for s, n := range m {
		ap, err := netip.ParseAddrPort(s)
		if err != nil {
			return nil, err
		}
		out[ap] = n
	}
	return out, nil
}
