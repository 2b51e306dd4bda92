//go:build linux

package shim_test

import (
	"context"
	"log"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/tcpsig/tcpsig/shim"
)

// Sign and verify this host's sessions with the peers of keys.json until
// SIGTERM. Needs CAP_NET_ADMIN, so this example is compiled but not run.
func Example() {
	s, err := shim.New(shim.Config{Keys: "keys.json", Queue: 7911, Log: slog.Default()})
	if err != nil {
		log.Fatal(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := s.Run(ctx); err != nil {
		log.Fatal(err)
	}
}
