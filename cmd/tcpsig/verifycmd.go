package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/tcpsig/tcpsig/keyfile"
	"github.com/tcpsig/tcpsig/pcapverify"
)

// liveContext is the context a live capture runs under: until Ctrl-C or
// SIGTERM. Tests replace it.
var liveContext = func() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// reporter prints what verify finds: as text (a line per segment that is
// not good, a table per flow, a summary) or as JSON lines (an object per
// judged segment, then one summary object).
type reporter interface {
	begin(file, title string)
	segment(file string, r *pcapverify.Result)
	end(file string, t *pcapverify.Totals, fs []pcapverify.FlowSummary, err error)
	// table shows the flows so far of a live capture.
	table(file string, t *pcapverify.Totals, fs []pcapverify.FlowSummary, now time.Time)
	// summary ends the report: files captures of which failed stopped at
	// an error; why explains exitNothing.
	summary(t *pcapverify.Totals, files, failed int, exit int, why string)
}

// input is one capture to verify.
type input struct {
	name  string // as reported
	title string // the heading of the text report
	open  func() (io.ReadCloser, int64, error)
}

// runVerify is "tcpsig verify".
func runVerify(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("verify", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	keysPath := fs.String("keys", "", "")
	asJSON := fs.Bool("json", false, "")
	verbose := fs.Bool("v", false, "")
	var isn, sne endpointValues
	fs.Var(&isn, "isn", "")
	fs.Var(&sne, "sne", "")
	var lo liveOptions
	fs.StringVar(&lo.iface, "i", "", "")
	fs.IntVar(&lo.port, "port", 0, "")
	fs.StringVar(&lo.write, "w", "", "")
	fs.DurationVar(&lo.every, "every", 5*time.Second, "")
	files, err := parseArgs(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, verifyHelp)
		return 0
	}
	if err != nil {
		return failf(stderr, "verify: %v (see tcpsig help verify)", err)
	}

	every := false
	fs.Visit(func(f *flag.Flag) { every = every || f.Name == "every" })
	if lo.iface == "" && (lo.port != 0 || lo.write != "" || every) {
		return failf(stderr, "verify: -port, -w and -every go with -i IFACE (live capture)")
	}
	if lo.iface != "" {
		switch {
		case len(files) > 0:
			return failf(stderr, "verify: -i %s reads packets live: no CAPTURE file with it (-w FILE writes one)", lo.iface)
		case *keysPath == "":
			return failf(stderr, "verify: -keys FILE is required to verify live packets (see tcpsig help verify)")
		case lo.port < 0 || lo.port > 65535:
			return failf(stderr, "verify: -port %d is not a TCP port", lo.port)
		case lo.every <= 0:
			return failf(stderr, "verify: -every must be positive")
		}
		kf, err := readKeys(*keysPath, nil, stderr)
		if err != nil {
			return failf(stderr, "verify: %v", err)
		}
		ks, err := pcapverify.LoadKeys(kf)
		if err != nil {
			return failf(stderr, "verify: %s: %v", *keysPath, err)
		}
		var rep reporter = &textReporter{w: stdout, verbose: *verbose, live: true}
		if *asJSON {
			rep = newJSONReporter(stdout, false)
		}
		ctx, stop := liveContext()
		defer stop()
		opts := &pcapverify.Options{ISN: isn.m, SNE: sne.m, Warn: func(msg string) { fmt.Fprintf(stderr, "tcpsig verify: warning: %s\n", msg) }}
		return runLive(ctx, lo, ks, opts, rep, stderr)
	}

	var ks *pcapverify.Keys
	var inputs []input
	hint := ""
	switch {
	case len(files) == 0 && *keysPath != "":
		return failf(stderr, `verify: -keys given but no CAPTURE to verify ("-" for standard input)`)
	case len(files) == 0:
		d, err := loadDemo()
		if err != nil { // the binary is broken
			return failf(stderr, "verify: built-in sample: %v", err)
		}
		ks = d.keys
		for ap, n := range d.isn {
			if _, given := isn.m[ap]; !given {
				_ = isn.Set(fmt.Sprintf("%v=%d", ap, n))
			}
		}
		for ap, n := range d.sne {
			if _, given := sne.m[ap]; !given {
				_ = sne.Set(fmt.Sprintf("%v=%d", ap, n))
			}
		}
		inputs = append(inputs, d.input)
		hint = demoHint
	default:
		if *keysPath == "" {
			return failf(stderr, "verify: -keys FILE is required to verify a capture (see tcpsig help verify)")
		}
		kf, err := readKeys(*keysPath, files, stderr)
		if err != nil {
			return failf(stderr, "verify: %v", err)
		}
		if ks, err = pcapverify.LoadKeys(kf); err != nil {
			return failf(stderr, "verify: %s: %v", *keysPath, err)
		}
		for _, f := range files {
			inputs = append(inputs, fileInput(f))
		}
	}

	var rep reporter
	if *asJSON {
		rep = newJSONReporter(stdout, len(inputs) > 1)
	} else {
		rep = &textReporter{w: stdout, verbose: *verbose, multi: len(inputs) > 1}
	}
	opts := &pcapverify.Options{ISN: isn.m, SNE: sne.m, Warn: func(msg string) { fmt.Fprintf(stderr, "tcpsig verify: warning: %s\n", msg) }}
	var all pcapverify.Totals
	failed := 0
	for _, in := range inputs {
		// A capture that cannot be read whole is reported, and the
		// others are still verified.
		t, err := verifyOne(in, ks, opts, rep, stderr)
		all.Add(t)
		if err != nil {
			failed++
			fmt.Fprintf(stderr, "tcpsig verify: %s: %v\n", in.name, err)
		}
	}
	opts.WarnUnseen()
	exit, why := exitStatus(&all, failed)
	rep.summary(&all, len(inputs), failed, exit, why)
	if exit == exitNothing && *asJSON {
		fmt.Fprintf(stderr, "tcpsig verify: %s\n", why)
	}
	if hint != "" && !*asJSON {
		fmt.Fprintln(stdout, hint)
	}
	return exit
}

