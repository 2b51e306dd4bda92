package main

import (
	"bytes"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/tcpsig/tcpsig/ao"
	"github.com/tcpsig/tcpsig/diagnose"
	"github.com/tcpsig/tcpsig/keychain"
	"github.com/tcpsig/tcpsig/keyfile"
	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/mac"
	"github.com/tcpsig/tcpsig/md5sig"
	"github.com/tcpsig/tcpsig/shim"
	"github.com/tcpsig/tcpsig/sigpool"
)

// runKeys is tcpsig keys: check, gen, rotate, import or export.
func runKeys(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		return failf(stderr, "keys: needs check or gen (see tcpsig keys -h)")
	}
	switch args[0] {
	case "check":
		return runKeysCheck(args[1:], stdout, stderr)
	case "gen":
		return runKeysGen(args[1:], stdout, stderr)
	case "rotate":
		return runKeysRotate(args[1:], stdout, stderr, time.Now())
	case "import":
		return runKeysImport(args[1:], stdout, stderr)
	case "export":
		return runKeysExport(args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, keysCmdHelp)
		return 0
	}
	return failf(stderr, "keys: unknown subcommand %q: want check, gen, rotate, import or export (see tcpsig keys -h)", args[0])
}

// linux72 are the TCP-AO algorithms Linux keeps once TCP-AO is built on the
// crypto library (Eric Biggers' series, net-next 7.2 at the earliest):
// every other name is -ENOENT there. cmac(aes) stays for 16-byte keys.
var linux72 = map[string]bool{"cmac(aes128)": true, "hmac(sha1)": true, "hmac(sha256)": true}

// runKeysCheck is tcpsig keys check FILE [OTHER].
func runKeysCheck(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("keys check", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	at := fs.String("at", "", "judge the key schedule from this time (RFC 3339) on, not from now")
	warnOnly := fs.Bool("warn-only", false, "")
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			fmt.Fprint(stdout, keysCmdHelp)
			return 0
		}
		return failf(stderr, "keys check: %v (see tcpsig keys -h)", err)
	}
	if fs.NArg() != 1 && fs.NArg() != 2 {
		return failf(stderr, "keys check: wants one FILE (and OTHER, the other end's, for a schedule; see tcpsig keys -h)")
	}
	path := fs.Arg(0)
	from := time.Now()
	if *at != "" {
		var err error
		if from, err = time.Parse(time.RFC3339Nano, *at); err != nil {
			return failf(stderr, "keys check: -at: want an RFC 3339 time, 2027-01-01T00:00:00Z say")
		}
	}
	var warnings []string
	warn := func(format string, a ...any) { warnings = append(warnings, fmt.Sprintf(format, a...)) }
	if err := keyfile.CheckMode(path); errors.Is(err, keyfile.ErrMode) || errors.Is(err, keyfile.ErrOwner) {
		warn("%v; tcpsig shim refuses it", err)
	} else if err != nil {
		return failf(stderr, "keys check: %v", err)
	}
	f, err := keyfile.Load(path)
	if err != nil {
		return failf(stderr, "keys check: %s: %v", path, err)
	}
	defer f.Wipe()
	errs, err := keyringErrors(f)
	if err != nil {
		return failf(stderr, "keys check: %v", err)
	}
	// Entries bound to a VRF, checked on this host as the shim checks them.
	switch err := shim.CheckIfIndexes(f); {
	case errors.Is(err, errors.ErrUnsupported):
		warn("%v: not checked on this system", err)
	case err != nil:
		errs = append(errs, splitJoined(err)...)
	}
	fmt.Fprintf(stdout, "%s: %d TCP-AO and %d TCP-MD5 entries\n", path, len(f.AO), len(f.MD5))
	printEntries(stdout, f)
	problems, schedWarnings, err := keysSchedule(stdout, f, fs.Arg(1), from)
	if err != nil {
		return failf(stderr, "keys check: %v", err)
	}
	errs, warnings = append(errs, problems...), append(warnings, schedWarnings...)
	if len(errs) > 0 {
		for _, e := range errs {
			fmt.Fprintf(stderr, "tcpsig keys check: %s\n", e)
		}
		return 2
	}
	warnings = append(warnings, algWarnings(f)...)
	warnings = append(warnings, mirrorWarnings(f)...)
	warnings = append(warnings, lintWarnings(f)...) // diagnose.Lint
	for _, w := range warnings {
		fmt.Fprintf(stdout, "warning: %s\n", w)
	}
	if len(warnings) > 0 {
		plural := "s"
		if len(warnings) == 1 {
			plural = ""
		}
		fmt.Fprintf(stdout, "%d warning%s\n", len(warnings), plural)
		if *warnOnly {
			return 0
		}
		return 1
	}
	fmt.Fprintln(stdout, "ok")
	return 0
}

