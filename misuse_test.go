package tcpsig_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"net/netip"
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/tcpsig/tcpsig/ao"
	"github.com/tcpsig/tcpsig/kdf"
	"github.com/tcpsig/tcpsig/keyfile"
	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/linuxsock"
	"github.com/tcpsig/tcpsig/mac"
	"github.com/tcpsig/tcpsig/md5sig"
	"github.com/tcpsig/tcpsig/packetauth"
	"github.com/tcpsig/tcpsig/pcapverify"
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
	segment.ErrNotICMP, ao.ErrISN, ao.ErrConnClosed, ao.ErrReplacement, md5sig.ErrDuplicate, sigpool.ErrShards,
	sigpool.ErrNotLeased, sigpool.ErrScratchSize, scratch.ErrTooLarge, mac.ErrFinished, keys.ErrNoCause,
	keyfile.ErrSyntax, keyfile.ErrUnknownField, keyfile.ErrMissing, keyfile.ErrValue, keyfile.ErrDuplicate,
	keyfile.ErrEmpty, keyfile.ErrTooLarge, keyfile.ErrNilReader, keyfile.ErrMode, keyfile.ErrOwner,
	packetauth.ErrUnsigned, packetauth.ErrNoConn, packetauth.ErrFragment, packetauth.ErrNoRoom,
	packetauth.ErrOptions, packetauth.ErrFull, packetauth.ErrClosed, packetauth.ErrConfig, packetauth.ErrRevoked,
	packetauth.ErrICMP, packetauth.ErrNotCovered,
	pcapverify.ErrNotSetUp, pcapverify.ErrCapture,
	linuxsock.ErrInvalid, errors.ErrUnsupported, // linuxsock's ErrNoAO, ErrNoMD5, ErrMPTCP, ... wrap it
	fs.ErrNotExist, io.EOF, // keyfile.Load(""), the end of a capture
}

// notSetUp is the error a type's methods give on a receiver that was never
// set up: a nil pointer of every type here, and a zero value of those
// marked zero (the zero Keyrings are ready to use).
var notSetUp = map[reflect.Type]struct {
	err  error
	zero bool
}{
	reflect.TypeFor[ao.Conn]():             {ao.ErrNotInitialized, true},
	reflect.TypeFor[ao.Listener]():         {ao.ErrNotInitialized, true},
	reflect.TypeFor[ao.TrafficKey]():       {ao.ErrNotInitialized, true},
	reflect.TypeFor[ao.Keyring]():          {ao.ErrNotInitialized, false},
	reflect.TypeFor[md5sig.Keyring]():      {md5sig.ErrNotInitialized, false},
	reflect.TypeFor[packetauth.Layer]():    {packetauth.ErrNotSetUp, true},
	reflect.TypeFor[pcapverify.Verifier](): {pcapverify.ErrNotSetUp, true},
	reflect.TypeFor[pcapverify.Capture]():  {pcapverify.ErrNotSetUp, true},
}

