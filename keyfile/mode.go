package keyfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
)

// ErrMode is wrapped by CheckMode's error: the keys file is readable or
// writable by group or others, so its keys are not the owner's alone.
var ErrMode = errors.New("keyfile: permissions too open")

// CheckMode returns an [*Error] wrapping [ErrMode] when the file at path
// (after symlinks) may be read or written by group or others, naming the
// mode in octal as OpenSSH does; nil for 0600, 0400 and the like. A stat
// failure is returned as is. On Windows, whose mode bits say nothing about
// who may read a file, it only checks that the file exists.
func CheckMode(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	if runtime.GOOS == "windows" {
		return nil
	}
	return checkPerm(path, st.Mode().Perm())
}

// checkPerm is CheckMode's rule for a file's permission bits.
func checkPerm(path string, perm fs.FileMode) error {
	if perm&0o077 == 0 {
		return nil
	}
	what := "readable by group or others"
	if perm&0o044 == 0 {
		what = "writable by group or others"
	}
	return &Error{Err: ErrMode, msg: fmt.Sprintf("%s: permissions %04o are too open: the keys file must not be %s (chmod 600)", path, uint32(perm), what)}
}
