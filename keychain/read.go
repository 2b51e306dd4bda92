package keychain

import (
	"encoding/hex"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/tcpsig/tcpsig/keys"
)

// Parse reads an ietf-key-chain document (RFC 7951 JSON) and checks it
// against the model: every key's identity, key string, TCP-AO IDs and
// lifetimes, unique names and key-ids, and no two keys of a chain with
// the same send-id (TCP-AO) or both TCP-MD5 whose send lifetimes overlap.
// Errors are [*Error]s naming the data path.
func Parse(doc []byte) ([]Chain, error) {
	d, err := decode(doc)
	if err != nil {
		return nil, err
	}
	if w := d.KeyChains.AESKeyWrap; w != nil && w.Enable {
		return nil, errorf(rootPath+"/aes-key-wrap", ErrUnsupported, "AES key wrap of key strings is not supported")
	}
	var chains []Chain
	seen := map[string]bool{}
	for _, cj := range d.KeyChains.KeyChain {
		if seen[cj.Name] {
			Wipe(chains)
			return nil, errorf(chainPath(cj.Name), ErrModel, "a second key-chain with this name")
		}
		seen[cj.Name] = true
		c, err := readChain(cj)
		if err != nil {
			Wipe(chains)
			return nil, err
		}
		chains = append(chains, c)
	}
	return chains, nil
}

// readChain reads one key chain.
func readChain(cj chainJSON) (Chain, error) {
	c := Chain{Name: cj.Name}
	if cj.Name == "" {
		return c, errorf(rootPath+"/key-chain", ErrModel, "a key-chain without a name")
	}
	if t := cj.AcceptTolerance; t != nil && len(t.Duration) > 0 {
		n, err := strconv.ParseUint(string(t.Duration), 10, 32) // RFC 7951: a uint32 is a number, not a string
		if err != nil {
			return c, errorf(chainPath(c.Name)+"/accept-tolerance/duration", ErrModel, "not a uint32 of seconds")
		}
		c.Tolerance = time.Duration(n) * time.Second
	}
	ids := map[uint64]bool{}
	for _, kj := range cj.Key {
		k, err := readKey(c.Name, kj)
		if err != nil {
			Wipe([]Chain{c})
			return c, err
		}
		if ids[k.ID] {
			clear(k.Key)
			Wipe([]Chain{c})
			return c, errorf(keyPath(c.Name, strconv.FormatUint(k.ID, 10)), ErrModel, "a second key with this key-id")
		}
		ids[k.ID] = true
		k.Lifetime.Tolerance = c.Tolerance
		c.Keys = append(c.Keys, k)
	}
	if err := sendClash(c); err != nil {
		Wipe([]Chain{c})
		return c, err
	}
	return c, nil
}

// sendClash refuses two keys of c that would both sign at one moment
// with nothing on the wire to tell them apart: two TCP-AO keys with the
// same send-id, or two TCP-MD5 keys, whose send lifetimes overlap.
func sendClash(c Chain) error {
	for i, k := range c.Keys {
		for _, o := range c.Keys[:i] {
			if k.MD5 != o.MD5 || !k.Lifetime.Send.Overlaps(o.Lifetime.Send) {
				continue
			}
			id := strconv.FormatUint(k.ID, 10)
			if k.MD5 {
				return errorf(keyPath(c.Name, id)+"/lifetime", ErrModel,
					"TCP-MD5 key %d's send lifetime overlaps key %d's: two keys would sign at once", k.ID, o.ID)
			}
			if k.SendID == o.SendID {
				return errorf(keyPath(c.Name, id)+"/ietf-tcp:authentication/ao/send-id", ErrModel,
					"send-id %d is also key %d's, and their send lifetimes overlap", k.SendID, o.ID)
			}
		}
	}
	return nil
}

