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
	// explain gives, with -explain, the diagnoses of the file's failing
	// directions (so far, live): before end or table, which show them.
	explain(file string, ds []pcapverify.Diagnosis)
	// table shows the flows so far of a live capture.
	table(file string, t *pcapverify.Totals, fs []pcapverify.FlowSummary, now time.Time)
	// summary ends the report, with the totals of the run and how it
	// ends.
	summary(t *pcapverify.Totals, o outcome)
}

// outcome is how a run ends: of the captures it read (files), how many
// stopped at an error (failed), its exit status and, for exitNothing, a
// line saying why and what to do.
type outcome struct {
	files, failed int
	exit          int
	why           string
}

// ending is the outcome of a run of files captures with totals t, failed
// of which stopped at an error.
func ending(t *pcapverify.Totals, files, failed int) outcome {
	exit, why := exitStatus(t, failed)
	return outcome{files: files, failed: failed, exit: exit, why: why}
}

// verifySetup is what each capture of one run is verified with: the
// keys, the options, the report and where warnings and errors go.
type verifySetup struct {
	keys   *pcapverify.Keys
	opts   *pcapverify.Options
	rep    reporter
	stderr io.Writer
	// keyless: -explain without -keys; diagnosed counts the diagnoses
	// the run gave (see ending).
	keyless   bool
	diagnosed *int
}

// noKeys are the keys of -explain without -keys: a keys file of no
// entry, under which the verifier tells only what the wire shows.
func noKeys() *pcapverify.Keys {
	ks, _ := pcapverify.LoadKeys(&keyfile.File{}) // cannot fail: nothing to load
	return ks
}

// noteDiagnoses counts ds for the run's ending.
func (vs verifySetup) noteDiagnoses(ds []pcapverify.Diagnosis) {
	if vs.diagnosed != nil {
		*vs.diagnosed += len(ds)
	}
}

// ending is the outcome of the run. Without keys no segment with an
// option could be checked (each is no-key): the run fails (1) when the
// wire showed a cause or a segment failed otherwise (malformed), and
// verified nothing (3) when not.
func (vs verifySetup) ending(t *pcapverify.Totals, files, failed int) outcome {
	o := ending(t, files, failed)
	if !vs.keyless || o.exit == exitError {
		return o
	}
	other := *t
	other.Counts[pcapverify.NoKey] = 0
	if (vs.diagnosed != nil && *vs.diagnosed > 0) || other.Failing() {
		o.exit, o.why = exitFailed, ""
		return o
	}
	o.exit, o.why = exitNothing, "nothing was verified: no -keys FILE given, and the wire shows no unsigned, isn or auth-kind cause (give -keys FILE to check the MACs and tell the others)"
	return o
}

// input is one capture to verify.
type input struct {
	name  string // as reported
	title string // the heading of the text report
	open  func() (io.ReadCloser, int64, error)
}

// verifyFlags are the command line of "tcpsig verify".
type verifyFlags struct {
	keysPath        string
	asJSON, verbose bool
	explain         bool // -explain
	isn, sne        endpointValues
	lo              liveOptions
	everySet        bool     // -every was given
	files           []string // the CAPTURE arguments
}

// parseVerifyFlags parses verify's command line; flag.ErrHelp asks for
// the help.
func parseVerifyFlags(args []string) (*verifyFlags, error) {
	vf := &verifyFlags{}
	fs := flag.NewFlagSet("verify", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&vf.keysPath, "keys", "", "")
	fs.BoolVar(&vf.asJSON, "json", false, "")
	fs.BoolVar(&vf.verbose, "v", false, "")
	fs.BoolVar(&vf.explain, "explain", false, "")
	fs.Var(&vf.isn, "isn", "")
	fs.Var(&vf.sne, "sne", "")
	fs.StringVar(&vf.lo.iface, "i", "", "")
	fs.IntVar(&vf.lo.port, "port", 0, "")
	fs.StringVar(&vf.lo.write, "w", "", "")
	fs.DurationVar(&vf.lo.every, "every", 5*time.Second, "")
	files, err := parseArgs(fs, args)
	if err != nil {
		return nil, err
	}
	vf.files = files
	fs.Visit(func(f *flag.Flag) { vf.everySet = vf.everySet || f.Name == "every" })
	return vf, nil
}

// options are the verifier's options from the flags, its warnings
// printed on stderr.
func (vf *verifyFlags) options(stderr io.Writer) *pcapverify.Options {
	return &pcapverify.Options{ISN: vf.isn.m, SNE: vf.sne.m, Explain: vf.explain, Warn: func(msg string) { fmt.Fprintf(stderr, "tcpsig verify: warning: %s\n", msg) }}
}

// useDemo takes the built-in sample's ISNs and SNEs for the endpoints
// that -isn and -sne do not name.
func (vf *verifyFlags) useDemo(d *demo) {
	for ap, n := range d.isn {
		if _, given := vf.isn.m[ap]; !given {
			_ = vf.isn.Set(fmt.Sprintf("%v=%d", ap, n))
		}
	}
	for ap, n := range d.sne {
		if _, given := vf.sne.m[ap]; !given {
			_ = vf.sne.Set(fmt.Sprintf("%v=%d", ap, n))
		}
	}
}

// runVerify is "tcpsig verify".
func runVerify(args []string, stdout, stderr io.Writer) int {
	vf, err := parseVerifyFlags(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, verifyHelp)
		return 0
	}
	if err != nil {
		return failf(stderr, "verify: %v (see tcpsig help verify)", err)
	}
	if vf.lo.iface == "" && (vf.lo.port != 0 || vf.lo.write != "" || vf.everySet) {
		return failf(stderr, "verify: -port, -w and -every go with -i IFACE (live capture)")
	}
	if vf.lo.iface != "" {
		return verifyLive(vf, stdout, stderr)
	}
	return verifyCaptures(vf, stdout, stderr)
}

