package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/tcpsig/tcpsig/keychain"
	"github.com/tcpsig/tcpsig/keyfile"
)

// The keys subcommands of key schedules: import and export of
// ietf-key-chain documents, rotate, and keys check's timeline. The work
// is package keychain's; here are flags, files and output.

// parseKeysFlags parses a keys subcommand's flags, wherever they are
// among its arguments, with -h printing the keys help; ok false means
// return code. It returns the other arguments.
func parseKeysFlags(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) (rest []string, code int, ok bool) {
	fs.SetOutput(io.Discard)
	rest, err := parseArgs(fs, args)
	if err != nil {
		if err == flag.ErrHelp {
			fmt.Fprint(stdout, keysCmdHelp)
			return nil, 0, false
		}
		return nil, failf(stderr, "keys %s: %v (see tcpsig keys -h)", fs.Name(), err), false
	}
	return rest, 0, true
}

// chainFlags is -chain NAME=PEER[,PEER…], repeatable.
type chainFlags map[string][]netip.Prefix

func (c chainFlags) String() string { return "" }

func (c chainFlags) Set(v string) error {
	name, list, ok := strings.Cut(v, "=")
	if !ok || name == "" || list == "" {
		return errors.New("want NAME=PEER[,PEER…]")
	}
	for _, s := range strings.Split(list, ",") {
		p, err := parsePeer(s)
		if err != nil {
			return err
		}
		c[name] = append(c[name], p)
	}
	return nil
}

// runKeysImport is tcpsig keys import DOC -chain NAME=PEER … -o FILE.
func runKeysImport(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("import", flag.ContinueOnError)
	chains := chainFlags{}
	fs.Var(chains, "chain", "a key chain and its peers")
	out := fs.String("o", "", "the keys file to write")
	rest, code, ok := parseKeysFlags(fs, args, stdout, stderr)
	if !ok {
		return code
	}
	if len(rest) != 1 || len(chains) == 0 || *out == "" {
		return failf(stderr, "keys import: wants DOC, -chain NAME=PEER and -o FILE (see tcpsig keys -h)")
	}
	doc, err := os.ReadFile(rest[0])
	if err != nil {
		return failf(stderr, "keys import: %v", unwrapPath(err))
	}
	defer clear(doc)
	f, err := keychain.Import(doc, chains)
	if err != nil {
		return failf(stderr, "keys import: %s: %v", rest[0], err)
	}
	defer f.Wipe()
	if err := writeKeysFile(*out, f); err != nil {
		return failf(stderr, "keys import: %v", err)
	}
	fmt.Fprintf(stdout, "wrote %s (mode 0600): %d TCP-AO and %d TCP-MD5 entries\n", *out, len(f.AO), len(f.MD5))
	printEntries(stdout, f)
	return 0
}

// runKeysExport is tcpsig keys export FILE -o DOC.
func runKeysExport(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("export", flag.ContinueOnError)
	out := fs.String("o", "", "the document to write")
	rest, code, ok := parseKeysFlags(fs, args, stdout, stderr)
	if !ok {
		return code
	}
	if len(rest) != 1 || *out == "" {
		return failf(stderr, "keys export: wants FILE and -o DOC: a key chain holds its keys, so it goes to a file of mode 0600, never to the terminal")
	}
	f, err := keyfile.Load(rest[0])
	if err != nil {
		return failf(stderr, "keys export: %s: %v", rest[0], err)
	}
	defer f.Wipe()
	doc, peers, err := keychain.Export(f)
	if err != nil {
		return failf(stderr, "keys export: %s: %v", rest[0], err)
	}
	defer clear(doc)
	if err := writeNew0600(*out, doc); err != nil {
		return failf(stderr, "keys export: %v", err)
	}
	chains, err := keychain.Parse(doc)
	if err != nil {
		return failf(stderr, "keys export: %v", err)
	}
	defer keychain.Wipe(chains)
	plural := "s"
	if len(chains) == 1 {
		plural = ""
	}
	fmt.Fprintf(stdout, "wrote %s (mode 0600): %d key chain%s\n", *out, len(chains), plural)
	var flags []string
	for _, c := range chains {
		fmt.Fprintf(stdout, "  key-chain %s for %s (tolerance %v)\n", c.Name, prefixes(peers[c.Name]), c.Tolerance)
		for _, k := range c.Keys {
			fmt.Fprintf(stdout, "    %v\n", k)
		}
		flags = append(flags, "-chain '"+c.Name+"="+prefixes(peers[c.Name])+"'")
	}
	fmt.Fprintf(stdout, "import it again with: tcpsig keys import %s %s -o FILE\n", *out, strings.Join(flags, " "))
	return 0
}

// prefixes joins ps with commas.
func prefixes(ps []netip.Prefix) string {
	var s []string
	for _, p := range ps {
		s = append(s, p.String())
	}
	return strings.Join(s, ",")
}