// keyringErrors runs Linux's checks: every entry into a keyring of its
// kind, as the shim and a kernel socket take them (the keyrings mirror
// tcp_ao_add_key's and tcp_md5_do_add's refusals, overlapping prefixes
// with one KeyID among them). It returns each refusal, its entry named.
func keyringErrors(f *keyfile.File) ([]string, error) {
	pool, err := sigpool.New(sigpool.Config{})
	if err != nil {
		return nil, err
	}
	aoRing, md5Ring := ao.NewKeyring(pool), md5sig.NewKeyring(pool)
	var errs []string
	for i, e := range f.AO {
		if m, err := aoRing.Add(e.Config); err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", keyfile.Label("ao", i, e.Name), err))
		} else {
			defer aoRing.Delete(m, ao.DeleteOptions{})
		}
	}
	for i, e := range f.MD5 {
		if k, err := md5Ring.Add(e.Config); err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", keyfile.Label("md5", i, e.Name), err))
		} else {
			defer md5Ring.Delete(k, md5sig.DeleteOptions{})
		}
	}
	return errs, nil
}

// splitJoined returns the lines of err, one per error errors.Join joined.
func splitJoined(err error) []string {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []string
		for _, e := range j.Unwrap() {
			out = append(out, e.Error())
		}
		return out
	}
	return []string{err.Error()}
}

// printEntries lists f's entries, labelled, keys redacted.
func printEntries(w io.Writer, f *keyfile.File) {
	for i, e := range f.AO {
		fmt.Fprintf(w, "  %s: %v\n", keyfile.Label("ao", i, e.Name), e)
	}
	for i, e := range f.MD5 {
		fmt.Fprintf(w, "  %s: %v\n", keyfile.Label("md5", i, e.Name), e)
	}
}

// algWarnings warns of the TCP-AO entries a Linux peer would refuse: the
// draft's algorithms (no kernel has them) and those Linux 7.2 drops.
func algWarnings(f *keyfile.File) []string {
	var out []string
	for i, e := range f.AO {
		name := algName(e.Config.Algorithm)
		alg, _ := mac.Lookup(name)
		switch {
		case alg != nil && !alg.Linux():
			out = append(out, fmt.Sprintf("%s: %s is draft-ietf-tcpm-tcp-ao-algs's, which no Linux kernel accepts: only tcpsig can be its peer",
				keyfile.Label("ao", i, e.Name), name))
		case name == "cmac(aes)" && len(e.Config.Key) == 16:
		case !linux72[name]:
			out = append(out, fmt.Sprintf("%s: %s: Linux 7.2 (TCP-AO on the crypto library) accepts only cmac(aes128), hmac(sha1) and hmac(sha256): a peer on such a kernel refuses this key",
				keyfile.Label("ao", i, e.Name), name))
		}
	}
	return out
}

// algName is the algorithm's Linux name (or the draft's, lower case), as
// the registry knows it; the name as given when it does not.
func algName(name string) string {
	if a, err := mac.Lookup(name); err == nil {
		return a.Name()
	}
	return name
}

