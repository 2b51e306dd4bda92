//go:build unix

package keyfile

import (
	"io/fs"
	"syscall"
)

// owner returns the uid that owns the file st describes.
func owner(st fs.FileInfo) (uint32, bool) {
	s, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return uint32(s.Uid), true
}
