package diagnose

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/tcpsig/tcpsig/keyfile"
	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/mac"
)

// Finding is a mistake Lint sees in a keys file: the entry (as ao[2] or
// ao[2] ("name")), the field to change and what to do.
type Finding struct {
	Entry   string
	Field   string
	Message string
}

// String is "entry: message".
func (f Finding) String() string { return f.Entry + ": " + f.Message }

// Lint finds what a keys file shows wrong without a capture: a key with
// whitespace or a newline at either end, a key of hex digits written as
// text, one secret under two algorithms and, when no two "ao" entries
// mirror each other (one end's sndid the other's rcvid, and the rest the
// same; not even the KeyIDs), an entry whose likely other end (the entry
// with its secret) differs from its mirror: the field, when it is one. The findings never
// hold a key byte.
func Lint(kf *keyfile.File) []Finding {
	if kf == nil {
		return nil
	}
	var out []Finding
	for i, e := range kf.AO {
		out = append(out, keyFindings(label("ao", i, e.Name), e.Config.Key)...)
	}
	for i, e := range kf.MD5 {
		out = append(out, keyFindings(label("md5", i, e.Name), e.Config.Key)...)
	}
	out = append(out, mirrorFindings(kf)...)
	return append(out, algFindings(kf, out)...)
}

// keyFindings lints one secret.
func keyFindings(entry string, key []byte) []Finding {
	var out []Finding
	if t := bytes.TrimSpace(key); len(t) != len(key) && typed(key) {
		out = append(out, Finding{entry, "key", `the key starts or ends with whitespace or a newline, which a peer configured by hand does not have: remove it`})
	}
	if d, ok := hexDigits(key); ok && len(key) >= 8 {
		clear(d)
		out = append(out, Finding{entry, "key", fmt.Sprintf(`the key is %d hex digits taken as text: if the peer has them as hex, write "hex:" and the same digits`, len(key))})
	}
	return out
}

// typed reports whether key reads as typed text: printable ASCII and
// whitespace only. A key of random bytes (keys gen's hex: keys) may start
// or end with a byte that is a space without anyone having typed it.
func typed(key []byte) bool {
	for _, b := range key {
		if (b < 0x20 || b > 0x7e) && b != '\t' && b != '\n' && b != '\r' {
			return false
		}
	}
	return true
}

// MirrorDiff names the fields in which b is not the mirror of a (b's
// rcvid a's sndid and the reverse, the same alg, key, maclen and
// exclude_options); an entry's mirror is its peer's entry for it. KeyIDs
// swapped on one end read "sndid and rcvid swapped".
func MirrorDiff(a, b keys.AO) []string {
	var d []string
	switch {
	case a.SendID == b.RecvID && a.RecvID == b.SendID:
	case a.SendID == b.SendID && a.RecvID == b.RecvID:
		d = append(d, "sndid and rcvid swapped")
	default:
		if a.SendID != b.RecvID {
			d = append(d, "rcvid")
		}
		if a.RecvID != b.SendID {
			d = append(d, "sndid")
		}
	}
	if algName(a.Algorithm) != algName(b.Algorithm) {
		d = append(d, "alg")
	}
	if !bytes.Equal(a.Key, b.Key) {
		d = append(d, "key")
	}
	if a.MACLen != b.MACLen {
		d = append(d, "maclen")
	}
	if a.ExcludeOptions != b.ExcludeOptions {
		d = append(d, "exclude_options")
	}
	return d
}

// algName is an algorithm's Linux name, or the name as given.
func algName(name string) string {
	if a, err := mac.Lookup(name); err == nil {
		return a.Name()
	}
	return name
}

// mirrorFindings: when no two "ao" entries for different peers have
// mirrored KeyIDs, each entry that shares its secret with an entry for
// another peer (its likely other end) is named with the fields they
// differ in.
func mirrorFindings(kf *keyfile.File) []Finding {
	for i, a := range kf.AO {
		for j, b := range kf.AO {
			if i != j && a.Config.Peer != b.Config.Peer && a.Config.SendID == b.Config.RecvID && a.Config.RecvID == b.Config.SendID {
				return nil // the file holds both ends: the KeyIDs pair them, and the pairs are checked by their peers
			}
		}
	}
	var out []Finding
	for j, b := range kf.AO {
		for i, a := range kf.AO[:j] {
			if a.Config.Peer == b.Config.Peer || !bytes.Equal(a.Config.Key, b.Config.Key) {
				continue
			}
			d := MirrorDiff(a.Config, b.Config)
			la, lb := label("ao", i, a.Name), label("ao", j, b.Name)
			if len(d) == 1 {
				out = append(out, Finding{lb, d[0], fmt.Sprintf("it has %s's secret for another peer, but is not its mirror: %s differs: make the two ends agree",
					la, d[0])})
				continue
			}
			out = append(out, Finding{lb, "", fmt.Sprintf("it has %s's secret for another peer, but no entry mirrors either (they differ in %s): give the other end sndid %d, rcvid %d and the same alg, key, maclen and exclude_options",
				la, strings.Join(d, ", "), a.Config.RecvID, a.Config.SendID)})
		}
	}
	return out
}

// algFindings names "ao" entries with one secret under two algorithms,
// but for pairs that earlier findings name by their "alg" already.
func algFindings(kf *keyfile.File, earlier []Finding) []Finding {
	var out []Finding
	for j, b := range kf.AO {
		for i, a := range kf.AO[:j] {
			if !bytes.Equal(a.Config.Key, b.Config.Key) || algName(a.Config.Algorithm) == algName(b.Config.Algorithm) {
				continue
			}
			lb := label("ao", j, b.Name)
			if containsFinding(earlier, lb, "alg") {
				continue
			}
			out = append(out, Finding{lb, "alg", fmt.Sprintf("the same secret as %s under %s, not %s: one of the two algorithms is likely wrong",
				label("ao", i, a.Name), algName(b.Config.Algorithm), algName(a.Config.Algorithm))})
			break
		}
	}
	return out
}

// containsFinding reports whether fs names entry's field.
func containsFinding(fs []Finding, entry, field string) bool {
	for _, f := range fs {
		if f.Entry == entry && f.Field == field {
			return true
		}
	}
	return false
}
