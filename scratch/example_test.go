package scratch_test

import (
	"fmt"

	"github.com/tcpsig/tcpsig/scratch"
)

// Two users reserve what they need; every shard's buffer is as large as
// the largest reservation, and a buffer held across a growth stays valid.
func Example() {
	s := scratch.New(4)
	s.Reserve(60) // TCP-AO: a full TCP header fits
	held := s.Buf(0)
	s.Reserve(40) // smaller: no change
	s.Reserve(96)
	fmt.Println(s.Size(), len(s.Buf(0)), len(s.Buf(3)), len(held))
	// Output:
	// 96 96 96 60
}
