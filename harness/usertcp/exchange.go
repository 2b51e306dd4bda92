package usertcp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
)

// Exchange runs a whole conversation between two endpoints of this stack,
// for tests of an Auth: over b a server accepts (greeting in its SYN-ACK
// when greeting is not empty), reads req, answers rep, waits for EOF and
// closes; over a a client dials, reads the greeting, sends req, reads rep
// and closes. It returns both endpoints' stats and the first error of
// either side; ctx bounds the whole exchange.
func Exchange(ctx context.Context, a, b Link, ccfg, scfg Config, greeting, req, rep []byte) (client, server Stats, err error) {
	deadline, _ := ctx.Deadline()
	scfg.Greeting = greeting
	var wg sync.WaitGroup
	var serr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		serr = func() error {
			c, err := Accept(ctx, b, scfg)
			if err != nil {
				return err
			}
			defer func() { server = c.Stats() }()
			c.SetDeadline(deadline)
			got := make([]byte, len(req))
			if _, err := io.ReadFull(c, got); err != nil {
				return err
			}
			if !bytes.Equal(got, req) {
				return errors.New("request differs")
			}
			if _, err := c.Write(rep); err != nil {
				return err
			}
			if n, err := c.Read(make([]byte, 1)); n != 0 || err != io.EOF {
				return errors.New("no EOF")
			}
			return c.Close()
		}()
	}()
	cerr := func() error {
		c, err := Dial(ctx, a, ccfg)
		if err != nil {
			return err
		}
		defer func() { client = c.Stats() }()
		c.SetDeadline(deadline)
		g := make([]byte, len(greeting))
		if _, err := io.ReadFull(c, g); err != nil || !bytes.Equal(g, greeting) {
			return errors.New("bad greeting")
		}
		if _, err := c.Write(req); err != nil {
			return err
		}
		got := make([]byte, len(rep))
		if _, err := io.ReadFull(c, got); err != nil {
			return err
		}
		if !bytes.Equal(got, rep) {
			return errors.New("reply differs")
		}
		return c.Close()
	}()
	wg.Wait()
	if cerr != nil || serr != nil {
		return client, server, fmt.Errorf("usertcp exchange: client: %v; server: %v", cerr, serr)
	}
	return client, server, nil
}
