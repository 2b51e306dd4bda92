//go:build linux

package shim

import (
	"errors"
	"fmt"

	"github.com/tcpsig/tcpsig/ao"
)

// ErrKeyringDiffers is apply's error when the keyrings do not hold
// exactly the keys of the file just applied: a key in a keyring but not
// in the file (which would sign and verify unseen, after the operator
// removed it) is deleted on the spot; a key of the file missing from its
// keyring is named.
var ErrKeyringDiffers = errors.New("shim: the keyrings do not hold exactly the keys file's keys")

// checkKeyrings checks what apply promises: the TCP-AO keyring holds
// exactly the MKTs of s.aoMKT (compared MKT by MKT) and the TCP-MD5
// keyring as many keys as s.md5Key names (it lists none). A key that
// should be gone is deleted at once and the reload fails, loudly (an
// error in the log, the reload counted failed). Under s.mu.
func (s *Shim) checkKeyrings() error {
	inFile := s.aoInFile()
	var errs []error
	held := 0
	for _, m := range s.aoRing.MKTs() {
		if inFile[m] {
			held++
			continue
		}
		err := s.aoRing.Delete(m, ao.DeleteOptions{Async: true})
		s.log.Error("a TCP-AO key was in the keyring but not in the keys file: deleted now", "key", m, "delete", err)
		errs = append(errs, fmt.Errorf("%w: %v was in the TCP-AO keyring, not in the file (deleted: %v)", ErrKeyringDiffers, m, err))
	}
	if held != len(inFile) {
		errs = append(errs, fmt.Errorf("%w: %d of the file's %d TCP-AO keys are in the keyring", ErrKeyringDiffers, held, len(inFile)))
	}
	md5 := 0
	for _, k := range s.md5Key {
		if k != nil {
			md5++
		}
	}
	if n := s.md5Ring.Len(); n != md5 {
		errs = append(errs, fmt.Errorf("%w: the TCP-MD5 keyring holds %d keys, the file %d", ErrKeyringDiffers, n, md5))
	}
	if err := errors.Join(errs...); err != nil {
		s.log.Error("the keyrings differ from the keys file", "err", err)
		return err
	}
	return nil
}

// aoInFile is the set of the MKTs of the keys file in use. Under s.mu.
func (s *Shim) aoInFile() map[*ao.MKT]bool {
	in := make(map[*ao.MKT]bool, len(s.aoMKT))
	for _, m := range s.aoMKT {
		if m != nil {
			in[m] = true
		}
	}
	return in
}
