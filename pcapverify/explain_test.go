package pcapverify_test

import (
	"bytes"
	"os"
	"testing"

	"github.com/tcpsig/tcpsig/keyfile"
	"github.com/tcpsig/tcpsig/pcapverify"
)

// Options.Explain: Report.Diagnoses names the demo's client direction
// when the server's entries exclude options; without it there is none,
// and a nil Verifier has none.
func TestReportDiagnoses(t *testing.T) {
	b, err := os.ReadFile("../cmd/tcpsig/testdata/demo.keys.json")
	if err != nil {
		t.Fatal(err)
	}
	// The third and fourth entries are the server's (peer 127.0.0.2).
	b = bytes.Replace(b, []byte(`"exclude_options": false`), []byte(`"exclude_options": X`), 2)
	b = bytes.ReplaceAll(b, []byte(`"exclude_options": false`), []byte(`"exclude_options": true`))
	b = bytes.ReplaceAll(b, []byte(`"exclude_options": X`), []byte(`"exclude_options": false`))
	kf, err := keyfile.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := pcapverify.LoadKeys(kf)
	if err != nil {
		t.Fatal(err)
	}
	for _, explain := range []bool{false, true} {
		f, err := os.Open("../cmd/tcpsig/testdata/demo.pcap")
		if err != nil {
			t.Fatal(err)
		}
		rep, err := pcapverify.Verify(f, keys, &pcapverify.Options{Explain: explain}, nil)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		want := []pcapverify.Diagnosis{{From: "127.0.0.2:40001", To: "127.0.0.1:40002", Cause: "options",
			Message: `ao[2]: set "exclude_options": false (the peer includes options)`, Entry: "ao[2]"}}
		if !explain {
			want = nil
		}
		if len(rep.Diagnoses) != len(want) || (len(want) > 0 && rep.Diagnoses[0] != want[0]) {
			t.Errorf("explain %v: %+v, want %+v", explain, rep.Diagnoses, want)
		}
	}
	var v *pcapverify.Verifier
	if v.Diagnoses() != nil {
		t.Error("a nil Verifier has diagnoses")
	}
}
