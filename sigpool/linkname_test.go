package sigpool

import _ "unsafe" // go:linkname

// cheaprand is the runtime's per-M wyrand, reachable by linkname (the
// runtime keeps it for "widely used packages"); measured in BenchmarkPick
// only, never used by the package.
//
//go:linkname cheaprand runtime.cheaprand
func cheaprand() uint32