// readKey reads one key of the chain called chain.
func readKey(chain string, kj keyJSON) (Key, error) {
	var k Key
	idText := strings.Trim(string(kj.KeyID), `" `)
	path := keyPath(chain, idText)
	id, err := strconv.ParseUint(idText, 10, 64)
	if err != nil || len(kj.KeyID) == 0 {
		return k, errorf(path+"/key-id", ErrModel, "not a uint64")
	}
	k.ID = id
	alg, ok := identity(kj.CryptoAlgorithm)
	if !ok {
		return k, errorf(path+"/crypto-algorithm", ErrModel, "%s", unknownIdentity(kj.CryptoAlgorithm))
	}
	if k.Lifetime, err = readLifetime(path+"/lifetime", kj.Lifetime); err != nil {
		return k, err
	}
	if err := readAuth(path, kj.Auth, alg, &k); err != nil {
		return k, err
	}
	if k.Key, err = readKeyString(path+"/key-string", kj.KeyString); err != nil {
		return k, err
	}
	return k, nil
}

// unknownIdentity words the error of a crypto-algorithm value that maps
// to no TCP algorithm; the value is an identity, never a key, but only a
// known one is named.
func unknownIdentity(v string) string {
	switch strings.TrimPrefix(v, "ietf-key-chain:") {
	case "sha-1", "cleartext", "replay-protection-only":
		return v + " is not an algorithm TCP-AO or TCP-MD5 can use"
	case "":
		return "missing (mandatory)"
	}
	return "unknown identity (known: hmac-sha-1, hmac-sha-1-12, hmac-sha-256, hmac-sha-384, hmac-sha-512, aes-cmac-prf-128, ietf-tcp:aes-128, md5)"
}

// readAuth reads the ietf-tcp augment into k, given the algorithm alg
// ("md5" for TCP-MD5).
func readAuth(path string, a *authJSON, alg string, k *Key) error {
	path += "/ietf-tcp:authentication"
	if alg == "md5" {
		if a != nil && a.AO != nil {
			return errorf(path+"/ao", ErrModel, "crypto-algorithm md5 is TCP-MD5's, not TCP-AO's")
		}
		k.MD5 = true
		return nil
	}
	if a == nil || a.AO == nil {
		if a != nil && a.MD5 != nil {
			return errorf(path+"/md5", ErrModel, "TCP-MD5 with a crypto-algorithm other than md5")
		}
		return errorf(path+"/ao", ErrModel, "missing: a TCP-AO key needs its send-id and recv-id (RFC 9648)")
	}
	k.Algorithm = alg
	for _, f := range []struct {
		name string
		v    json.RawMessage
		dst  *uint8
	}{{"send-id", a.AO.SendID, &k.SendID}, {"recv-id", a.AO.RecvID, &k.RecvID}} {
		if len(f.v) == 0 {
			return errorf(path+"/ao/"+f.name, ErrModel, "missing")
		}
		// RFC 7951 §6.1: a uint8 is a JSON number, never a string.
		n, err := strconv.ParseInt(string(f.v), 10, 64)
		if err != nil {
			return errorf(path+"/ao/"+f.name, ErrModel, "not a uint8 (a JSON number, 0..255)")
		}
		if n < 0 || n > math.MaxUint8 {
			return errorf(path+"/ao/"+f.name, ErrModel, "%d is not a uint8 (0..255)", n)
		}
		*f.dst = uint8(n)
	}
	if a.AO.IncludeTCPOptions != nil {
		k.ExcludeOptions = !*a.AO.IncludeTCPOptions
	}
	if a.AO.AcceptKeyMismatch != nil && *a.AO.AcceptKeyMismatch {
		return errorf(path+"/ao/accept-key-mismatch", ErrUnsupported, "tcpsig never accepts a segment whose key it does not have")
	}
	return nil
}