// TestMisuse calls every exported method of the engine's types on zero
// values and nil pointers, and every exported function, first with zero
// arguments (nil pointers, nil slices, zero structs), then with real ones
// where a segment, a packet or an address is asked for (a signed TCP-AO
// SYN), then with those and every integer out of range (see passes): none
// may panic, and every error returned must be one of the packages'
// sentinels; on a receiver that was never set up (notSetUp), that one
// error.
func TestMisuse(t *testing.T) {
	values := []any{
		keys.AO{}, ao.Conn{}, ao.Counters{}, ao.DeleteOptions{}, ao.Endpoint{}, ao.ISNs{}, ao.Keyring{},
		ao.Listener{}, ao.MKT{}, ao.Option{}, ao.Policy{}, ao.TrafficKey{},
		keys.MD5{}, keys.EntryError{}, md5sig.Counters{}, md5sig.DeleteOptions{}, md5sig.Key{}, md5sig.Keyring{},
		sigpool.Backend(0), sigpool.Config{}, sigpool.ID(0), sigpool.Pool{}, sigpool.Request{},
		mac.Algorithm{}, mac.Context{}, mac.Key{},
		kdf.Input{}, kdf.Master{},
		segment.Auth{}, segment.Fields{}, segment.Flags(0), segment.IP{}, segment.Segment{}, segment.TCP(nil),
		segment.ICMP{},
		scratch.Scratch{},
		keyfile.AO{}, keyfile.MD5{}, keyfile.Error{}, keyfile.File{},
		packetauth.Layer{}, packetauth.Config{}, packetauth.ConnInfo{}, packetauth.Counters{}, packetauth.Drops{},
		packetauth.Kind(0), packetauth.State(0),
		pcapverify.Capture{}, pcapverify.DirSummary{}, pcapverify.FlowSummary{}, pcapverify.Keys{},
		pcapverify.Kind(0), pcapverify.Options{}, pcapverify.Report{}, pcapverify.Result{}, pcapverify.Totals{},
		pcapverify.Verdict(0), pcapverify.VerdictCounts{}, pcapverify.Verifier{},
		linuxsock.AOCounters{}, linuxsock.AODelete{}, linuxsock.AOInfo{}, linuxsock.AOKey{}, linuxsock.AORepair{},
		linuxsock.Keys{}, linuxsock.Select(0),
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
		"segment.FromTCP": segment.FromTCP, "segment.PacketAddrs": segment.PacketAddrs,
		"segment.ParseICMP": segment.ParseICMP,
		"scratch.New":       scratch.New,
		"keys.Label":        keys.Label,
		"keyfile.CheckMode": keyfile.CheckMode, "keyfile.Label": keyfile.Label, "keyfile.Load": keyfile.Load,
		"keyfile.LoadPrivate": keyfile.LoadPrivate, "keyfile.Parse": keyfile.Parse, "keyfile.Read": keyfile.Read,
		"packetauth.New":  packetauth.New,
		"pcapverify.Open": pcapverify.Open, "pcapverify.LoadKeys": pcapverify.LoadKeys,
		"pcapverify.Verify": pcapverify.Verify, "pcapverify.NewVerifier": pcapverify.NewVerifier,
		"linuxsock.AddAOKey": linuxsock.AddAOKey, "linuxsock.DeleteAOKey": linuxsock.DeleteAOKey,
		"linuxsock.AOKeys": linuxsock.AOKeys, "linuxsock.ReadAOInfo": linuxsock.ReadAOInfo,
		"linuxsock.SelectAOKeys": linuxsock.SelectAOKeys, "linuxsock.SetAOFlags": linuxsock.SetAOFlags,
		"linuxsock.SetAOCounters": linuxsock.SetAOCounters, "linuxsock.ReadAORepair": linuxsock.ReadAORepair,
		"linuxsock.SetAORepair": linuxsock.SetAORepair, "linuxsock.AddMD5Key": linuxsock.AddMD5Key,
		"linuxsock.DeleteMD5Key": linuxsock.DeleteMD5Key, "linuxsock.Install": linuxsock.Install,
		"linuxsock.FileKeys": linuxsock.FileKeys, "linuxsock.Raw": linuxsock.Raw, "linuxsock.Control": linuxsock.Control,
		"linuxsock.ListenConfig": linuxsock.ListenConfig, "linuxsock.Dialer": linuxsock.Dialer,
	}
	calls := 0
	for p := range passes {
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
					call(t, name, recv.Method(i), p, w)
					calls++
				}
			}
		}
		for name, f := range funcs {
			call(t, name, reflect.ValueOf(f), p, nil)
			calls++
		}
	}
	t.Logf("%d methods and functions called with zero values and nils", calls)
}

// pass says what a call's arguments are: the zero value of each
// parameter, or a well-formed one where realArg has one, with every
// integer parameter in range (zero) or out of it.
type pass int

const (
	zeroArgs pass = iota // the zero value of every parameter
	realArgs             // realArg's where it has one, else the zero value
	negInts              // realArgs, every integer -1 (an unsigned one its largest value)
	maxInts              // realArgs, every integer its type's largest value
	minInts              // realArgs, every signed integer its type's smallest value (an unsigned one 1)
	passes
)

// arg returns the argument of type typ for pass p.
func arg(typ reflect.Type, p pass) reflect.Value {
	v := reflect.New(typ).Elem()
	if p >= realArgs {
		if r, ok := realArg(typ); ok {
			return r
		}
	}
	if p < negInts {
		return v
	}
	setInts(v, p)
	return v
}

// setInts sets v, an integer or a struct's integer fields (a Config's
// sizes and counts), out of range as pass p says.
func setInts(v reflect.Value, p pass) {
	typ := v.Type()
	switch typ.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			if typ.Field(i).IsExported() {
				setInts(v.Field(i), p)
			}
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		bits := typ.Bits()
		switch p {
		case negInts:
			v.SetInt(-1)
		case maxInts:
			v.SetInt(math.MaxInt64 >> (64 - bits))
		case minInts:
			v.SetInt(math.MinInt64 >> (64 - bits))
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		if p == minInts {
			v.SetUint(1)
		} else {
			v.SetUint(math.MaxUint64 >> (64 - typ.Bits()))
		}
	}
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
	case reflect.TypeFor[*mac.Algorithm]():
		alg, err := mac.Lookup("hmac(sha1)")
		if err != nil {
			panic(err)
		}
		return reflect.ValueOf(alg), true
	}
	return reflect.Value{}, false
}

