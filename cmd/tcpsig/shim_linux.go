//go:build linux

package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"os/signal"
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
	level := slog.LevelInfo
	if f.verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	s, err := shim.New(shim.Config{Keys: f.keys, Queue: uint16(f.queue), Queues: int(f.queues), Status: f.status, State: f.state, Log: log})
	if err != nil {
		return failf(stderr, "shim: %s", strings.TrimPrefix(err.Error(), "shim: "))
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
