package packetauth

import (
	"errors"
	"net/netip"
	"reflect"
	"testing"
	"time"

	"github.com/tcpsig/tcpsig/ao"
	"github.com/tcpsig/tcpsig/segment"
)

// TestNotSetUp: every exported method of a nil *Layer and of a zero Layer
// (one New did not make, which covers nobody) fails closed: a packet in
// either direction, from a peer a real layer would cover or not, is
// refused with ErrNotSetUp (which wraps ErrConfig), as is every call that
// returns an error; the others do nothing and report nothing. The table
// must name every exported method, so a new one cannot be forgotten.
func TestNotSetUp(t *testing.T) {
	pkt, err := segment.AppendPacket(nil, segment.IP{Src: addrA4, Dst: addrB4},
		segment.Fields{SrcPort: 40000, DstPort: 179, Seq: 1, Flags: segment.SYN, Window: 65535}, []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	local, remote := netip.AddrPortFrom(addrA4, 40000), netip.AddrPortFrom(addrB4, 179)
	ep := ao.Endpoint{Local: local, Remote: remote, LocalISN: 1, RemoteISN: 2, CurrentSendID: 1, RNextRecvID: 1}
	// Each call returns its error (nil if it returns none) and whether it
	// did or reported anything.
	calls := map[string]func(l *Layer) (error, bool){
		"Outbound": func(l *Layer) (error, bool) { out, err := l.Outbound(nil, pkt); return err, out != nil },
		"Inbound":  func(l *Layer) (error, bool) { out, err := l.Inbound(nil, pkt); return err, out != nil },
		"Seed":     func(l *Layer) (error, bool) { return l.Seed(ep), false },
		"OutboundL3": func(l *Layer) (error, bool) {
			out, err := l.OutboundL3(nil, pkt, 0)
			return err, out != nil
		},
		"InboundL3": func(l *Layer) (error, bool) {
			out, err := l.InboundL3(nil, pkt, 0)
			return err, out != nil
		},
		"SeedL3": func(l *Layer) (error, bool) { return l.SeedL3(ep), false },
		"SeedRevokedL3": func(l *Layer) (error, bool) {
			return l.SeedRevokedL3(local, remote, KindMD5, 0), false
		},
		"ExportL3": func(l *Layer) (error, bool) { _, ok := l.ExportL3(local, remote, 0); return nil, ok },
		"SeedRevoked": func(l *Layer) (error, bool) {
			return l.SeedRevoked(local, remote, KindMD5), false
		},
		"SetCurrent": func(l *Layer) (error, bool) { return l.SetCurrent(local, remote, 1), false },
		"SetRNext":   func(l *Layer) (error, bool) { return l.SetRNext(local, remote, 1), false },
		"Conn":       func(l *Layer) (error, bool) { c, ok := l.Conn(local, remote); return nil, ok || c != nil },
		"Export":     func(l *Layer) (error, bool) { _, ok := l.Export(local, remote); return nil, ok },
		"Conns": func(l *Layer) (error, bool) {
			n := 0
			l.Conns(func(ConnInfo) bool { n++; return true })
			return nil, n > 0
		},
		"Revoke":          func(l *Layer) (error, bool) { return nil, l.Revoke(func(ConnInfo) bool { return true }) != 0 },
		"RevokeUncovered": func(l *Layer) (error, bool) { return nil, l.RevokeUncovered() != 0 },
		"Counters":        func(l *Layer) (error, bool) { return nil, l.Counters() != Counters{} },
		"Overhead":        func(l *Layer) (error, bool) { return nil, l.Overhead() != 0 },
		"Expire":          func(l *Layer) (error, bool) { l.Expire(time.Now().Add(time.Hour)); return nil, false },
		"Close":           func(l *Layer) (error, bool) { l.Close(); return nil, false },
	}
	typ := reflect.TypeFor[*Layer]()
	for i := range typ.NumMethod() {
		if _, ok := calls[typ.Method(i).Name]; !ok {
			t.Errorf("(*Layer).%s is not in the table", typ.Method(i).Name)
		}
	}
	for _, recv := range []struct {
		name string
		l    func() *Layer
	}{
		{"nil *Layer", func() *Layer { return nil }},
		{"zero Layer", func() *Layer { return new(Layer) }},
		{"zero Layer after Close", func() *Layer { l := new(Layer); l.Close(); return l }},
	} {
		for name, call := range calls {
			l := recv.l()
			err, did := func() (err error, did bool) {
				defer func() {
					if r := recover(); r != nil {
						t.Errorf("%s: %s panics: %v", recv.name, name, r)
					}
				}()
				return call(l)
			}()
			m := reflect.ValueOf(l).MethodByName(name).Type()
			wantErr := m.NumOut() > 0 && m.Out(m.NumOut()-1) == reflect.TypeFor[error]()
			switch {
			case wantErr && (!errors.Is(err, ErrNotSetUp) || !errors.Is(err, ErrConfig)):
				t.Errorf("%s: %s: %v, want ErrNotSetUp", recv.name, name, err)
			case !wantErr && err != nil:
				t.Errorf("%s: %s: %v", recv.name, name, err)
			case did:
				t.Errorf("%s: %s did or reported something", recv.name, name)
			}
			// Nothing a call did may let a later packet through.
			if out, err := l.Inbound(nil, pkt); !errors.Is(err, ErrNotSetUp) || out != nil {
				t.Errorf("%s: Inbound after %s: %d bytes, %v, want ErrNotSetUp", recv.name, name, len(out), err)
			}
		}
	}
}
