package keyfile

import (
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"

	"github.com/tcpsig/tcpsig/keys"
)

// MaxSize is the largest keys file accepted, in bytes: room for tens of
// thousands of entries, and a bound on what a wrong path can make a
// program read.
const MaxSize = 4 << 20

// File is a parsed keys file.
type File struct {
	AO  []AO  // the "ao" entries, in file order
	MD5 []MD5 // the "md5" entries, in file order
	// AcceptTolerance is the file's "accept_tolerance": every entry's
	// Lifetime.Tolerance unless the entry gives its own.
	AcceptTolerance time.Duration
	// ClockSkew is the file's "clock_skew": how far its author assumes
	// the ends' clocks differ. It changes no key.
	ClockSkew time.Duration
}

// AO is one "ao" entry: a TCP-AO MKT.
type AO struct {
	Name   string  // the entry's "name"; "" when it has none
	Config keys.AO // MACLen is never 0: an absent or 0 maclen is 12 (16 for the draft's algorithms)
	// Text makes Marshal write the key as "text:…" (a password typed into
	// a router) when it is valid UTF-8; else, and by default, "hex:…".
	// Parse leaves it false.
	Text bool
}

// MD5 is one "md5" entry: a TCP-MD5 key.
type MD5 struct {
	Name   string // the entry's "name"; "" when it has none
	Config keys.MD5
	Text   bool // as AO's Text
}

// Label returns how messages name entry i of kind ("ao" or "md5"):
// ao[3], or ao[3] ("name") when it has a name; it is keys.Label, which
// the keyrings' AddAll errors use too.
func Label(kind string, i int, name string) string { return keys.Label(kind, i, name) }

// AOConfigs returns the "ao" entries' configurations and names, in file
// order, as ao.Keyring.AddAll takes them: ring.AddAll(f.AOConfigs()).
// The configurations share f's key bytes (a keyring copies them).
func (f *File) AOConfigs() (cfgs []keys.AO, names []string) {
	if f == nil {
		return nil, nil
	}
	for _, e := range f.AO {
		cfgs, names = append(cfgs, e.Config), append(names, e.Name)
	}
	return cfgs, names
}

// MD5Configs is AOConfigs for the "md5" entries, as md5sig.Keyring.AddAll
// takes them.
func (f *File) MD5Configs() (cfgs []keys.MD5, names []string) {
	if f == nil {
		return nil, nil
	}
	for _, e := range f.MD5 {
		cfgs, names = append(cfgs, e.Config), append(names, e.Name)
	}
	return cfgs, names
}

// Load reads the keys file at path. A file larger than MaxSize is refused
// before it is read. The bytes read are wiped before Load returns.
func Load(path string) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		st = nil // read it all the same, without a size hint
	}
	return load(f, st)
}

// LoadPrivate is Load for a process that acts on the file's keys, as
// tcpsig shim does: it refuses, with [CheckMode]'s errors ([ErrOwner],
// [ErrMode]), a file that another user owns or that group or others may
// read or write. It judges the file it opened, not the path a second
// time, before it reads a byte.
func LoadPrivate(path string) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if err := checkInfo(path, st); err != nil {
		return nil, err
	}
	return load(f, st)
}

// load reads the open file f, which st describes (nil: not known).
func load(f *os.File, st fs.FileInfo) (*File, error) {
	var size int64
	if st != nil && st.Mode().IsRegular() {
		if st.Size() > MaxSize {
			return nil, &Error{Err: ErrTooLarge, msg: fmt.Sprintf("%d bytes, more than the %d a keys file may have", st.Size(), MaxSize)}
		}
		size = st.Size()
	}
	return read(f, int(size))
}

// Read reads a keys file from r, reading at most MaxSize+1 bytes. The
// bytes read are wiped before Read returns.
func Read(r io.Reader) (*File, error) {
	if r == nil {
		return nil, ErrNilReader
	}
	return read(r, 0)
}

// read is Read with a hint of the size to expect.
func read(r io.Reader, size int) (*File, error) {
	b, err := readAll(r, size)
	defer clear(b)
	if err != nil {
		return nil, err
	}
	return Parse(b)
}

// readAll reads r to its end, or to MaxSize+1 bytes, into a buffer that
// starts at size and, when it must grow, wipes the one it outgrows (as
// io.ReadAll does not): the caller wipes the last one.
func readAll(r io.Reader, size int) ([]byte, error) {
	b := make([]byte, 0, min(max(size, 0), MaxSize)+512)
	for {
		if len(b) == cap(b) {
			nb := make([]byte, len(b), min(2*cap(b), MaxSize+1))
			copy(nb, b)
			clear(b)
			b = nb
		}
		n, err := r.Read(b[len(b):min(cap(b), MaxSize+1)])
		b = b[:len(b)+max(n, 0)]
		if err == io.EOF || len(b) > MaxSize {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}

// Parse parses and validates a keys file. It keeps no reference to b and
// does not change it (b is the caller's to wipe): each entry's key is a
// copy of its own, and the copies Parse makes on the way are wiped. An
// error never quotes a value that may be a key: it names the entry, the
// field and what was expected.
func Parse(b []byte) (*File, error) {
	if len(b) > MaxSize {
		return nil, &Error{Err: ErrTooLarge, msg: fmt.Sprintf("more than the %d bytes a keys file may have", MaxSize)}
	}
	if msg := notJSON(b); msg != "" {
		return nil, &Error{Err: ErrSyntax, msg: msg}
	}
	if err := json.Unmarshal(b, &discard{}); err != nil {
		return nil, syntaxError(b, err)
	}
	p := parser{src: b, f: &File{}, aoIDs: map[idKey][]int{}, md5Peers: map[scopeKey][]int{}}
	if err := p.file(); err != nil {
		p.f.Wipe()
		return nil, err
	}
	if len(p.f.AO) == 0 && len(p.f.MD5) == 0 {
		return nil, &Error{Err: ErrEmpty, msg: `no keys: want "ao" and/or "md5" entries`}
	}
	return p.f, nil
}

// Wipe zeroes the key of every entry of f, for a program done with f once
// keyrings or sockets hold their own copies (both copy what they are
// given). Go cannot promise that no other copy exists (a goroutine stack
// that was moved, a page swapped out), only that these are gone.
func (f *File) Wipe() {
	if f == nil {
		return
	}
	for i := range f.AO {
		clear(f.AO[i].Config.Key)
	}
	for i := range f.MD5 {
		clear(f.MD5[i].Config.Key)
	}
}
