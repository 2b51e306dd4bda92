package tcpsig_test

import (
	"errors"
	"fmt"
	"net/netip"
	"reflect"
	"testing"

	"github.com/tcpsig/tcpsig/ao"
	"github.com/tcpsig/tcpsig/kdf"
	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/mac"
	"github.com/tcpsig/tcpsig/md5sig"
	"github.com/tcpsig/tcpsig/scratch"
	"github.com/tcpsig/tcpsig/segment"
	"github.com/tcpsig/tcpsig/sigpool"
)

// sentinels are the exported errors of the engine's packages: every error
// a careless call gets must be one of them (errors.Is).
var sentinels = []error{
	ao.ErrBadMAC, ao.ErrMACLength, ao.ErrKeyNotFound, ao.ErrAORequired, ao.ErrUnexpected, ao.ErrNoOption,
	ao.ErrNoRoom, ao.ErrNoCurrentKey, ao.ErrNotInitialized, md5sig.ErrNotInitialized, ao.ErrNoISN, ao.ErrNotSYN, ao.ErrOption, keys.ErrInvalid,
	keys.ErrMACTooLong, ao.ErrKeyExists, ao.ErrNoSuchKey, ao.ErrKeyBusy,
	md5sig.ErrBadMAC, md5sig.ErrMissing, md5sig.ErrUnexpected, md5sig.ErrAOOption, md5sig.ErrNoOption,
	md5sig.ErrNoKey, md5sig.ErrNoRoom, md5sig.ErrNoSuchKey,
	sigpool.ErrPoolFull, sigpool.ErrKeyMismatch, sigpool.ErrNotAllocated, sigpool.ErrBackend,
	mac.ErrNoKey, mac.ErrKeySize, mac.ErrUnknownAlgorithm, mac.ErrMACLen, mac.ErrMasterKeyLen,
	kdf.ErrMasterKey, kdf.ErrAddress,
	segment.ErrShortPacket, segment.ErrIPVersion, segment.ErrIPHeaderLength, segment.ErrNotTCP,
	segment.ErrFragment, segment.ErrExtHeaderChain, segment.ErrShortTCP, segment.ErrDataOffset,
	segment.ErrOptionLength, segment.ErrAuthOption, segment.ErrDuplicateAuth, segment.ErrBothAuth,
	segment.ErrAddrFamily, segment.ErrSegmentTooLong, segment.ErrPacketTooLong, segment.ErrUnparsed,
}

// notSetUp is the error a type's methods give on a receiver that was never
// set up: a nil pointer of every type here, and a zero value of those
// marked zero (the zero Keyrings are ready to use).
var notSetUp = map[reflect.Type]struct {
	err  error
	zero bool
}{
	reflect.TypeFor[ao.Conn]():        {ao.ErrNotInitialized, true},
	reflect.TypeFor[ao.Listener]():    {ao.ErrNotInitialized, true},
	reflect.TypeFor[ao.TrafficKey]():  {ao.ErrNotInitialized, true},
	reflect.TypeFor[ao.Keyring]():     {ao.ErrNotInitialized, false},
	reflect.TypeFor[md5sig.Keyring](): {md5sig.ErrNotInitialized, false},
}

