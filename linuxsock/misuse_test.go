package linuxsock

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"net"
	"net/netip"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/tcpsig/tcpsig/keys"
)

// noConn is a Socket whose SyscallConn returns (nil, nil).
type noConn struct{}

func (noConn) SyscallConn() (syscall.RawConn, error) { return nil, nil }

// nilConn is a Socket whose SyscallConn returns a nil *rawConn.
type nilConn struct{}

func (nilConn) SyscallConn() (syscall.RawConn, error) { return (*rawConn)(nil), nil }

// rawConn is a RawConn whose methods dereference it; idleConn's Control
// returns nil without running the call.
type rawConn struct{ fd uintptr }

func (r *rawConn) Control(f func(uintptr)) error         { f(r.fd); return nil }
func (r *rawConn) Read(f func(uintptr) bool) error       { f(r.fd); return nil }
func (r *rawConn) Write(f func(uintptr) bool) error      { f(r.fd); return nil }
func (r *rawConn) SyscallConn() (syscall.RawConn, error) { return r, nil }

type idleConn struct{}

func (idleConn) Control(func(uintptr)) error    { return nil }
func (idleConn) Read(func(uintptr) bool) error  { return nil }
func (idleConn) Write(func(uintptr) bool) error { return nil }

// TestBrokenSockets calls every exported function of the package that
// takes a socket with sockets a careless caller may hand over: nil, a nil
// *net.TCPConn, one whose SyscallConn returns (nil, nil) or a nil
// pointer, one whose RawConn never runs the call, and Raw of each. Each
// call is ErrInvalid on Linux (ErrUnsupported elsewhere): never a panic,
// never a nil error for keys that were not installed. The table must name
// every exported function of the package.
func TestBrokenSockets(t *testing.T) {
	ao := keys.AO{Peer: netip.MustParsePrefix("192.0.2.1/32"), Algorithm: "hmac(sha1)", Key: []byte("k"), SendID: 1, RecvID: 1}
	md5 := keys.MD5{Peer: netip.MustParsePrefix("192.0.2.1/32"), Key: []byte("k")}
	both := Keys{AO: []keys.AO{ao}, MD5: []keys.MD5{md5}}
	onSocket := map[string]func(Socket) error{
		"AddAOKey":      func(s Socket) error { return AddAOKey(s, ao, Current|RNext) },
		"DeleteAOKey":   func(s Socket) error { return DeleteAOKey(s, ao, AODelete{}) },
		"AOKeys":        func(s Socket) error { _, err := AOKeys(s); return err },
		"ReadAOInfo":    func(s Socket) error { _, err := ReadAOInfo(s); return err },
		"SelectAOKeys":  func(s Socket) error { return SelectAOKeys(s, Current|RNext, 1, 1) },
		"SetAOFlags":    func(s Socket) error { return SetAOFlags(s, true, false) },
		"SetAOCounters": func(s Socket) error { return SetAOCounters(s, AOCounters{}) },
		"ReadAORepair":  func(s Socket) error { _, err := ReadAORepair(s); return err },
		"SetAORepair":   func(s Socket) error { return SetAORepair(s, AORepair{}) },
		"AddMD5Key":     func(s Socket) error { return AddMD5Key(s, md5) },
		"DeleteMD5Key":  func(s Socket) error { return DeleteMD5Key(s, md5) },
		"Install":       func(s Socket) error { return Install(s, both) },
	}
	// The functions that hand a RawConn to a Control function.
	onRaw := map[string]func(syscall.RawConn) error{
		"Control":      func(c syscall.RawConn) error { return Control(both)("tcp", "192.0.2.1:179", c) },
		"ListenConfig": func(c syscall.RawConn) error { return ListenConfig(both).Control("tcp", "[::]:179", c) },
		"Dialer":       func(c syscall.RawConn) error { return Dialer(both).Control("tcp4", "192.0.2.1:179", c) },
		"Raw": func(c syscall.RawConn) error {
			_, err := AOKeys(Raw(c))
			return err
		},
	}
	// Those that take neither (ProbeAO and ProbeMD5 open a socket of
	// their own; FileKeys of nil is empty keys).
	other := map[string]bool{"ProbeAO": true, "ProbeMD5": true, "FileKeys": true}
	if k := FileKeys(nil); k.AO != nil || k.MD5 != nil {
		t.Errorf("FileKeys(nil) = %v", k)
	}
	for _, name := range exportedFuncs(t) {
		if onSocket[name] == nil && onRaw[name] == nil && !other[name] {
			t.Errorf("%s is not in the table", name)
		}
	}

	var tcp *net.TCPConn
	sockets := map[string]Socket{
		"nil": nil, "(*net.TCPConn)(nil)": tcp, "SyscallConn (nil, nil)": noConn{},
		"SyscallConn nil *RawConn": nilConn{}, "Control never runs": &rawSocket{idleConn{}},
		"Raw(nil)": Raw(nil), "Raw(nil *RawConn)": Raw((*rawConn)(nil)), "Raw(idle)": Raw(idleConn{}),
	}
	raws := map[string]syscall.RawConn{"nil": nil, "nil *RawConn": (*rawConn)(nil), "idle": idleConn{}}
	want := ErrInvalid
	if runtime.GOOS != "linux" {
		want = errors.ErrUnsupported
	}
	check := func(what string, call func() error) {
		t.Helper()
		defer func() {
			if r := recover(); r != nil {
				t.Errorf("%s panics: %v", what, r)
			}
		}()
		if err := call(); !errors.Is(err, want) {
			t.Errorf("%s: %v, want %v", what, err, want)
		}
	}
	calls := 0
	for fn, call := range onSocket {
		for sock, s := range sockets {
			check(fn+" on "+sock, func() error { return call(s) })
			calls++
		}
	}
	for fn, call := range onRaw {
		for raw, c := range raws {
			check(fn+" on RawConn "+raw, func() error { return call(c) })
			calls++
		}
	}
	t.Logf("%d calls", calls)
}

// exportedFuncs lists the package's exported functions (not methods),
// from its source files for every operating system.
func exportedFuncs(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		// A test binary run away from its sources (the qemu lab runs
		// this package's under a kernel with TCP-AO): go test in the
		// clone checks the table.
		t.Skip("the package's sources are not in the working directory: the table of exported functions is checked by go test in the clone")
	}
	seen := map[string]bool{}
	var names []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range af.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && fd.Name.IsExported() && !seen[fd.Name.Name] {
				seen[fd.Name.Name] = true
				names = append(names, fd.Name.Name)
			}
		}
	}
	if len(names) < 15 {
		t.Fatalf("found only %d exported functions: %v", len(names), names)
	}
	return names
}
