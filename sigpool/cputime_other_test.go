//go:build !unix

package sigpool

func cpuTime() int64 { return -1 }
