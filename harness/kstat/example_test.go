//go:build linux

package kstat_test

import (
	"fmt"
	"log"

	"github.com/tcpsig/tcpsig/harness/kstat"
)

// Read the namespace's TCP-MD5 counters before and after a test step.
func Example() {
	before, err := kstat.ReadMD5()
	if err != nil {
		log.Fatal(err)
	}
	after, err := kstat.ReadMD5()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(after.Failure >= before.Failure)
	// Output: true
}