// runKeysRotate is tcpsig keys rotate FILE -peer P [-at TIME]
// [-overlap D] [-mirror OTHER | -self ADDR -mirror-out NEW].
func runKeysRotate(args []string, stdout, stderr io.Writer, now time.Time) int {
	fs := flag.NewFlagSet("rotate", flag.ContinueOnError)
	peer := fs.String("peer", "", "the peer whose key to replace")
	at := fs.String("at", "", "the new key's send start (RFC 3339)")
	overlap := fs.Duration("overlap", time.Hour, "how long both keys are accepted on each side of -at")
	mirrorPath := fs.String("mirror", "", "the other end's keys file")
	self := fs.String("self", "", "this end's address, for -mirror-out")
	mirrorOut := fs.String("mirror-out", "", "a new file for the other end's entries")
	rest, code, ok := parseKeysFlags(fs, args, stdout, stderr)
	if !ok {
		return code
	}
	if len(rest) != 1 || *peer == "" || (*mirrorOut == "") != (*self == "") || *mirrorOut != "" && *mirrorPath != "" {
		return failf(stderr, "keys rotate: wants FILE and -peer P, and -mirror OTHER or -self ADDR -mirror-out NEW or neither (see tcpsig keys -h)")
	}
	r := keychain.Rotation{Overlap: *overlap, At: now.Add(*overlap).Truncate(time.Second)}
	var err error
	if r.Peer, err = parsePeer(*peer); err != nil {
		return failf(stderr, "keys rotate: -peer: %v", err)
	}
	if *at != "" {
		if r.At, err = time.Parse(time.RFC3339Nano, *at); err != nil {
			return failf(stderr, "keys rotate: -at: want an RFC 3339 time, 2027-01-01T00:00:00Z say")
		}
	}
	path := rest[0]
	f, err := keyfile.Load(path)
	if err != nil {
		return failf(stderr, "keys rotate: %s: %v", path, err)
	}
	defer f.Wipe()
	m, mpath := f, path
	switch {
	case *mirrorPath != "":
		if m, err = keyfile.Load(*mirrorPath); err != nil {
			return failf(stderr, "keys rotate: %s: %v", *mirrorPath, err)
		}
		defer m.Wipe()
		mpath = *mirrorPath
	case *mirrorOut != "":
		selfP, err := parsePeer(*self)
		if err != nil {
			return failf(stderr, "keys rotate: -self: %v", err)
		}
		m, mpath = keychain.Mirror(f, r.Peer, selfP), *mirrorOut
	}
	got, err := keychain.Rotate(f, m, r)
	if err != nil {
		return failf(stderr, "keys rotate: %s: %v", path, err)
	}
	if err := writeRotated(path, f, mpath, m, *mirrorOut != ""); err != nil {
		return failf(stderr, "keys rotate: %v", err)
	}
	printRotated(stdout, path, f, mpath, m, got, r)
	return 0
}

// writeRotated writes a rotation's files: the mirror's first when it is
// a new one (an existing file there stops everything), then each file
// over its old self.
func writeRotated(path string, f *keyfile.File, mpath string, m *keyfile.File, newMirror bool) error {
	if newMirror {
		if err := writeKeysFile(mpath, m); err != nil {
			return err
		}
	} else if m != f {
		if err := replaceKeysFile(mpath, m); err != nil {
			return err
		}
	}
	return replaceKeysFile(path, f)
}

// printRotated says what a rotation added, and the timeline from the
// moment the new key is first accepted.
func printRotated(w io.Writer, path string, f *keyfile.File, mpath string, m *keyfile.File, got keychain.Rotated, r keychain.Rotation) {
	kind, nw, mnw := "ao", "", ""
	if got.MD5 {
		kind, nw, mnw = "md5", f.MD5[got.New].String(), m.MD5[got.MirrorNew].String()
	} else {
		nw, mnw = f.AO[got.New].String(), m.AO[got.MirrorNew].String()
	}
	fmt.Fprintf(w, "%s: added %s[%d] %s\n", path, kind, got.New, nw)
	fmt.Fprintf(w, "%s: added %s[%d] %s (the mirror)\n", mpath, kind, got.MirrorNew, mnw)
	fmt.Fprintf(w, "the old key (%s[%d]) stops sending at %s and is accepted until %s\n", kind, got.Old,
		r.At.UTC().Format(time.RFC3339), r.At.Add(r.Overlap).UTC().Format(time.RFC3339))
	keychain.Check(f, m, r.At.Add(-r.Overlap)).Write(w)
}

// replaceKeysFile writes f over path, as a new file of mode 0600 renamed
// into place: a reader sees the old file or the new one, never a part.
func replaceKeysFile(path string, f *keyfile.File) error {
	body, err := f.Marshal()
	if err != nil {
		return err
	}
	defer clear(body)
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tcpsig-new")
	os.Remove(tmp) // a leftover of an interrupted run
	if err := writeNew0600(tmp, body); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// keysSchedule is keys check's part for lifetimes: the timeline of path's
// file from at on, checked against the other end's file when one is
// given. It returns the problems (errors) and warnings.
func keysSchedule(stdout io.Writer, f *keyfile.File, otherPath string, at time.Time) (problems, warnings []string, err error) {
	var other *keyfile.File
	if otherPath != "" {
		if other, err = keyfile.Load(otherPath); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", otherPath, err)
		}
		defer other.Wipe()
	}
	tl := keychain.Check(f, other, at)
	tl.Write(stdout)
	problems, warnings = tl.Problems, tl.Warnings
	if other != nil {
		back := keychain.Check(other, f, at)
		for _, p := range back.Problems {
			problems = append(problems, otherPath+": "+p)
		}
	}
	return slices.Compact(problems), warnings, nil
}