// verifyLive is "tcpsig verify -i IFACE": it checks the live flags, reads
// the keys and verifies until Ctrl-C or SIGTERM.
func verifyLive(vf *verifyFlags, stdout, stderr io.Writer) int {
	lo := vf.lo
	switch {
	case len(vf.files) > 0:
		return failf(stderr, "verify: -i %s reads packets live: no CAPTURE file with it (-w FILE writes one)", lo.iface)
	case vf.keysPath == "" && !vf.explain:
		return failf(stderr, "verify: -keys FILE is required to verify live packets (see tcpsig help verify)")
	case lo.port < 0 || lo.port > 65535:
		return failf(stderr, "verify: -port %d is not a TCP port", lo.port)
	case lo.every <= 0:
		return failf(stderr, "verify: -every must be positive")
	}
	ks, keyless := noKeys(), true
	if vf.keysPath != "" {
		var err error
		if ks, err = loadKeys(vf.keysPath, nil, stderr); err != nil {
			return failf(stderr, "verify: %v", err)
		}
		keyless = false
	}
	var rep reporter = &textReporter{w: stdout, verbose: vf.verbose, live: true, explaining: vf.explain, keyless: keyless}
	if vf.asJSON {
		rep = newJSONReporter(stdout, false).explaining(vf.explain)
	}
	ctx, stop := liveContext()
	defer stop()
	return runLive(ctx, lo, verifySetup{keys: ks, opts: vf.options(stderr), rep: rep, stderr: stderr, keyless: keyless, diagnosed: new(int)})
}

// verifyCaptures is "tcpsig verify CAPTURE...", or the built-in sample
// with no CAPTURE: each capture is verified and reported, then the run's
// summary.
func verifyCaptures(vf *verifyFlags, stdout, stderr io.Writer) int {
	var ks *pcapverify.Keys
	var inputs []input
	hint, keyless := "", false
	switch {
	case len(vf.files) == 0 && vf.keysPath != "":
		return failf(stderr, `verify: -keys given but no CAPTURE to verify ("-" for standard input)`)
	case len(vf.files) == 0:
		d, err := loadDemo()
		if err != nil { // the binary is broken
			return failf(stderr, "verify: built-in sample: %v", err)
		}
		vf.useDemo(d)
		ks, inputs, hint = d.keys, []input{d.input}, demoHint
	case vf.keysPath == "" && !vf.explain:
		return failf(stderr, "verify: -keys FILE is required to verify a capture (see tcpsig help verify)")
	default:
		var err error
		if keyless = vf.keysPath == ""; keyless {
			ks = noKeys()
		} else if ks, err = loadKeys(vf.keysPath, vf.files, stderr); err != nil {
			return failf(stderr, "verify: %v", err)
		}
		for _, f := range vf.files {
			inputs = append(inputs, fileInput(f))
		}
	}

	var rep reporter
	if vf.asJSON {
		rep = newJSONReporter(stdout, len(inputs) > 1).explaining(vf.explain)
	} else {
		rep = &textReporter{w: stdout, verbose: vf.verbose, multi: len(inputs) > 1, explaining: vf.explain, keyless: keyless}
	}
	vs := verifySetup{keys: ks, opts: vf.options(stderr), rep: rep, stderr: stderr, keyless: keyless, diagnosed: new(int)}
	var all pcapverify.Totals
	failed := 0
	for _, in := range inputs {
		// A capture that cannot be read whole is reported, and the
		// others are still verified.
		t, err := verifyOne(in, vs)
		all.Add(t)
		if err != nil {
			failed++
			fmt.Fprintf(stderr, "tcpsig verify: %s: %v\n", in.name, err)
		}
	}
	vs.opts.WarnUnseen()
	o := vs.ending(&all, len(inputs), failed)
	rep.summary(&all, o)
	if o.exit == exitNothing && vf.asJSON {
		fmt.Fprintf(stderr, "tcpsig verify: %s\n", o.why)
	}
	if hint != "" && !vf.asJSON {
		fmt.Fprintln(stdout, hint)
	}
	return o.exit
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
func verifyOne(in input, vs verifySetup) (*pcapverify.Totals, error) {
	rep := vs.rep
	rep.begin(in.name, in.title)
	v, err := pcapverify.NewVerifier(vs.keys, vs.opts, func(r *pcapverify.Result) { rep.segment(in.name, r) })
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
	prog := newProgress(vs.stderr, in.name, size, cr)
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
	if ds := v.Diagnoses(); ds != nil {
		rep.explain(in.name, ds)
		vs.noteDiagnoses(ds)
	}
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

// loadKeys reads the keys file at path as readKeys does and loads its
// keys for the verifier.
func loadKeys(path string, captures []string, stderr io.Writer) (*pcapverify.Keys, error) {
	kf, err := readKeys(path, captures, stderr)
	if err != nil {
		return nil, err
	}
	ks, err := pcapverify.LoadKeys(kf)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return ks, nil
}

// readKeys reads the keys file at path, standard input for "-" (which
// the captures must then not also read). A file that group or others may
// read or write, or that a user other than root and the one running
// verify owns, is read, with a warning on stderr: verify only reads keys,
// where the shim refuses such a file.
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
	if err := keyfile.CheckMode(path); errors.Is(err, keyfile.ErrMode) || errors.Is(err, keyfile.ErrOwner) {
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
