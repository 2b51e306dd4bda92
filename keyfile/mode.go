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

// ErrOwner is wrapped by CheckMode's error: the keys file is owned by a
// user other than root and the user the process runs as, and that user
// may rewrite its keys (or chmod it open) at any time.
var ErrOwner = errors.New("keyfile: owned by another user")

// CheckMode returns an [*Error] wrapping [ErrOwner] when the file at path
// (after symlinks) is owned by neither root nor the process's effective
// user, naming the owner's uid, and one wrapping [ErrMode] when group or
// others may read or write it, naming the mode in octal as OpenSSH does;
// nil for a file of root's or the process's user with mode 0600, 0400
// and the like. A stat failure is returned as is. On Windows, whose mode
// bits say nothing about who may read a file, it only checks that the
// file exists. [LoadPrivate] applies the same rule to the file it reads.
func CheckMode(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	return checkInfo(path, st)
}

// checkInfo is CheckMode's rule for the file st describes.
func checkInfo(path string, st fs.FileInfo) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	if uid, ok := owner(st); ok {
		if err := checkOwner(path, uid, os.Geteuid()); err != nil {
			return err
		}
	}
	return checkPerm(path, st.Mode().Perm())
}

// checkOwner is CheckMode's rule for a file's owner: root (uid 0) or the
// process's effective user euid, as tcpsig shim trusts its state file.
func checkOwner(path string, uid uint32, euid int) error {
	if uid == 0 || int64(uid) == int64(euid) {
		return nil
	}
	fix := fmt.Sprintf("chown root %s", path)
	if euid > 0 {
		fix = fmt.Sprintf("chown %d %s, or chown root", euid, path)
	}
	return &Error{Err: ErrOwner, msg: fmt.Sprintf("%s: owned by uid %d, neither root nor this process's user (uid %d): the keys file must be owned by one of them (%s)", path, uid, euid, fix)}
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
