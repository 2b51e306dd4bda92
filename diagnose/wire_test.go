package diagnose

import (
	"net/netip"
	"strings"
	"testing"
)

// FromWire tells unsigned, isn and auth-kind from counts alone, and
// nothing where a secret is needed; zero and one-sided inputs give no
// diagnosis.
func TestFromWire(t *testing.T) {
	a, b := netip.MustParseAddrPort("192.0.2.1:40000"), netip.MustParseAddrPort("192.0.2.2:179")
	w := func(ao, md5, bare uint64, missing bool) Wire {
		return Wire{From: a, To: b, AO: ao, MD5: md5, Bare: bare, ISNMissing: missing}
	}
	r := func(ao, md5, bare uint64) Wire { return Wire{From: b, To: a, AO: ao, MD5: md5, Bare: bare} }
	for _, c := range []struct {
		name   string
		d, rev Wire
		want   Cause // "": no diagnosis
		fix    string
	}{
		{"zero", Wire{}, Wire{}, "", ""},
		{"ao both ways", w(5, 0, 0, false), r(5, 0, 0), "", ""},
		{"md5 both ways", w(0, 5, 0, false), r(0, 5, 0), "", ""},
		{"ao, reverse unseen", w(5, 0, 0, false), Wire{}, "", ""},
		{"bare both ways", w(0, 0, 5, false), r(0, 0, 5), "", ""},
		{"bare, reverse ao", w(0, 0, 3, false), r(4, 0, 0), Unsigned, "192.0.2.1 sends no TCP-AO or TCP-MD5 option, though its peer 192.0.2.2 signs with TCP-AO"},
		{"bare, reverse md5", w(0, 0, 3, false), r(0, 4, 0), Unsigned, "signs with TCP-MD5: configure the key on 192.0.2.1"},
		{"ao, reverse bare", w(4, 0, 0, false), r(0, 0, 3), "", ""},
		{"some bare, reverse ao", w(2, 0, 1, false), r(4, 0, 0), "", ""},
		{"md5, reverse ao", w(0, 3, 0, false), r(3, 0, 0), AuthKind, "the peer 192.0.2.2 signs with TCP-AO, this end 192.0.2.1 with TCP-MD5: configure the same kind on both"},
		{"ao, reverse md5, no handshake", w(3, 0, 0, true), r(0, 3, 0), AuthKind, "this end 192.0.2.1 with TCP-AO"},
		{"ao without handshake", w(3, 0, 0, true), r(3, 0, 0), ISN, "give -isn 192.0.2.1:40000=ISN -isn 192.0.2.2:179=ISN"},
		{"md5, isn flag ignored", w(0, 3, 0, true), r(0, 3, 0), "", ""},
	} {
		d, ok := FromWire(c.d, c.rev)
		if ok != (c.want != "") || d.Cause != c.want || d.Entry != "" || !strings.Contains(d.Fix, c.fix) {
			t.Errorf("%s: %+v %v, want %q with %q", c.name, d, ok, c.want, c.fix)
		}
	}
}
