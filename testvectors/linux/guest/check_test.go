//go:build linux

package main

import (
	"os"
	"testing"
)

// TestCommittedCaptures checks the committed captures against the committed
// manifest (structure only: every segment TCP, signed, KeyIDs and option
// lengths as configured, counts as stated). MAC verification of the same
// files is the ao package's job.
func TestCommittedCaptures(t *testing.T) {
	if _, err := os.Stat("../manifest.json"); err != nil {
		t.Skip("no testvectors/linux/manifest.json yet")
	}
	man, checks, err := checkDir("..")
	if err != nil {
		t.Fatal(err)
	}
	if len(checks) != len(man.Captures) || len(checks) == 0 {
		t.Fatalf("%d checks for %d captures", len(checks), len(man.Captures))
	}
	for _, c := range checks {
		for _, e := range c.errs {
			t.Errorf("%s: %s", c.name, e)
		}
	}
}
