//go:build linux

package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"

	"github.com/tcpsig/tcpsig/shim"
)

// runShim is tcpsig shim: package shim, with signals for reload, status
// and exit.
func runShim(args []string, stdout, stderr io.Writer) int {
	f, code, ok := parseShimFlags(args, stdout, stderr)
	if !ok {
		return code
	}
	if f.uninstall {
		present, err := shim.Uninstall(uint16(f.queue))
		switch {
		case err != nil:
			return failf(stderr, "shim: -uninstall: %v", err)
		case !present:
			fmt.Fprintf(stdout, "no rules of queue %d (table %s): nothing to remove\n", f.queue, shim.TableName(uint16(f.queue)))
		default:
			fmt.Fprintf(stdout, "removed the rules of queue %d (table %s): the covered peers' packets now reach the kernel unchecked\n",
				f.queue, shim.TableName(uint16(f.queue)))
		}
		return 0
	}
	level := slog.LevelInfo
	if f.verbose {
		level = slog.LevelDebug
	}
	opts := &slog.HandlerOptions{Level: level}
	var handler slog.Handler = slog.NewTextHandler(stderr, opts)
	if f.logFormat == "json" {
		handler = slog.NewJSONHandler(stderr, opts)
	}
	log := slog.New(handler)
	cfg := shim.Config{Keys: f.keys, Queue: uint16(f.queue), Queues: int(f.queues), Status: f.status, State: f.state,
		Metrics: f.metrics, Log: log}
	if os.Getenv("NOTIFY_SOCKET") != "" {
		// Started by systemd as a Type=notify service: READY=1 once the
		// rules are in and the keys loaded, RELOADING=1 around SIGHUP.
		cfg.Notify = func(state string) {
			if _, err := shim.Notify(state); err != nil {
				log.Warn("systemd notification", "err", err)
			}
		}
	}
	s, err := shim.New(cfg)
	if err != nil {
		return failf(stderr, "shim: %s", strings.TrimPrefix(err.Error(), "shim: "))
	}
	// Each queue's reader sleeps in poll(2) holding a P: one more P per
	// reader than the CPUs leaves the rest of the process its share, so
	// the runtime does not take a sleeping reader's P away (and hand the
	// woken reader to another thread).
	readers := int(f.queues)
	if readers <= 0 {
		readers = shim.DefaultQueues()
	}
	if want := runtime.NumCPU() + readers; runtime.GOMAXPROCS(0) < want {
		runtime.GOMAXPROCS(want)
	}
	sigc := make(chan os.Signal, 4)
	signal.Notify(sigc, syscall.SIGHUP, syscall.SIGUSR1, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sigc)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	go func() {
		for sig := range sigc {
			switch sig {
			case syscall.SIGHUP:
				_ = s.Reload() // logged by the shim
			case syscall.SIGUSR1:
				s.LogStatus()
			default:
				log.Info("signal", "signal", sig.String())
				stop()
				return
			}
		}
	}()
	if err := s.Run(ctx); err != nil {
		log.Error("shim stopped", "err", err)
		return 1
	}
	return 0
}
