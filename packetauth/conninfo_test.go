package packetauth

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// ConnInfo prints as one line (issue 29: it printed as a struct of bare
// numbers), TCP-AO's KeyIDs, ISNs and SNEs only for TCP-AO.
func TestConnInfoString(t *testing.T) {
	ao := ConnInfo{Local: netip.MustParseAddrPort("198.51.100.2:179"), Remote: netip.MustParseAddrPort("192.0.2.1:40000"),
		Kind: KindAO, State: StateEstablished, LocalISN: 5000, RemoteISN: 1000, SendSNE: 1, RecvSNE: 2, CurrentKeyID: 2, RNextKeyID: 1,
		Signed: 1, Verified: 3, Dropped: 1, LastSeen: time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)}
	md5 := ConnInfo{Local: netip.MustParseAddrPort("[2001:db8::1]:40000"), Remote: netip.MustParseAddrPort("[2001:db8::2]:179"),
		Kind: KindMD5, State: StateSynSent, Signed: 1, Revoked: true}
	for _, c := range []struct {
		ci   ConnInfo
		want string
	}{
		{ao, "198.51.100.2:179 <-> 192.0.2.1:40000 TCP-AO established KeyID 2 RNextKeyID 1 ISN 5000/1000 SNE 1/2 signed 1 verified 3 dropped 1"},
		{md5, "[2001:db8::1]:40000 <-> [2001:db8::2]:179 TCP-MD5 syn-sent signed 1 verified 0 dropped 0 revoked"},
	} {
		for _, got := range []string{c.ci.String(), fmt.Sprint(c.ci), fmt.Sprintf("%+v", c.ci)} {
			if got != c.want {
				t.Errorf("got  %s\nwant %s", got, c.want)
			}
		}
	}
	if strings.Contains(ao.String(), "2026") {
		t.Error("String shows LastSeen")
	}
}