// mirrorWarnings finds the entries of a file that holds both ends of a
// session whose other end is missing or differs. An entry's mirror is
// configured on its peer: an entry whose peer is another prefix, with
// sndid and rcvid swapped (TCP-AO) and the same algorithm, key, MAC length
// and options flag. The hosts the file holds entries of are the peers of
// the entries that have a mirror; an entry whose peer is one of them and
// has no mirror is warned of, and so is one whose KeyIDs are mirrored but
// not the rest (the ends would not verify each other).
func mirrorWarnings(f *keyfile.File) []string {
	var out []string
	aoMirror := func(a, b keys.AO) (ids, all bool) {
		ids = a.SendID == b.RecvID && a.RecvID == b.SendID && a.Peer.Masked() != b.Peer.Masked()
		all = ids && algName(a.Algorithm) == algName(b.Algorithm) && bytes.Equal(a.Key, b.Key) &&
			a.MACLen == b.MACLen && a.ExcludeOptions == b.ExcludeOptions
		return ids, all
	}
	md5Mirror := func(a, b keys.MD5) bool {
		return a.Peer.Masked() != b.Peer.Masked() && bytes.Equal(a.Key, b.Key)
	}
	var hosts []netip.Prefix
	aoHas, md5Has := make([]bool, len(f.AO)), make([]bool, len(f.MD5))
	for i, a := range f.AO {
		for j, b := range f.AO {
			if _, all := aoMirror(a.Config, b.Config); i != j && all {
				aoHas[i] = true
				hosts = append(hosts, b.Config.Peer)
			}
		}
	}
	for i, a := range f.MD5 {
		for j, b := range f.MD5 {
			if i != j && md5Mirror(a.Config, b.Config) {
				md5Has[i] = true
				hosts = append(hosts, b.Config.Peer)
			}
		}
	}
	inFile := func(p netip.Prefix) bool {
		for _, h := range hosts {
			if h.Overlaps(p) {
				return true
			}
		}
		return false
	}
	for i, a := range f.AO {
		if aoHas[i] {
			continue
		}
		label := keyfile.Label("ao", i, a.Name)
		partial := false
		for j, b := range f.AO {
			if ids, _ := aoMirror(a.Config, b.Config); i != j && ids {
				partial = true
				out = append(out, fmt.Sprintf("%s and %s have mirrored KeyIDs (sndid %d, rcvid %d) but not the same alg, key, maclen and exclude_options: the two ends would not verify each other (%s)",
					label, keyfile.Label("ao", j, b.Name), a.Config.SendID, a.Config.RecvID, differs(diagnose.MirrorDiff(a.Config, b.Config))))
				break
			}
		}
		if !partial && inFile(a.Config.Peer) {
			out = append(out, fmt.Sprintf("%s: its peer %v has entries in the file but none mirrors this one (sndid %d, rcvid %d, the same key): the peer cannot verify what this end signs with it",
				label, a.Config.Peer, a.Config.RecvID, a.Config.SendID))
		}
	}
	for i, a := range f.MD5 {
		if !md5Has[i] && inFile(a.Config.Peer) {
			out = append(out, fmt.Sprintf("%s: its peer %v has entries in the file but no TCP-MD5 entry with the same key: the two ends would not verify each other",
				keyfile.Label("md5", i, a.Name), a.Config.Peer))
		}
	}
	return out
}

