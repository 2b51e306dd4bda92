package keychain

import (
	"encoding/hex"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/tcpsig/tcpsig/keys"
)

// Marshal writes chains as an ietf-key-chain document (RFC 7951 JSON,
// indented), keys included: what it writes is a secret. It refuses what
// the model cannot say (an algorithm without an identity, a tolerance
// that is not whole seconds) and what [Parse] would refuse, so that Parse
// of its output gives chains back.
func Marshal(chains []Chain) ([]byte, error) {
	doc := document{KeyChains: &keyChains{}}
	for _, c := range chains {
		cj := chainJSON{Name: c.Name}
		if c.Tolerance%time.Second != 0 || c.Tolerance < 0 || c.Tolerance > keys.MaxTolerance {
			return nil, errorf(chainPath(c.Name)+"/accept-tolerance", ErrUnrepresentable, "%v is not a uint32 of seconds", c.Tolerance)
		}
		if c.Tolerance != 0 {
			cj.AcceptTolerance = &toleranceJSON{Duration: json.RawMessage(strconv.FormatInt(int64(c.Tolerance/time.Second), 10))}
		}
		for _, k := range c.Keys {
			kj, err := writeKey(c.Name, k)
			if err != nil {
				return nil, err
			}
			cj.Key = append(cj.Key, kj)
		}
		doc.KeyChains.KeyChain = append(doc.KeyChains.KeyChain, cj)
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, errorf("", ErrUnrepresentable, "%v", err)
	}
	b = append(b, '\n')
	back, err := Parse(b)
	Wipe(back)
	if err != nil {
		clear(b)
		return nil, err
	}
	return b, nil
}

// writeKey is one key's JSON.
func writeKey(chain string, k Key) (keyJSON, error) {
	path := keyPath(chain, strconv.FormatUint(k.ID, 10))
	kj := keyJSON{KeyID: json.RawMessage(strconv.Quote(strconv.FormatUint(k.ID, 10)))}
	if k.MD5 {
		kj.CryptoAlgorithm = "md5"
		kj.Auth = &authJSON{MD5: &struct{}{}}
	} else {
		id, ok := toIdentity[k.Algorithm]
		if !ok {
			return kj, errorf(path+"/crypto-algorithm", ErrUnrepresentable,
				"%s has no identity in ietf-key-chain or ietf-tcp (they name hmac(sha1), hmac(sha256), hmac(sha384), hmac(sha512) and cmac(aes128))", k.Algorithm)
		}
		kj.CryptoAlgorithm = id
		include := !k.ExcludeOptions
		kj.Auth = &authJSON{AO: &aoJSON{SendID: json.RawMessage(strconv.Itoa(int(k.SendID))),
			RecvID: json.RawMessage(strconv.Itoa(int(k.RecvID))), IncludeTCPOptions: &include}}
	}
	if len(k.Key) == 0 {
		return kj, errorf(path+"/key-string", ErrUnrepresentable, "no key")
	}
	if printable(k.Key) {
		s := string(k.Key)
		kj.KeyString = &keyStringJSON{Keystring: &s}
	} else {
		s := hexString(k.Key)
		kj.KeyString = &keyStringJSON{Hex: &s}
	}
	l := k.Lifetime
	switch {
	case !l.Scheduled():
	case l.Send.Start.Equal(l.Accept.Start) && l.Send.End.Equal(l.Accept.End):
		kj.Lifetime = &lifetimeJSON{SendAccept: writeWindow(l.Send)}
	default:
		kj.Lifetime = &lifetimeJSON{Send: writeWindow(l.Send), Accept: writeWindow(l.Accept)}
	}
	return kj, nil
}

// writeWindow is one lifetime's JSON: always, a start with no end, or an
// end.
func writeWindow(w keys.Window) *windowJSON {
	if w.IsZero() {
		return &windowJSON{Always: true}
	}
	var out windowJSON
	if !w.Start.IsZero() {
		out.Start = w.Start.UTC().Format(time.RFC3339Nano)
	}
	if w.End.IsZero() {
		out.NoEnd = true
	} else {
		out.End = w.End.UTC().Format(time.RFC3339Nano)
	}
	return &out
}

// printable reports whether b is printable ASCII, which a keystring (a
// router's password) carries as it is.
func printable(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c > 0x7e {
			return false
		}
	}
	return true
}

// hexString is b as a yang:hex-string: 00:11:22.
func hexString(b []byte) string {
	var s strings.Builder
	for i, c := range b {
		if i > 0 {
			s.WriteByte(':')
		}
		s.WriteString(hex.EncodeToString([]byte{c}))
	}
	return s.String()
}
