package ao

import (
	"bytes"
	"net/netip"
	"testing"
	"unsafe"

	"github.com/tcpsig/tcpsig/internal/cacheline"
	"github.com/tcpsig/tcpsig/kdf"
)

// TestMKTLayout: newMKT's allocation is a whole number of lines, and the
// MKT's counters start a line after every field signers read (countersPad
// and mktTail follow the fields).
func TestMKTLayout(t *testing.T) {
	var a mktAlloc
	if n := unsafe.Sizeof(a); n%cacheline.Size != 0 {
		t.Errorf("mktAlloc is %d bytes, not a whole number of %d-byte lines: set mktTail", n, cacheline.Size)
	}
	good := unsafe.Offsetof(a.m) + unsafe.Offsetof(a.m.good)
	if good%cacheline.Size != 0 {
		t.Errorf("the counters are at %d in mktAlloc, not at the start of a line: set countersPad", good)
	}
	if last := unsafe.Offsetof(a.m) + unsafe.Offsetof(a.m.added) + unsafe.Sizeof(a.m.added); last > good || good-last >= cacheline.Size {
		t.Errorf("the MKT's fields end at %d, the counters start at %d: countersPad is more than a line's fill", last, good)
	}
}

// keyBytes returns the bytes that follow m in its allocation, where
// newMKT keeps a short master key until its template is made.
func keyBytes(m *MKT) []byte {
	return unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(m), unsafe.Sizeof(*m))), kdf.ShortKeyLen)
}

// TestMasterKeyBytesWiped: the master key's bytes, kept in the MKT's own
// allocation, are cleared when its template is made and when the MKT is
// deleted before that.
func TestMasterKeyBytesWiped(t *testing.T) {
	r := NewKeyring(nil)
	c := cfg4("192.0.2.1/32", 1, 2)
	idle, derived := mustAdd(t, r, c), mustAdd(t, r, cfg4("192.0.2.2/32", 1, 2))
	if !bytes.HasPrefix(keyBytes(idle), c.Key) {
		t.Fatalf("the key is not in the MKT's allocation: %x", keyBytes(idle))
	}
	zero := make([]byte, kdf.ShortKeyLen)
	in := kdf.Input{Src: netip.MustParseAddr("192.0.2.9"), Dst: netip.MustParseAddr("192.0.2.2"), SrcPort: 179, DstPort: 4000, SrcISN: 1}
	if _, err := derived.master.Derive(derived.alg.NewContext(), make([]byte, kdf.MaxInputLen), &in, nil); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(keyBytes(derived), zero) {
		t.Fatal("the template's making left the key's bytes")
	}
	if err := r.Delete(idle, DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(keyBytes(idle), zero) || !masterWiped(idle) {
		t.Fatal("a delete left the key's bytes")
	}
}