// TestMisuse calls every exported method of the engine's types on zero
// values and nil pointers, and every exported function, first with zero
// arguments (nil pointers, nil slices, zero structs), then with real ones
// where a segment, a packet or an address is asked for (a signed TCP-AO
// SYN): none may panic, and every error returned must be one of the
// packages' sentinels; on a receiver that was never set up (notSetUp),
// that one error.
func TestMisuse(t *testing.T) {
	values := []any{
		keys.AO{}, ao.Conn{}, ao.Counters{}, ao.DeleteOptions{}, ao.Endpoint{}, ao.ISNs{}, ao.Keyring{},
		ao.Listener{}, ao.MKT{}, ao.Option{}, ao.Policy{}, ao.TrafficKey{},
		keys.MD5{}, md5sig.Counters{}, md5sig.DeleteOptions{}, md5sig.Key{}, md5sig.Keyring{},
		sigpool.Backend(0), sigpool.Config{}, sigpool.ID(0), sigpool.Pool{}, sigpool.Request{},
		mac.Algorithm{}, mac.Context{}, mac.Key{},
		kdf.Input{}, kdf.Master{},
		segment.Auth{}, segment.Fields{}, segment.Flags(0), segment.IP{}, segment.Segment{}, segment.TCP(nil),
		scratch.Scratch{},
	}
	funcs := map[string]any{
		"ao.AppendOption": ao.AppendOption, "ao.ComputeSNE": ao.ComputeSNE, "ao.OptionSpace": ao.OptionSpace,
		"ao.NewKeyring": ao.NewKeyring, "ao.NewListener": ao.NewListener, "ao.ParseOption": ao.ParseOption,
		"md5sig.AppendOption": md5sig.AppendOption, "md5sig.NewKeyring": md5sig.NewKeyring,
		"sigpool.New": sigpool.New,
		"mac.Equal":   mac.Equal, "mac.Lookup": mac.Lookup, "mac.Names": mac.Names, "mac.Algorithms": mac.Algorithms,
		"kdf.ReduceCMACKey": kdf.ReduceCMACKey, "kdf.Extract": kdf.Extract,
		"segment.AppendIP": segment.AppendIP, "segment.AppendPacket": segment.AppendPacket,
		"segment.AppendPseudoHeader": segment.AppendPseudoHeader, "segment.AppendTCP": segment.AppendTCP,
		"segment.IPv4Checksum": segment.IPv4Checksum, "segment.Lengths": segment.Lengths,
		"segment.SetTCPChecksum": segment.SetTCPChecksum, "segment.TCPChecksum": segment.TCPChecksum,
		"segment.TCPOffset": segment.TCPOffset, "segment.ParsePacket": segment.ParsePacket,
		"segment.FromTCP": segment.FromTCP,
		"scratch.New":     scratch.New,
	}
	calls := 0
	for _, real := range []bool{false, true} {
		for _, v := range values {
			typ := reflect.TypeOf(v)
			// The zero value, a pointer to a zero value, and a nil pointer
			// (only for methods declared on the pointer: calling a value
			// method through a nil pointer is Go's own panic).
			for j, recv := range []reflect.Value{reflect.ValueOf(v), reflect.New(typ), reflect.Zero(reflect.PointerTo(typ))} {
				var want error
				if ns, ok := notSetUp[typ]; ok && (j == 2 || ns.zero) {
					want = ns.err
				}
				for i := range recv.NumMethod() {
					m := recv.Type().Method(i)
					if recv.Kind() == reflect.Pointer && recv.IsNil() {
						if _, onValue := typ.MethodByName(m.Name); onValue {
							continue
						}
					}
					name := fmt.Sprintf("(%v).%s", recv.Type(), m.Name)
					if recv.Kind() == reflect.Pointer && recv.IsNil() {
						name = fmt.Sprintf("(%v)(nil).%s", recv.Type(), m.Name)
					}
					w := want
					if m.Name == "Derive" && j != 2 {
						w = nil // a zero TrafficKey's setup call
					}
					call(t, name, recv.Method(i), real, w)
					calls++
				}
			}
		}
		for name, f := range funcs {
			call(t, name, reflect.ValueOf(f), real, nil)
			calls++
		}
	}
	t.Logf("%d methods and functions called with zero values and nils", calls)
}

// realArg returns a well-formed value for parameters of the types a
// careless caller passes real data in: a TCP-AO SYN as a segment or a
// whole packet, addresses, prefixes.
func realArg(typ reflect.Type) (reflect.Value, bool) {
	src, dst := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2")
	pkt, err := segment.AppendPacket(nil, segment.IP{Src: src, Dst: dst},
		segment.Fields{SrcPort: 40000, DstPort: 179, Seq: 1000, Flags: segment.SYN, Window: 65535,
			Options: [][]byte{ao.AppendOption(nil, 12)}}, []byte("x"))
	if err != nil {
		panic(err)
	}
	switch typ {
	case reflect.TypeFor[*segment.Segment]():
		seg, err := segment.ParsePacket(pkt)
		if err != nil {
			panic(err)
		}
		return reflect.ValueOf(&seg), true
	case reflect.TypeFor[[]byte]():
		return reflect.ValueOf(pkt), true
	case reflect.TypeFor[netip.Addr]():
		return reflect.ValueOf(src), true
	case reflect.TypeFor[netip.Prefix]():
		return reflect.ValueOf(netip.PrefixFrom(src, 32)), true
	case reflect.TypeFor[segment.IP]():
		return reflect.ValueOf(segment.IP{Src: src, Dst: dst}), true
	}
	return reflect.Value{}, false
}

// call calls f with the zero value of every parameter (with real ones
// where realArg has them, if real) and checks that it does not panic and
// that any error it returns is a sentinel, and want when want is not nil.
func call(t *testing.T, name string, f reflect.Value, real bool, want error) {
	t.Helper()
	ft := f.Type()
	n := ft.NumIn()
	if ft.IsVariadic() {
		n--
	}
	args := make([]reflect.Value, n)
	for i := range args {
		args[i] = reflect.Zero(ft.In(i))
		if v, ok := realArg(ft.In(i)); real && ok {
			args[i] = v
		}
	}
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("%s panics: %v", name, r)
		}
	}()
	for _, out := range f.Call(args) {
		if out.Type() != reflect.TypeFor[error]() || out.IsNil() {
			continue
		}
		err := out.Interface().(error)
		typed := false
		for _, s := range sentinels {
			typed = typed || errors.Is(err, s)
		}
		if !typed {
			t.Errorf("%s: untyped error %q", name, err)
		}
		if want != nil && !errors.Is(err, want) {
			t.Errorf("%s on a receiver never set up: %q, want %q", name, err, want)
		}
	}
}
