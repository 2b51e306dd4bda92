package heapgrowth_test

import (
	"testing"

	"github.com/tcpsig/tcpsig/harness/heapgrowth"
)

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		xs   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{3}, 3},
		{[]float64{5, 1, 3}, 3},
		{[]float64{4, 1, 3, 2}, 2.5},
	} {
		in := append([]float64(nil), c.xs...)
		if got := heapgrowth.Median(c.xs); got != c.want {
			t.Errorf("Median(%v) = %g, want %g", c.xs, got, c.want)
		}
		for i := range in {
			if in[i] != c.xs[i] {
				t.Errorf("Median reordered its argument: %v, was %v", c.xs, in)
			}
		}
	}
}

// BenchmarkReport runs the re-exec protocol end to end: each round is a
// child process of this binary whose figure is the same constant.
func BenchmarkReport(b *testing.B) {
	heapgrowth.Report(b, "units", func() float64 { return 42 })
}
