package redact

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

// secretish describes itself as a value with a key would: Format and
// String through this package.
type secretish struct{ key []byte }

func (s secretish) String() string             { return "secretish{key " + Marker + "}" }
func (s secretish) Format(f fmt.State, _ rune) { Format(f, s.String()) }
func (s secretish) LogValue() slog.Value       { return slog.GroupValue(Attr(s.key)) }
func (s secretish) MarshalJSON() ([]byte, error) {
	return json.Marshal(map[string]string{"key": Key(s.key)})
}

var testKey = []byte("Zebra-Quokka-Key!\x00\xfe\xa7")

func TestLeakFindsEveryForm(t *testing.T) {
	for _, out := range []string{
		string(testKey),
		hex.EncodeToString(testKey),
		strings.ToUpper(hex.EncodeToString(testKey)),
		fmt.Sprintf("% x", testKey),
		base64.StdEncoding.EncodeToString(testKey),
		base64.RawURLEncoding.EncodeToString(testKey),
		fmt.Sprintf("%v", testKey),
		fmt.Sprintf("%#v", testKey),
		fmt.Sprintf("%q", testKey),
		fmt.Sprintf("%d", testKey),
		fmt.Sprintf("{Key:%v}", testKey[:8]), // the first 8 bytes alone
		mustJSON(t, struct{ Key []byte }{testKey}),
	} {
		if Leak("before "+out+" after", testKey) == "" {
			t.Errorf("Leak misses %q", out)
		}
	}
	if f := Leak("nothing here 0123456789 [redacted]", testKey); f != "" {
		t.Errorf("Leak found %q in clean output", f)
	}
	if Leak("anything", nil) != "" {
		t.Error("an empty key leaks")
	}
}

func TestFormatEveryVerb(t *testing.T) {
	s := secretish{testKey}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%x", "%X", "%q", "%d", "%10.3s", "%T"} {
		for _, v := range []any{s, &s, []secretish{s}, map[string]secretish{"a": s}, struct{ S secretish }{s}} {
			out := fmt.Sprintf(verb, v)
			if f := Leak(out, testKey); f != "" {
				t.Errorf("%s of %T shows %q: %s", verb, v, f, out)
			}
		}
	}
	Format(nil, "no state, no panic")
}

func TestKey(t *testing.T) {
	if Key(nil) != "" || Key([]byte{}) != "" || Key(testKey) != Marker {
		t.Errorf("Key: %q %q %q", Key(nil), Key([]byte{}), Key(testKey))
	}
	if a := Attr(testKey); a.Key != "key" || a.Value.String() != Marker {
		t.Errorf("Attr = %v", a)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