// runKeysGen is tcpsig keys gen.
func runKeysGen(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("keys gen", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var (
		a, b, alg, name, out, aOut, bOut string
		sndid, rcvid, size, maclen       uint
		useMD5, text                     bool
	)
	fs.StringVar(&a, "a", "", "end A's address or prefix")
	fs.StringVar(&b, "b", "", "end B's address or prefix")
	fs.StringVar(&alg, "alg", "hmac(sha256)", "TCP-AO algorithm")
	fs.BoolVar(&useMD5, "md5", false, "TCP-MD5 instead of TCP-AO")
	fs.UintVar(&sndid, "sndid", 1, "the KeyID A sends (B's rcvid)")
	fs.UintVar(&rcvid, "rcvid", 2, "the KeyID A receives (B's sndid)")
	fs.UintVar(&size, "bytes", 0, "key length")
	fs.UintVar(&maclen, "maclen", 0, "MAC length")
	fs.BoolVar(&text, "text", false, "a printable key")
	fs.StringVar(&name, "name", "", "the entries' name")
	fs.StringVar(&out, "o", "", "file for both ends' entries")
	fs.StringVar(&aOut, "a-file", "", "file for A's own entry")
	fs.StringVar(&bOut, "b-file", "", "file for B's own entry")
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			fmt.Fprint(stdout, keysCmdHelp)
			return 0
		}
		return failf(stderr, "keys gen: %v (see tcpsig keys -h)", err)
	}
	if fs.NArg() > 0 {
		return failf(stderr, "keys gen: unexpected argument %q (see tcpsig keys -h)", fs.Arg(0))
	}
	if out == "" && aOut == "" && bOut == "" {
		return failf(stderr, "keys gen: needs -o FILE, -a-file FILE or -b-file FILE: keys go to a file of mode 0600, never to the terminal")
	}
	pa, pb, err := parseEnds(a, b)
	if err != nil {
		return failf(stderr, "keys gen: %v", err)
	}
	if sndid > 255 || rcvid > 255 {
		return failf(stderr, "keys gen: -sndid %d -rcvid %d: want 0..255", sndid, rcvid)
	}
	key, algo, err := genKey(alg, useMD5, int(size), text)
	if err != nil {
		return failf(stderr, "keys gen: %v", err)
	}
	defer clear(key)
	var fa, fb keyfile.File // A's own entry (peer B) and B's (peer A)
	if useMD5 {
		fa.MD5 = []keyfile.MD5{{Name: name, Config: keys.MD5{Peer: pb, Key: key}, Text: text}}
		fb.MD5 = []keyfile.MD5{{Name: name, Config: keys.MD5{Peer: pa, Key: key}, Text: text}}
	} else {
		mk := func(peer netip.Prefix, s, r uint) keyfile.AO {
			return keyfile.AO{Name: name, Config: keys.AO{Peer: peer, SendID: uint8(s), RecvID: uint8(r), Algorithm: algo.Name(),
				Key: key, MACLen: int(maclen)}, Text: text}
		}
		fa.AO = []keyfile.AO{mk(pb, sndid, rcvid)}
		fb.AO = []keyfile.AO{mk(pa, rcvid, sndid)}
	}
	both := keyfile.File{AO: append(fa.AO, fb.AO...), MD5: append(fa.MD5, fb.MD5...)}
	for _, t := range []struct {
		path, what string
		f          *keyfile.File
	}{{out, "both ends", &both}, {aOut, "end A (" + pa.String() + ")", &fa}, {bOut, "end B (" + pb.String() + ")", &fb}} {
		if t.path == "" {
			continue
		}
		if err := writeKeysFile(t.path, t.f); err != nil {
			return failf(stderr, "keys gen: %v", err)
		}
		fmt.Fprintf(stdout, "wrote %s (mode 0600): %s\n", t.path, t.what)
		printEntries(stdout, t.f)
	}
	return 0
}

// genKey makes a key from crypto/rand: size bytes, or as long as the
// MAC's own key (the digest for HMAC, 16 bytes for AES-128-CMAC, 32 for
// the draft's; 32 for TCP-MD5); printable with text. It returns the
// algorithm too (nil for TCP-MD5).
func genKey(alg string, useMD5 bool, size int, text bool) ([]byte, *mac.Algorithm, error) {
	var algo *mac.Algorithm
	n := size
	if !useMD5 {
		var err error
		if algo, err = mac.Lookup(alg); err != nil {
			// Not the name as given: it may be a key pasted into the
			// wrong flag.
			return nil, nil, fmt.Errorf("-alg: unknown algorithm: want one of %s", strings.Join(mac.Names(), ", "))
		}
		if n == 0 {
			n = max(algo.Size(), algo.MinMasterKey())
			if algo.IsCMAC() {
				n = 16
			}
		}
	} else if n == 0 {
		n = 32
	}
	if n < 1 || n > keys.MaxKeyLen {
		return nil, nil, fmt.Errorf("-bytes %d: want 1..%d", n, keys.MaxKeyLen)
	}
	key, err := keychain.NewKey(rand.Reader, n, text) // text: 6 bits of crypto/rand a character, for a router's password prompt
	if err != nil {
		return nil, nil, err
	}
	return key, algo, nil
}

