package reclaim_test

import (
	"fmt"

	"github.com/tcpsig/tcpsig/internal/reclaim"
)

// mkt stands for a keyring entry: the Guard sits next to the bytes it
// protects.
type mkt struct {
	guard  reclaim.Guard
	secret [16]byte
}

func Example() {
	k := &mkt{secret: [16]byte{'s', 'e', 'c', 'r', 'e', 't'}}

	// A reader on the data path pins the key while it computes a MAC.
	pin, ok := k.guard.Acquire()
	if ok {
		fmt.Println("reader sees", string(k.secret[:6]))
	}

	// The control plane deletes the key. It does not wait; the wipe is
	// deferred until the reader lets go.
	k.guard.Retire(func() { clear(k.secret[:]) })
	fmt.Println("after Retire:", string(k.secret[:6]))
	_, ok = k.guard.Acquire()
	fmt.Println("new readers pin it:", ok)

	k.guard.Release(pin) // the last pin: the wipe runs here
	fmt.Println("after the last Release:", k.secret[:6])
	// Output:
	// reader sees secret
	// after Retire: secret
	// new readers pin it: false
	// after the last Release: [0 0 0 0 0 0]
}
