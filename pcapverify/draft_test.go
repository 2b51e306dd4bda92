package pcapverify_test

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/tcpsig/tcpsig/keyfile"
	"github.com/tcpsig/tcpsig/pcapverify"
	"github.com/tcpsig/tcpsig/segment"
	"github.com/tcpsig/tcpsig/testvectors"
)

// TestDraftVectorsCapture: captures of the draft-ietf-tcpm-tcp-ao-algs-07
// vectors (per algorithm and options coverage, an IPv4 and an IPv6
// connection: SYN, SYN-ACK and a data segment each way), with keys files
// naming the algorithms as the draft does, verify all good; under a
// wrong master key all bad.
func TestDraftVectorsCapture(t *testing.T) {
	set, err := testvectors.DraftAlgs()
	if err != nil {
		t.Fatal(err)
	}
	for _, alg := range []string{"hmac-sha256-128", "kmac256-128"} {
		for _, include := range []bool{true, false} {
			var pcap bytes.Buffer
			w := pcapgo.NewWriter(&pcap)
			if err := w.WriteFileHeader(65535, layers.LinkTypeRaw); err != nil {
				t.Fatal(err)
			}
			var entries []string
			key := "hex:" + hex.EncodeToString(set.MasterKey)
			seen := map[int]bool{}
			for i, v := range set.Vectors {
				// RFC 9235 sections 4 and 6 (IPv4, IPv6), one connection each.
				if v.Alg != alg || v.IncludeOptions != include || (v.Section[0] != '4' && v.Section[0] != '6') {
					continue
				}
				ci := gopacket.CaptureInfo{Timestamp: time.Unix(int64(1000+i), 0), CaptureLength: len(v.Packet), Length: len(v.Packet)}
				if err := w.WritePacket(ci, v.Packet); err != nil {
					t.Fatal(err)
				}
				if seen[v.IPVersion] {
					continue
				}
				seen[v.IPVersion] = true
				seg, err := segment.ParsePacket(v.Packet)
				if err != nil {
					t.Fatal(err)
				}
				// The client's MKT (peer: the server) and the server's.
				for _, e := range [][3]any{{seg.Dst(), set.ClientKeyID, set.ServerKeyID}, {seg.Src(), set.ServerKeyID, set.ClientKeyID}} {
					entries = append(entries, fmt.Sprintf(`{"alg": %q, "key": %q, "sndid": %d, "rcvid": %d, "peer": "%v", "exclude_options": %v}`,
						strings.ToUpper(alg), key, e[1], e[2], e[0], !include))
				}
			}
			for _, wrong := range []bool{false, true} {
				js := `{"ao": [` + strings.Join(entries, ", ") + `]}`
				if wrong {
					js = strings.ReplaceAll(js, key, key[:len(key)-2]+"ff")
				}
				kf, err := keyfile.Parse([]byte(js))
				if err != nil {
					t.Fatal(err)
				}
				keys, err := pcapverify.LoadKeys(kf)
				if err != nil {
					t.Fatal(err)
				}
				rep, err := pcapverify.Verify(bytes.NewReader(pcap.Bytes()), keys, nil, nil)
				if err != nil {
					t.Fatal(err)
				}
				c := rep.Totals.Verdicts()
				if rep.Totals.Packets != 8 || (!wrong && c.Good != 8) || (wrong && c.Bad != 8) {
					t.Errorf("%s, options included %v, wrong key %v: %d packets, %+v", alg, include, wrong, rep.Totals.Packets, c)
				}
			}
		}
	}
}
