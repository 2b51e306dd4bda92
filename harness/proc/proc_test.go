package proc

import (
	"errors"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestReadyThenStop(t *testing.T) {
	p, err := Start("sleeper", exec.Command("sh", "-c", "echo ready; exec sleep 30"))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.WaitReady("writing ready", 10*time.Second, func() bool { return strings.Contains(p.Log(), "ready") }); err != nil {
		t.Fatal(err)
	}
	err = p.Stop(syscall.SIGTERM, 10*time.Second)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGTERM {
		t.Fatalf("Stop: %v, want the exit by SIGTERM", err)
	}
	if err := p.Signal(syscall.SIGTERM); err == nil {
		t.Fatal("Signal to an exited process succeeded")
	}
	p.Kill() // exited already: returns at once
}

func TestExitBeforeReady(t *testing.T) {
	p, err := Start("quitter", exec.Command("sh", "-c", "echo bye; exit 3"))
	if err != nil {
		t.Fatal(err)
	}
	err = p.WaitReady("anything", 10*time.Second, func() bool { return false })
	if err == nil || errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), "bye") {
		t.Fatalf("WaitReady: %v, want the exit with its log", err)
	}
	<-p.Done()
	if p.Err() == nil {
		t.Fatal("exit status 3 reported as success")
	}
}

func TestTimeouts(t *testing.T) {
	p, err := Start("stubborn", exec.Command("sh", "-c", "trap '' TERM; exec sleep 30"))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.WaitReady("never", 100*time.Millisecond, func() bool { return false }); !errors.Is(err, ErrTimeout) {
		t.Fatalf("WaitReady: %v, want ErrTimeout", err)
	}
	time.Sleep(100 * time.Millisecond) // let sh set its trap before exec
	if err := p.Stop(syscall.SIGTERM, 300*time.Millisecond); !errors.Is(err, ErrTimeout) {
		t.Fatalf("Stop of a process that ignores SIGTERM: %v, want ErrTimeout", err)
	}
	select {
	case <-p.Done():
	default:
		t.Fatal("Stop did not kill it after the timeout")
	}
}
