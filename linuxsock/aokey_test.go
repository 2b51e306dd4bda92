package linuxsock

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"testing"

	"github.com/tcpsig/tcpsig/internal/redact"
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

// TestAOKeyPrinted: every fmt verb prints an AOKey's String, with the
// socket's view of the key and none of its bytes.
func TestAOKeyPrinted(t *testing.T) {
	key := []byte("Zebra-Quokka-key")
	k := AOKey{AO: keys.AO{Peer: netip.MustParsePrefix("192.0.2.1/32"), SendID: 1, RecvID: 2, Algorithm: "hmac(sha1)",
		Key: key}, RNext: true, Bad: 3}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%x", "%X", "%q", "%d", "%10v"} {
		out := fmt.Sprintf(verb, k)
		if f := redact.Leak(out, key); f != "" {
			t.Errorf("%s shows the key as %q: %s", verb, f, out)
		}
		if out != k.String() {
			t.Errorf("%s = %q, want String %q", verb, out, k.String())
		}
	}
	if k.GoString() != k.String() {
		t.Errorf("GoString = %q, want String %q", k.GoString(), k.String())
	}
	if !strings.Contains(k.String(), "rnext=true") || !strings.Contains(k.String(), "bad=3") {
		t.Errorf("String lost the socket's view of the key: %s", k)
	}
}
