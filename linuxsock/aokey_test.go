package linuxsock

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/netip"
	"strings"
	"testing"

	"github.com/tcpsig/tcpsig/keys"
)

// TestAOKeyRedacted: an AOKey's JSON and slog forms keep the socket's
// view of the key (current, RNext, counts) and never its bytes.
func TestAOKeyRedacted(t *testing.T) {
	k := AOKey{AO: keys.AO{Peer: netip.MustParsePrefix("192.0.2.1/32"), SendID: 1, RecvID: 2, Algorithm: "hmac(sha1)",
		Key: []byte("Zebra-Quokka-key")}, Current: true, Good: 7}
	j, err := json.Marshal(k)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("key", "k", k)
	for what, out := range map[string]string{"JSON": string(j), "slog": buf.String()} {
		if strings.Contains(out, "Zebra") || strings.Contains(out, "WmVicm") {
			t.Errorf("%s shows the key: %s", what, out)
		}
		if !strings.Contains(strings.ToLower(out), `"current":true`) || !strings.Contains(strings.ToLower(out), `"good":7`) {
			t.Errorf("%s lost the socket's view of the key: %s", what, out)
		}
	}
}