// writeKeysFile writes f as a new keys file of mode 0600, wiping the
// marshalled bytes after.
func writeKeysFile(path string, f *keyfile.File) error {
	body, err := f.Marshal()
	if err != nil {
		return err
	}
	defer clear(body)
	return writeNew0600(path, body)
}

// parseEnds parses -a and -b: two ends of one family that do not overlap.
func parseEnds(a, b string) (pa, pb netip.Prefix, err error) {
	if pa, err = parsePeer(a); err != nil {
		return pa, pb, fmt.Errorf("-a: %w", err)
	}
	if pb, err = parsePeer(b); err != nil {
		return pa, pb, fmt.Errorf("-b: %w", err)
	}
	if pa.Addr().Is4() != pb.Addr().Is4() || pa.Overlaps(pb) {
		return pa, pb, fmt.Errorf("-a %v and -b %v: want two ends of one family that do not overlap", pa, pb)
	}
	return pa, pb, nil
}

// parsePeer parses an address (a host prefix) or a prefix with host bits
// zero.
func parsePeer(s string) (netip.Prefix, error) {
	if s == "" {
		return netip.Prefix{}, errors.New("required: an address or prefix")
	}
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return p, err
		}
		if p != p.Masked() {
			return p, fmt.Errorf("%v has host bits set (want %v)", p, p.Masked())
		}
		return p, nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// writeNew0600 creates path with mode 0600 whatever the umask and writes