// readKeyString reads a key-string: ASCII, or yang:hex-string (octets as
// two hex digits, colon-separated). Errors never quote it.
func readKeyString(path string, ks *keyStringJSON) ([]byte, error) {
	switch {
	case ks == nil || ks.Keystring == nil && ks.Hex == nil:
		return nil, errorf(path, ErrModel, "missing: a key needs its key string")
	case ks.Keystring != nil && ks.Hex != nil:
		return nil, errorf(path, ErrModel, "keystring and hexadecimal-string are cases of one choice")
	case ks.Keystring != nil:
		b := []byte(*ks.Keystring)
		if len(b) == 0 || len(b) > keys.MaxKeyLen {
			return nil, errorf(path+"/keystring", ErrModel, "%d bytes, want 1..%d", len(b), keys.MaxKeyLen)
		}
		return b, nil
	}
	h := *ks.Hex
	if len(h) == 0 || (len(h)+1)%3 != 0 {
		return nil, errorf(path+"/hexadecimal-string", ErrModel, "not a yang:hex-string (octets as two hex digits, separated by colons)")
	}
	b := make([]byte, (len(h)+1)/3)
	for i := range b {
		_, err := hex.Decode(b[i:i+1], []byte(h[3*i:3*i+2]))
		if err != nil || i > 0 && h[3*i-1] != ':' {
			clear(b)
			return nil, errorf(path+"/hexadecimal-string", ErrModel, "not a yang:hex-string (octets as two hex digits, separated by colons)")
		}
	}
	if len(b) > keys.MaxKeyLen {
		clear(b)
		return nil, errorf(path+"/hexadecimal-string", ErrModel, "%d bytes, want 1..%d", len(b), keys.MaxKeyLen)
	}
	return b, nil
}

// readLifetime reads a key's lifetime container: none is "always".
func readLifetime(path string, l *lifetimeJSON) (keys.Lifetime, error) {
	var out keys.Lifetime
	if l == nil {
		return out, nil
	}
	if l.SendAccept != nil && (l.Send != nil || l.Accept != nil) {
		return out, errorf(path, ErrModel, "send-accept-lifetime and send-lifetime/accept-lifetime are cases of one choice")
	}
	if l.SendAccept != nil {
		w, err := readWindow(path+"/send-accept-lifetime", l.SendAccept)
		out.Send, out.Accept = w, w
		return out, err
	}
	var err error
	if l.Send != nil {
		if out.Send, err = readWindow(path+"/send-lifetime", l.Send); err != nil {
			return out, err
		}
	}
	if l.Accept != nil {
		if out.Accept, err = readWindow(path+"/accept-lifetime", l.Accept); err != nil {
			return out, err
		}
	}
	return out, nil
}

// readWindow reads one lifetime (RFC 8177's lifetime grouping).
func readWindow(path string, w *windowJSON) (keys.Window, error) {
	var out keys.Window
	ends := 0
	for _, set := range []bool{bool(w.NoEnd), len(w.Duration) > 0, w.End != ""} {
		if set {
			ends++
		}
	}
	switch {
	case bool(w.Always) && (w.Start != "" || ends > 0):
		return out, errorf(path, ErrModel, "always and start-date-time/end are cases of one choice")
	case ends > 1:
		return out, errorf(path, ErrModel, "no-end-time, duration and end-date-time are cases of one choice")
	case bool(w.Always):
		return out, nil
	}
	var err error
	if w.Start != "" {
		if out.Start, err = dateTime(path+"/start-date-time", w.Start); err != nil {
			return out, err
		}
	}
	switch {
	case w.End != "":
		if out.End, err = dateTime(path+"/end-date-time", w.End); err != nil {
			return out, err
		}
	case len(w.Duration) > 0:
		n, err := strconv.ParseUint(string(w.Duration), 10, 32)
		if err != nil || n < 1 || n > 2147483646 {
			return out, errorf(path+"/duration", ErrModel, "not in 1..2147483646 seconds")
		}
		if out.Start.IsZero() {
			return out, errorf(path+"/duration", ErrModel, "a duration without a start-date-time")
		}
		out.End = out.Start.Add(time.Duration(n) * time.Second)
	}
	if !out.Start.IsZero() && !out.End.IsZero() && !out.Start.Before(out.End) {
		return out, errorf(path+"/end-date-time", ErrModel, "not after the start-date-time")
	}
	return out, nil
}

// dateTime parses a yang:date-and-time (RFC 3339), into UTC.
func dateTime(path, s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return t, errorf(path, ErrModel, "not a yang:date-and-time (RFC 3339, e.g. 2026-12-01T00:00:00Z)")
	}
	return t.UTC(), nil
}
