package cacheline

import "testing"

// TestAlign checks the run-time unit is a power of two no smaller than
// the fixed one.
func TestAlign(t *testing.T) {
	a := Align()
	if a < Size || a&(a-1) != 0 {
		t.Fatalf("Align() = %d, want a power of two >= %d", a, Size)
	}
}