// The exit statuses of verify.
const (
	exitGood    = 0 // every checked segment is good, and at least one was checked
	exitFailed  = 1 // a segment is bad, no-key, unsigned or malformed
	exitError   = 2 // a usage, keys-file or capture error
	exitNothing = 3 // nothing was verified: no segment judged, or none had its ISNs
)

// exitStatus is the exit status of a run, and for exitNothing one line
// saying why and what to do.
func exitStatus(t *pcapverify.Totals, failed int) (int, string) {
	switch {
	case failed > 0:
		return exitError, ""
	case t.Failing():
		return exitFailed, ""
	case t.Counts[pcapverify.Good] > 0:
		return exitGood, ""
	case t.Counts[pcapverify.UnknownISN] > 0:
		flags := make([]string, len(t.NeedISN))
		for i, ap := range t.NeedISN {
			flags[i] = "-isn " + ap.String() + "=ISN"
		}
		return exitNothing, fmt.Sprintf("nothing was verified: the %d TCP-AO segments need ISNs the capture does not have (its handshake is missing): give %s",
			t.Counts[pcapverify.UnknownISN], strings.Join(flags, " "))
	case t.Packets == 0:
		return exitNothing, "nothing was verified: the capture holds no packets"
	}
	return exitNothing, fmt.Sprintf("nothing was verified: none of the %d packets carries TCP-AO or TCP-MD5 or comes from a peer a key covers (check the keys' peers against the capture's addresses)", t.Packets)
}

// verifyOne verifies one capture, streaming its frames.
func verifyOne(in input, ks *pcapverify.Keys, opts *pcapverify.Options, rep reporter, stderr io.Writer) (*pcapverify.Totals, error) {
	rep.begin(in.name, in.title)
	v, err := pcapverify.NewVerifier(ks, opts, func(r *pcapverify.Result) { rep.segment(in.name, r) })
	if err != nil {
		rep.end(in.name, &pcapverify.Totals{}, nil, err)
		return &pcapverify.Totals{}, err
	}
	defer v.Close()
	rc, size, err := in.open()
	if err != nil {
		rep.end(in.name, &pcapverify.Totals{}, nil, err)
		return &pcapverify.Totals{}, err
	}
	defer rc.Close()
	cr := &countingReader{r: rc}
	c, err := pcapverify.Open(cr)
	if err != nil {
		rep.end(in.name, &pcapverify.Totals{}, nil, err)
		return &pcapverify.Totals{}, err
	}
	prog := newProgress(stderr, in.name, size, cr)
	var capErr error
	for frame := 1; ; frame++ {
		ip, truncated, err := c.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			capErr = fmt.Errorf("frame %d: %v", frame, err)
			break
		}
		v.Packet(frame, ip, truncated)
		prog.tick(frame)
	}
	prog.done()
	rep.end(in.name, v.Totals(), v.Flows(), capErr)
	return v.Totals(), capErr
}

// fileInput is a capture file, or standard input for "-".
func fileInput(path string) input {
	if path == "-" {
		return input{name: "(stdin)", title: "(stdin)", open: func() (io.ReadCloser, int64, error) {
			return io.NopCloser(os.Stdin), 0, nil
		}}
	}
	return input{name: path, title: path, open: func() (io.ReadCloser, int64, error) {
		f, err := os.Open(path)
		if pe := (*os.PathError)(nil); errors.As(err, &pe) {
			return nil, 0, pe.Err
		} else if err != nil {
			return nil, 0, err
		}
		var size int64
		if st, err := f.Stat(); err == nil {
			if st.IsDir() {
				f.Close()
				return nil, 0, errors.New("is a directory")
			}
			size = st.Size()
		}
		return f, size, nil
	}}
}

// readKeys reads the keys file at path, standard input for "-" (which
// the captures must then not also read). A file that group or others may
// read or write is read, with a warning on stderr: verify only reads
// keys, where the shim refuses such a file.
func readKeys(path string, captures []string, stderr io.Writer) (*keyfile.File, error) {
	if path == "-" {
		if slices.Contains(captures, "-") {
			return nil, errors.New(`-keys - and CAPTURE - cannot both read standard input`)
		}
		kf, err := keyfile.Read(os.Stdin)
		if err != nil {
			return nil, fmt.Errorf("keys from standard input: %v", err)
		}
		return kf, nil
	}
	kf, err := keyfile.Load(path)
	var ke *keyfile.Error
	if errors.As(err, &ke) {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	if err != nil {
		return nil, unwrapPath(err)
	}
	if err := keyfile.CheckMode(path); errors.Is(err, keyfile.ErrMode) {
		fmt.Fprintf(stderr, "tcpsig verify: warning: %v\n", err)
	}
	return kf, nil
}

// unwrapPath drops the path from an *os.PathError, which the caller names.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %v", pe.Path, strings.TrimPrefix(pe.Err.Error(), pe.Op+" "))
	}
	return err
}
