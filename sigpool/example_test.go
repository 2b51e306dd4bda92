package sigpool_test

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/tcpsig/tcpsig/mac"
	"github.com/tcpsig/tcpsig/sigpool"
)

// Signing one message through the pool: Alloc the algorithm once per key,
// build the keyed template once per key, then Start, Key, Write, Finish,
// End per message, and Release when the key goes: with the last
// reference the algorithm's contexts are wiped and its ID is no longer
// held.
func Example() {
	alg, err := mac.Lookup("hmac(sha256)")
	if err != nil {
		panic(err)
	}
	pool, err := sigpool.New(sigpool.Config{Shards: 4}) // or sigpool.Default
	if err != nil {
		panic(err)
	}
	id, err := pool.Alloc(alg, 60) // a full TCP header fits in scratch
	if err != nil {
		panic(err)
	}

	raw := bytes.Repeat([]byte{0x0b}, 20) // RFC 4231 test case 2
	var key mac.Key
	if err := key.Init(alg, raw); err != nil {
		panic(err)
	}

	out := make([]byte, 0, mac.MaxSize)
	r, err := pool.Start(id)
	if err != nil {
		panic(err)
	}
	if err := r.Key(&key); err != nil {
		r.End()
		panic(err)
	}
	n := copy(r.Scratch, "Hi There") // e.g. a header copied into scratch
	r.MAC.Write(r.Scratch[:n])
	out = r.MAC.Finish(out[:0])
	r.End()
	fmt.Printf("%x\n", out)

	key.Wipe()
	if err := pool.Release(id); err != nil { // the last reference
		panic(err)
	}
	_, err = pool.Start(id)
	fmt.Println(errors.Is(err, sigpool.ErrNotAllocated))
	// Output:
	// b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7
	// true
}
