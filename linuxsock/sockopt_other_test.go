//go:build !linux

package linuxsock

import (
	"errors"
	"net/netip"
	"testing"

	"github.com/tcpsig/tcpsig/keys"
)

// Off Linux every call returns the ErrUnsupported-wrapping errors.
func TestOtherOS(t *testing.T) {
	c := keys.AO{Peer: netip.MustParsePrefix("192.0.2.1/32"), Algorithm: "hmac(sha1)", Key: []byte("k")}
	m := keys.MD5{Peer: c.Peer, Key: []byte("k")}
	_, errKeys := AOKeys(nil)
	_, errInfo := ReadAOInfo(nil)
	_, errRepair := ReadAORepair(nil)
	for _, err := range []error{AddAOKey(nil, c, 0), DeleteAOKey(nil, c, AODelete{}), errKeys, errInfo,
		SelectAOKeys(nil, Current, 1, 1), SetAOFlags(nil, true, true), SetAOCounters(nil, AOCounters{}),
		errRepair, SetAORepair(nil, AORepair{}), ProbeAO()} {
		if !errors.Is(err, ErrNoAO) || !errors.Is(err, errors.ErrUnsupported) {
			t.Errorf("%v", err)
		}
	}
	for _, err := range []error{AddMD5Key(nil, m), DeleteMD5Key(nil, m), ProbeMD5()} {
		if !errors.Is(err, ErrNoMD5) || !errors.Is(err, errors.ErrUnsupported) {
			t.Errorf("%v", err)
		}
	}
}