// call calls f with the arguments of pass p and checks that it does not
// panic and that any error it returns is a sentinel, and want when want
// is not nil.
func call(t *testing.T, name string, f reflect.Value, p pass, want error) {
	t.Helper()
	ft := f.Type()
	n := ft.NumIn()
	if ft.IsVariadic() {
		n--
	}
	args := make([]reflect.Value, n)
	for i := range args {
		args[i] = arg(ft.In(i), p)
	}
	check(t, fmt.Sprintf("%s (pass %d)", name, p), func() []reflect.Value { return f.Call(args) }, want)
}

// check runs f and checks that it does not panic and that any error it
// returns is a sentinel, and want when want is not nil.
func check(t *testing.T, name string, f func() []reflect.Value, want error) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("%s panics: %v", name, r)
		}
	}()
	for _, out := range f() {
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

// TestMisuseReady calls every exported method of set-up values (a keyring
// with a key, a pool with an algorithm, a layer, a verifier, a parsed
// segment, ...), each on a fresh one, with the arguments of every pass:
// zero ones, real ones, and integers out of range. None may panic, and
// every error must be a sentinel.
func TestMisuseReady(t *testing.T) {
	ready := readyValues(t)
	calls := 0
	for p := range passes {
		for typ, mk := range ready {
			n := reflect.ValueOf(mk()).NumMethod()
			for i := range n {
				recv := reflect.ValueOf(mk())
				call(t, fmt.Sprintf("(%s).%s", typ, recv.Type().Method(i).Name), recv.Method(i), p, nil)
				calls++
			}
		}
	}
	t.Logf("%d methods of set-up values called", calls)
}

// TestMisusePairs calls every ordered pair of exported methods on a fresh
// set-up value, with the arguments of every pass: a method after Close,
// Wipe, End, Release, Delete or itself (End twice, Close twice) must not
// panic, nor unlock what it did not lock (a fatal error no recover
// catches), and every error must be a sentinel.
func TestMisusePairs(t *testing.T) {
	ready := readyValues(t)
	calls := 0
	for p := range passes {
		for typ, mk := range ready {
			n := reflect.ValueOf(mk()).NumMethod()
			for i := range n {
				for j := range n {
					recv := reflect.ValueOf(mk())
					first := recv.Type().Method(i).Name
					call(t, fmt.Sprintf("(%s).%s", typ, first), recv.Method(i), p, nil)
					call(t, fmt.Sprintf("(%s).%s after %s", typ, recv.Type().Method(j).Name, first), recv.Method(j), p, nil)
					calls++
				}
			}
		}
	}
	t.Logf("%d pairs of calls", calls)
}

// readyValues returns, by type, functions that make set-up values: a
// keyring with a key, a pool with an algorithm, a layer, a verifier, a
// parsed segment, ....
func readyValues(t *testing.T) map[string]func() any {
	t.Helper()
	alg, err := mac.Lookup("hmac(sha1)")
	if err != nil {
		t.Fatal(err)
	}
	peer := netip.MustParsePrefix("192.0.2.0/24")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	demo, err := os.ReadFile("cmd/tcpsig/testdata/demo.pcap")
	must(err)
	return map[string]func() any{
		"md5sig.Keyring": func() any {
			r := md5sig.NewKeyring(nil)
			_, err := r.Add(keys.MD5{Peer: peer, Key: []byte("k")})
			must(err)
			return r
		},
		"md5sig.Key": func() any {
			k, err := md5sig.NewKeyring(nil).Add(keys.MD5{Peer: peer, Key: []byte("k")})
			must(err)
			return k
		},
		"sigpool.Pool": func() any {
			p, err := sigpool.New(sigpool.Config{Shards: 2})
			must(err)
			_, err = p.Alloc(alg, 64)
			must(err)
			return p
		},
		"sigpool.Request": func() any {
			p, err := sigpool.New(sigpool.Config{Shards: 2})
			must(err)
			id, err := p.Alloc(alg, 64)
			must(err)
			r, err := p.Start(id)
			must(err)
			return r
		},
		"scratch.Scratch": func() any { return scratch.New(2) },
		"kdf.Master": func() any {
			var m kdf.Master
			must(m.Init(alg, []byte("master key")))
			return &m
		},
		"kdf.Input":     func() any { return &kdf.Input{} },
		"mac.Algorithm": func() any { return alg },
		"mac.Context":   func() any { return alg.NewContext() },
		"mac.Key": func() any {
			var k mac.Key
			must(k.Init(alg, []byte("k")))
			return &k
		},
		"segment.Segment": func() any { v, _ := realArg(reflect.TypeFor[*segment.Segment]()); return v.Interface() },
		"segment.TCP": func() any {
			v, _ := realArg(reflect.TypeFor[*segment.Segment]())
			return v.Interface().(*segment.Segment).Header()
		},
		"keyfile.File": func() any {
			f, err := keyfile.Parse([]byte(`{"md5": [{"key": "text:k", "peer": "192.0.2.0/24"}]}`))
			must(err)
			return f
		},
		"packetauth.Layer": func() any {
			r := md5sig.NewKeyring(nil)
			_, err := r.Add(keys.MD5{Peer: peer, Key: []byte("k")})
			must(err)
			l, err := packetauth.New(packetauth.Config{MD5: r, AO: ao.NewKeyring(nil)})
			must(err)
			return l
		},
		"pcapverify.Keys": func() any { k, _ := demoVerifier(t); return k },
		"pcapverify.Verifier": func() any {
			k, _ := demoVerifier(t)
			v, err := pcapverify.NewVerifier(k, nil, nil)
			must(err)
			return v
		},
		"pcapverify.Capture": func() any {
			c, err := pcapverify.Open(bytes.NewReader(demo))
			must(err)
			return c
		},
		"ao.Keyring": func() any { r, _ := aoReady(t); return r },
		"ao.MKT":     func() any { _, m := aoReady(t); return m },
		"ao.Listener": func() any {
			r, _ := aoReady(t)
			return ao.NewListener(r, ao.Policy{}, 0)
		},
		"ao.Conn": func() any {
			r, _ := aoReady(t)
			var c ao.Conn
			must(c.Init(r, ao.Endpoint{Local: netip.MustParseAddrPort("192.0.2.2:179"),
				Remote: netip.MustParseAddrPort("192.0.2.1:40000"), LocalISN: 1, Established: true, RemoteISN: 999,
				CurrentSendID: 1, RNextRecvID: 1}, ao.Policy{}))
			return &c
		},
		"pcapverify.Totals":  func() any { return &pcapverify.Totals{} },
		"pcapverify.Options": func() any { return &pcapverify.Options{} },
	}
}

// demoVerifier returns the keys of the built-in sample capture.
func demoVerifier(t *testing.T) (*pcapverify.Keys, *keyfile.File) {
	t.Helper()
	kf, err := keyfile.Load("cmd/tcpsig/testdata/demo.keys.json")
	if err != nil {
		t.Fatal(err)
	}
	k, err := pcapverify.LoadKeys(kf)
	if err != nil {
		t.Fatal(err)
	}
	return k, kf
}

// aoReady returns a TCP-AO keyring with one MKT for 192.0.2.0/24.
func aoReady(t *testing.T) (*ao.Keyring, *ao.MKT) {
	t.Helper()
	r := ao.NewKeyring(nil)
	m, err := r.Add(keys.AO{Peer: netip.MustParsePrefix("192.0.2.0/24"), Algorithm: "hmac(sha1)", Key: []byte("k"),
		SendID: 1, RecvID: 1})
	if err != nil {
		t.Fatal(err)
	}
	return r, m
}

// TestMisuseConfigs gives the constructors and setup calls configurations
// with one integer field at a time out of range (-1, its type's largest
// and smallest value), the other fields well-formed: none may panic, and
// every error must be a sentinel. (TestMisuse sets every field at once,
// where the first field checked hides the others.)
func TestMisuseConfigs(t *testing.T) {
	peer := netip.MustParsePrefix("192.0.2.0/24")
	aoCfg := keys.AO{Peer: peer, Algorithm: "hmac(sha1)", Key: []byte("k"), SendID: 1, RecvID: 1}
	md5Cfg := keys.MD5{Peer: peer, Key: []byte("k")}
	md5Ring := func() *md5sig.Keyring {
		r := md5sig.NewKeyring(nil)
		if _, err := r.Add(md5Cfg); err != nil {
			t.Fatal(err)
		}
		return r
	}
	demoKeys, _ := demoVerifier(t)
	demo, err := os.ReadFile("cmd/tcpsig/testdata/demo.pcap")
	if err != nil {
		t.Fatal(err)
	}
	src, dst := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2")
	cases := []struct {
		name string
		cfg  any
		use  func(cfg any) []reflect.Value
	}{
		{"sigpool.New", sigpool.Config{Shards: 2}, func(c any) []reflect.Value {
			return reflect.ValueOf(sigpool.New).Call([]reflect.Value{reflect.ValueOf(c)})
		}},
		{"packetauth.New", packetauth.Config{MD5: md5Ring(), Idle: time.Minute, TimeWait: time.Second, MaxConns: 8},
			func(c any) []reflect.Value {
				return reflect.ValueOf(packetauth.New).Call([]reflect.Value{reflect.ValueOf(c)})
			}},
		{"pcapverify.Verify", pcapverify.Options{MaxFlows: 8}, func(c any) []reflect.Value {
			o := c.(pcapverify.Options)
			_, err := pcapverify.Verify(bytes.NewReader(demo), demoKeys, &o, nil)
			return []reflect.Value{reflect.ValueOf(&err).Elem()}
		}},
		{"keys.AO.Validate", aoCfg, func(c any) []reflect.Value {
			_, err := c.(keys.AO).Validate()
			return []reflect.Value{reflect.ValueOf(&err).Elem()}
		}},
		{"ao.Keyring.Add", aoCfg, func(c any) []reflect.Value {
			_, err := ao.NewKeyring(nil).Add(c.(keys.AO))
			return []reflect.Value{reflect.ValueOf(&err).Elem()}
		}},
		{"md5sig.Keyring.Add", md5Cfg, func(c any) []reflect.Value {
			_, err := md5sig.NewKeyring(nil).Add(c.(keys.MD5))
			return []reflect.Value{reflect.ValueOf(&err).Elem()}
		}},
		{"ao.Conn.Init", ao.Endpoint{Local: netip.AddrPortFrom(dst, 179), Remote: netip.AddrPortFrom(src, 40000),
			LocalISN: 1, Established: true, RemoteISN: 2, CurrentSendID: 1, RNextRecvID: 1}, func(c any) []reflect.Value {
			r, _ := aoReady(t)
			var conn ao.Conn
			err := conn.Init(r, c.(ao.Endpoint), ao.Policy{})
			return []reflect.Value{reflect.ValueOf(&err).Elem()}
		}},
		{"ao.Policy", ao.Policy{}, func(c any) []reflect.Value {
			r, _ := aoReady(t)
			var conn ao.Conn
			err := conn.Init(r, ao.Endpoint{Local: netip.AddrPortFrom(dst, 179), Remote: netip.AddrPortFrom(src, 40000),
				CurrentSendID: 1, RNextRecvID: 1}, c.(ao.Policy))
			return []reflect.Value{reflect.ValueOf(&err).Elem()}
		}},
		{"segment.AppendPacket", segment.Fields{SrcPort: 1, DstPort: 2, Flags: segment.SYN}, func(c any) []reflect.Value {
			_, err := segment.AppendPacket(nil, segment.IP{Src: src, Dst: dst}, c.(segment.Fields), []byte("x"))
			return []reflect.Value{reflect.ValueOf(&err).Elem()}
		}},
		{"segment.AppendIP", segment.IP{Src: src, Dst: dst}, func(c any) []reflect.Value {
			_, err := segment.AppendIP(nil, c.(segment.IP), 20)
			return []reflect.Value{reflect.ValueOf(&err).Elem()}
		}},
	}
	calls := 0
	for _, tc := range cases {
		v := reflect.ValueOf(tc.cfg)
		for i := range v.NumField() {
			if !v.Type().Field(i).IsExported() || !isInt(v.Field(i).Kind()) {
				continue
			}
			for p := negInts; p < passes; p++ {
				c := reflect.New(v.Type()).Elem()
				c.Set(v)
				setInts(c.Field(i), p)
				name := fmt.Sprintf("%s with %s=%v", tc.name, v.Type().Field(i).Name, c.Field(i))
				check(t, name, func() []reflect.Value { return tc.use(c.Interface()) }, nil)
				calls++
			}
		}
	}
	t.Logf("%d calls", calls)
}

// isInt reports whether k is an integer kind.
func isInt(k reflect.Kind) bool {
	return k >= reflect.Int && k <= reflect.Uintptr
}
