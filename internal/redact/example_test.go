package redact_test

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"

	"github.com/tcpsig/tcpsig/internal/redact"
)

// secret is a type that holds a key and prints itself through redact.
type secret struct {
	Name string
	Key  []byte
}

func (s secret) String() string             { return "secret " + s.Name + " " + redact.Marker }
func (s secret) Format(f fmt.State, _ rune) { redact.Format(f, s.String()) }
func (s secret) LogValue() slog.Value {
	return slog.GroupValue(slog.String("name", s.Name), redact.Attr(s.Key))
}
func (s secret) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct{ Name, Key string }{s.Name, redact.Key(s.Key)})
}

func Example() {
	s := secret{"r1", []byte("Zebra-Key")}
	fmt.Printf("%v %x %#v\n", s, s, s)
	b, _ := json.Marshal(s)
	fmt.Println(string(b))
	log := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}}))
	log.Info("loaded", "mkt", s)
	fmt.Println(redact.Leak(fmt.Sprint(s.Key), s.Key) != "")
	// Output:
	// secret r1 [redacted] secret r1 [redacted] secret r1 [redacted]
	// {"Name":"r1","Key":"[redacted]"}
	// level=INFO msg=loaded mkt.name=r1 mkt.key=[redacted]
	// true
}
