package mac_test

import (
	"fmt"

	"github.com/tcpsig/tcpsig/mac"
)

// A keyed template is built once per key and loaded into working
// contexts without re-running the key schedule.
func Example() {
	alg, err := mac.Lookup("HMAC-SHA-1-96") // RFC 5926 name for hmac(sha1)
	if err != nil {
		panic(err)
	}
	var key mac.Key
	if err := key.Init(alg, []byte("Jefe")); err != nil {
		panic(err)
	}
	ctx := alg.NewContext()
	ctx.Start(&key)
	ctx.Write([]byte("what do ya want for nothing?"))
	sum := ctx.Finish(make([]byte, 0, mac.MaxSize))
	fmt.Printf("%s %x\n", alg, sum[:12]) // RFC 2202 test case 2, truncated to 96 bits
	fmt.Println(mac.Equal(sum[:12], sum[:12]), key.String())
	// Output:
	// hmac(sha1) effcdf6ae5eb2fa2d27416d5
	// true mac.Key(hmac(sha1), [redacted])
}
