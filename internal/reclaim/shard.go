package reclaim

import (
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/tcpsig/tcpsig/internal/cacheline"
)

// The reader counts are laid out like Linux's per-CPU allocations rather than
// as one padded array per Guard: a block holds the counts of 32 Guards, in n
// rows of 128 bytes, one row per shard, and row s, column i is shard s of
// the block's i-th Guard.
//
//	          Guard 0  Guard 1 ...  Guard 31
//	shard 0   [int32   int32   ...  int32]   128 bytes, one cache line pair
//	shard 1   [int32   int32   ...  int32]
//	...
//
// Readers on different shards never share a line, as with padded per-Guard
// counters, but a Guard costs 4*n bytes instead of 128*n: at GOMAXPROCS=64
// that is 256 bytes rather than 8 KiB per key, which matters for a BGP
// listener holding tens of thousands of keys. Readers of different Guards on
// the same shard share a line; with shards chosen per P they are the same
// core. Columns are never reused: a block is freed by the garbage collector
// once its Guards are, so a late Acquire on a retired Guard can never touch
// another Guard's count.
const (
	lineBytes    = cacheline.Size
	cellsPerLine = lineBytes / 4 // int32 counts per row
	maxShards    = 1 << 10       // bound on n for absurd GOMAXPROCS values
)

type row [cellsPerLine]atomic.Int32

// column is one Guard's view of a block: its n cells, one per row.
type column struct {
	rows []row // n rows, n a power of two
	i    int   // this Guard's column
}

// cell returns the count for shard hint h.
func (c *column) cell(h uint32) *atomic.Int32 {
	return &c.rows[h&uint32(len(c.rows)-1)][c.i]
}

// zero reports whether every shard reads zero.
func (c *column) zero() bool {
	for s := range c.rows {
		if c.rows[s][c.i].Load() != 0 {
			return false
		}
	}
	return true
}

// blocks hands out columns; a new block is made every 32 Guards.
var blocks struct {
	sync.Mutex
	free []column // unused columns of the current block
}

// allocCells gives g its column, once. It runs on the first Acquire of g.
func (g *Guard) allocCells() *column {
	blocks.Lock()
	defer blocks.Unlock()
	if c := g.cells.Load(); c != nil { // another reader got here first
		return c
	}
	if len(blocks.free) == 0 {
		blocks.free = newBlock()
	}
	c := &blocks.free[0]
	blocks.free = blocks.free[1:]
	g.cells.Store(c)
	return c
}

func newBlock() []column {
	n := 1
	for n < runtime.GOMAXPROCS(0) && n < maxShards {
		n <<= 1
	}
	// n*128 bytes with n a power of two is an allocation size class whose
	// objects start on a 128-byte boundary, so rows do not straddle lines.
	rows := make([]row, n)
	cols := make([]column, cellsPerLine)
	for i := range cols {
		cols[i] = column{rows: rows, i: i}
	}
	return cols
}

// shard returns a hint that is the same for calls on the same P, so a core
// keeps hitting its own row. sync.Pool keeps one private item per P, and the
// item is the hint; a fresh P (or one whose item the garbage collector
// dropped) takes the next hint in turn.
//
// A random shard would be cheaper to pick but would send every Acquire and
// Release to a line last written by another core; runtime.procPin would be
// cheaper still but is the runtime's private API.
func shard() uint32 {
	h := hints.Get().(*uint32)
	v := *h
	hints.Put(h)
	return v
}

var (
	nextHint atomic.Uint32
	hints    = sync.Pool{New: func() any {
		h := new(uint32)
		*h = nextHint.Add(1)
		return h
	}}
)
