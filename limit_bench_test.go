//go:build unix

package tcpsig_test

import (
	"crypto/hmac"
	"hash"
	"reflect"
	"testing"
	"unsafe"

	"github.com/tcpsig/tcpsig/mac"
)

// limitMAC is the limit of issue 10, shown for scale: HMAC with the keyed
// inner and outer states restored by a plain copy of the hash's own
// memory. That needs unsafe on another package's unexported type, so the
// engine may not do it. It returns nil for CMAC, which keeps no keyed hash
// state (its limit is the safe floor), and for a hash whose state holds
// pointers. key must not be longer than a block. The function returns
// the MAC, in a buffer it reuses.
func limitMAC(tb testing.TB, a *mac.Algorithm, key, msg []byte) func() []byte {
	tb.Helper()
	newHash := bareHash[a.Name()]
	if a.IsCMAC() || newHash == nil {
		return nil
	}
	in, out := newHash(), newHash()
	t := reflect.TypeOf(in)
	if t.Kind() != reflect.Pointer || !pointerFree(t.Elem()) || len(key) > in.BlockSize() {
		return nil
	}
	ipad, opad := make([]byte, in.BlockSize()), make([]byte, in.BlockSize())
	copy(ipad, key)
	copy(opad, key)
	for i := range ipad {
		ipad[i] ^= 0x36
		opad[i] ^= 0x5c
	}
	in.Write(ipad)
	out.Write(opad)
	size := t.Elem().Size()
	inState := append([]byte(nil), hashMemory(in, size)...)
	outState := append([]byte(nil), hashMemory(out, size)...)
	w, wo := newHash(), newHash()
	wm, wom := hashMemory(w, size), hashMemory(wo, size)
	sum := make([]byte, 0, mac.MaxSize)
	return func() []byte {
		copy(wm, inState)
		w.Write(msg)
		sum = w.Sum(sum[:0])
		copy(wom, outState)
		wo.Write(sum)
		sum = wo.Sum(sum[:0])
		return sum
	}
}

// hashMemory is the memory of the value h points to, size bytes.
func hashMemory(h hash.Hash, size uintptr) []byte {
	p := (*[2]unsafe.Pointer)(unsafe.Pointer(&h))[1] // the interface's data word
	return unsafe.Slice((*byte)(p), size)
}

// pointerFree reports whether a value of type t holds no pointers, so
// that copying its bytes copies it.
func pointerFree(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Struct:
		for i := range t.NumField() {
			if !pointerFree(t.Field(i).Type) {
				return false
			}
		}
		return true
	case reflect.Array:
		return pointerFree(t.Elem())
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.String, reflect.Interface, reflect.Func, reflect.Chan, reflect.UnsafePointer:
		return false
	default:
		return true
	}
}

// TestLimitMAC checks that the limit computes crypto/hmac's MAC, for
// every algorithm it exists for, and that it exists for the SHA-1 and
// SHA-2 hashes the issue measured it for.
func TestLimitMAC(t *testing.T) {
	have := map[string]bool{}
	for _, a := range mac.Algorithms() {
		key, msg := bytesOf(a.Size(), 1), bytesOf(300, 2)
		lim := limitMAC(t, a, key, msg)
		if lim == nil {
			continue
		}
		have[a.Name()] = true
		h := hmac.New(bareHash[a.Name()], key)
		h.Write(msg)
		want := h.Sum(nil)
		for i := range 3 { // the restore must make each run the same
			if got := lim(); !hmac.Equal(got, want) {
				t.Errorf("%s run %d: limit %x, crypto/hmac %x", a, i, got, want)
			}
		}
	}
	t.Logf("a limit for %d algorithms: %v", len(have), have)
	for _, n := range []string{"hmac(sha1)", "hmac(sha256)", "hmac(sha512)", "hmac(md5)"} {
		if !have[n] {
			t.Errorf("%s: no limit (its state holds pointers?)", n)
		}
	}
}
