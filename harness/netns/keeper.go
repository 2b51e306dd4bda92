//go:build linux

package netns

import (
	"os"
	"runtime"
	"sync"

	"golang.org/x/sys/unix"
)

// Keeper is a network namespace kept alive by one locked goroutine, for
// tests that act in it many times (Run is one function, once): Do runs
// functions there one after the other, Go runs a long one on a thread of
// its own, and Close ends it.
type Keeper struct {
	fns  chan func()
	fd   *os.File // its /proc/thread-self/ns/net
	once sync.Once
}

// NewKeeper makes a new namespace (lo up) and the goroutine that keeps it.
// It needs CAP_SYS_ADMIN, as Run does.
func NewKeeper() (*Keeper, error) {
	k := &Keeper{fns: make(chan func())}
	ready := make(chan error, 1)
	go func() {
		ran := false
		err := Run(func() error {
			ran = true
			f, err := os.Open("/proc/thread-self/ns/net")
			k.fd = f
			ready <- err
			if err != nil {
				return err
			}
			for fn := range k.fns {
				fn()
			}
			return nil
		})
		if !ran {
			ready <- err // Run failed before f ran
		}
	}()
	if err := <-ready; err != nil {
		return nil, err
	}
	return k, nil
}

// FD is the namespace's file descriptor (for AddVeth's peer).
func (k *Keeper) FD() int { return int(k.fd.Fd()) }

// Do runs f in the namespace and returns its error.
func (k *Keeper) Do(f func() error) error {
	errc := make(chan error, 1)
	k.fns <- func() { errc <- f() }
	return <-errc
}

// Go runs f on a new goroutine whose thread joins the namespace (for a
// long-running f, which Do would block on); the thread dies with the
// goroutine. The channel receives f's error.
func (k *Keeper) Go(f func() error) chan error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread stays in the namespace
		if err := unix.Setns(k.FD(), unix.CLONE_NEWNET); err != nil {
			errc <- err
			return
		}
		errc <- f()
	}()
	return errc
}

// Close ends the keeping goroutine; the namespace goes with its last
// socket or process.
func (k *Keeper) Close() {
	k.once.Do(func() {
		close(k.fns)
		k.fd.Close()
	})
}
