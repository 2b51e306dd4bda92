package linux_test

import (
	"fmt"

	"github.com/tcpsig/tcpsig/segment"
	"github.com/tcpsig/tcpsig/testvectors/linux"
)

// The RSTs a Linux listener signed, and the ACKs they answer.
func ExampleListenResets() {
	rsts, err := linux.ListenResets()
	if err != nil {
		panic(err)
	}
	for _, r := range rsts {
		ack, _ := segment.ParsePacket(r.ACK)
		rst, _ := segment.ParsePacket(r.RST)
		o := rst.Header()[rst.Auth().AO:]
		fmt.Printf("%s: RST seq = ACK ack: %v, KeyID %d RNextKeyID %d\n", r.Alg, rst.Header().Seq() == ack.Header().Ack(), o[2], o[3])
	}
	// Output:
	// hmac(sha1): RST seq = ACK ack: true, KeyID 7 RNextKeyID 7
	// cmac(aes128): RST seq = ACK ack: true, KeyID 7 RNextKeyID 7
	// hmac(sha3-512): RST seq = ACK ack: true, KeyID 7 RNextKeyID 7
}