// b to it; an existing file is an error and stays as it was.
func writeNew0600(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		if errors.Is(err, os.ErrExist) {
			return fmt.Errorf("%s exists: not overwritten (keys go to new files only)", path)
		}
		return err
	}
	if err := f.Chmod(0o600); err != nil { // the umask may have taken bits; never more than 0600
		f.Close()
		os.Remove(path)
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		os.Remove(path)
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

const keysCmdHelp = `usage: tcpsig keys check [-warn-only] [-at TIME] FILE [OTHER]
       tcpsig keys gen -a ADDR -b ADDR [-alg NAME | -md5] [-sndid N] [-rcvid N]
                       [-bytes N] [-maclen N] [-text] [-name NAME]
                       [-o FILE] [-a-file FILE] [-b-file FILE]
       tcpsig keys rotate FILE -peer P [-at TIME] [-overlap D]
                          [-mirror OTHER | -self ADDR -mirror-out NEW]
       tcpsig keys import DOC -chain NAME=PEER[,PEER…] … -o FILE
       tcpsig keys export FILE -o DOC

keys check reads a keys file (tcpsig help keys) as the shim does: the file's
own checks, then every entry into a keyring of its kind, which refuses what
Linux's TCP_AO_ADD_KEY and TCP_MD5SIG refuse (overlapping peers with one
KeyID among them). It prints every entry, keys redacted, and warns of a file
that group or others may read or write or that a user other than root and
the one running it owns (the shim refuses both), of TCP-AO algorithms Linux
7.2 no longer accepts (it keeps cmac(aes128), hmac(sha1) and hmac(sha256)) and of the draft's, which no kernel has, and, in a file that
holds both ends of sessions, of an entry with no mirror on its peer's side
(sndid and rcvid swapped, the same algorithm, key, maclen and
exclude_options) or one whose KeyIDs mirror but not the rest. It warns too
of what a peer reads another way (a key with whitespace or a newline at
either end, a text: key that is all hex digits), of one secret under two
algorithms, and, when no two entries mirror, of an entry that has another
one's secret for another peer but is not its mirror (the field that
differs named). -warn-only: warnings do not make the exit status 1. An
entry bound to a VRF ("ifindex": N, N > 0) must name a VRF device of the
host (of the network namespace) it is checked on, as the shim and Linux
require.

When entries have lifetimes (tcpsig help keys), check prints each such
peer's timeline from now (or -at TIME) on: span by span, which keys send and
which are accepted. A moment at which no key of a peer sends is an error
(exit 2); given OTHER, the keys file of the other ends, so is a moment at
which a key sends and OTHER accepts no mirror of it (either way round). An
accept tolerance smaller than the file's clock_skew is a warning.

keys gen makes a key from crypto/rand for a session between ends A and B
and writes the two ends' entries, mirrored: A's (peer B, sndid N, rcvid M)
and B's (peer A, sndid M, rcvid N), to new files of mode 0600 (an existing
file is not overwritten); it prints them redacted, never the key.

keys rotate adds a new key for peer P to FILE and its mirror to OTHER (the
other end's file, -mirror), to a new file NEW of the other end's entries
for P's keys, the old ones' mirrors included (-mirror-out, with -self ADDR,
this end's address: for a peer that has no keys file, a router whose
password is typed in), or to FILE itself when FILE holds both ends: the
new key sends from -at TIME (RFC 3339; default now plus the overlap) and is
accepted from TIME minus -overlap D (default 1h); the key that sent before
stops sending at TIME and is accepted until TIME plus D. The new key has
the old one's length, algorithm, MAC length and options, is printable when
the old one is, and takes the next KeyIDs no entry of either file uses for
the peer. Both files are rewritten whole (mode 0600), and the timeline
printed: for example

  tcpsig keys rotate a.json -peer 192.0.2.2 -mirror b.json -at 2027-01-10T00:00:00Z -overlap 1h

keys import reads an ietf-key-chain document (RFC 8177 with RFC 9648's
TCP-AO/TCP-MD5 augment, RFC 7951 JSON, as NETCONF and RESTCONF servers and
FRR's management daemon write it) and writes, to a new keys file, an entry
per key of each chain named by -chain for each of its peers, named
CHAIN/KEY-ID. keys export writes a keys file as such a document (a new file
of mode 0600: it holds the keys) and prints each chain's peers as -chain
flags, which a key chain cannot hold. What either model cannot say (an
algorithm the YANG modules name no identity for, KMAC say; a MAC length
other than 12; an ifindex) is an error, never a substitution.

Flags of gen:

  -a ADDR, -b ADDR  the two ends: addresses, or prefixes with host bits zero
  -alg NAME         the TCP-AO algorithm (default hmac(sha256)): a Linux,
                    RFC 5926 or draft-ietf-tcpm-tcp-ao-algs name
  -md5              a TCP-MD5 key instead (no KeyIDs)
  -sndid N          the KeyID A sends and B receives (default 1)
  -rcvid M          the KeyID A receives and B sends (default 2)
  -bytes N          the key's length (default: the MAC's own key: the digest
                    for HMAC, 16 for AES-128-CMAC, 32 for the draft's and
                    TCP-MD5)
  -maclen N         the MAC length (default: the algorithm's, 12 or 16)
  -text             a printable key (6 bits of crypto/rand per character),
                    for a router that takes a password, written as "text:…";
                    default raw bytes, written as "hex:…"
  -name NAME        the entries' name
  -o FILE           both ends' entries in one file (for tcpsig verify and
                    keys check)
  -a-file FILE      A's own entry: the file A's shim or daemon loads
  -b-file FILE      B's own entry

Exit status: check: 0 the file is sound, 1 warnings, 2 it does not load, a
keyring refuses an entry (named, never the key) or its schedule has a hole;
gen, rotate, import, export: 0, or 2 on an error.

Examples (from a clone of the repository):

  tcpsig keys check cmd/tcpsig/testdata/demo.keys.json
  tcpsig keys gen -a 192.0.2.1 -b 192.0.2.2 -alg 'hmac(sha256)' -a-file a.json -b-file b.json
`
