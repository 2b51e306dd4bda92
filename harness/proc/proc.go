// Package proc runs the end-to-end tests' helper processes (a tcpsig shim,
// BIRD, a pass-through queue): their output kept for the test's log, their
// exit watched once, and a wait until they are ready.
package proc

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"time"
)

// ErrTimeout is returned when a process is not ready, or has not exited,
// in the time given.
var ErrTimeout = errors.New("proc: timed out")

// Proc is a started process.
type Proc struct {
	Name string
	Cmd  *exec.Cmd
	log  buffer
	done chan struct{} // closed when Cmd.Wait returns
	err  error         // Cmd.Wait's, once done is closed
}

// Start starts cmd, its standard output and error kept in the log. Name
// names it in errors.
func Start(name string, cmd *exec.Cmd) (*Proc, error) {
	p := &Proc{Name: name, Cmd: cmd, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = &p.log, &p.log
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// Log is what the process has written so far.
func (p *Proc) Log() string { return p.log.String() }

// Done is closed when the process has exited; Err then says how.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Err is the process's exit error (nil for status 0), valid once Done is
// closed.
func (p *Proc) Err() error { return p.err }

// Signal sends sig to a process that has not exited yet.
func (p *Proc) Signal(sig os.Signal) error {
	select {
	case <-p.done:
		return fmt.Errorf("%s: signal %v: exited already", p.Name, sig)
	default:
		return p.Cmd.Process.Signal(sig)
	}
}

// WaitReady polls ready every 20 ms until it reports true. It fails, with
// the log, if the process exits first or timeout passes (ErrTimeout).
func (p *Proc) WaitReady(what string, timeout time.Duration, ready func() bool) error {
	deadline := time.Now().Add(timeout)
	for !ready() {
		select {
		case <-p.done:
			return fmt.Errorf("%s exited: %v\n%s", p.Name, p.err, p.Log())
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: %s did not start %s\n%s", ErrTimeout, p.Name, what, p.Log())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

// Stop sends sig and waits up to timeout for the exit, returning its
// error; a process still running then is killed, and Stop returns
// ErrTimeout.
func (p *Proc) Stop(sig os.Signal, timeout time.Duration) error {
	_ = p.Signal(sig)
	select {
	case <-p.done:
		return p.err
	case <-time.After(timeout):
		p.Kill()
		return fmt.Errorf("%w: %s did not exit on %v", ErrTimeout, p.Name, sig)
	}
}

// Kill kills the process if it is still running and waits (up to 5 s)
// until it has exited.
func (p *Proc) Kill() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.Cmd.Process.Kill()
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
	}
}

// buffer is a bytes.Buffer that the process's output and the test may
// use at once.
type buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
