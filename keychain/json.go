package keychain

import (
	"bytes"
	"encoding/json"
	"errors"
)

// The document's JSON (RFC 7951): the nodes of ietf-key-chain and the
// ietf-tcp augment that this package reads and writes. Operational state
// (config false) that a server may include is read and ignored.

type document struct {
	KeyChains *keyChains `json:"ietf-key-chain:key-chains"`
}

type keyChains struct {
	KeyChain   []chainJSON `json:"key-chain"`
	AESKeyWrap *struct {
		Enable bool `json:"enable"`
	} `json:"aes-key-wrap,omitempty"`
}

type chainJSON struct {
	Name            string          `json:"name"`
	Description     string          `json:"description,omitempty"`
	AcceptTolerance *toleranceJSON  `json:"accept-tolerance,omitempty"`
	LastModified    json.RawMessage `json:"last-modified-timestamp,omitempty"`
	Key             []keyJSON       `json:"key"`
}

type toleranceJSON struct {
	Duration json.RawMessage `json:"duration,omitempty"`
}

type keyJSON struct {
	KeyID           json.RawMessage `json:"key-id"`
	Lifetime        *lifetimeJSON   `json:"lifetime,omitempty"`
	CryptoAlgorithm string          `json:"crypto-algorithm"`
	KeyString       *keyStringJSON  `json:"key-string,omitempty"`
	SendActive      json.RawMessage `json:"send-lifetime-active,omitempty"`
	AcceptActive    json.RawMessage `json:"accept-lifetime-active,omitempty"`
	Auth            *authJSON       `json:"ietf-tcp:authentication,omitempty"`
}

type lifetimeJSON struct {
	SendAccept *windowJSON `json:"send-accept-lifetime,omitempty"`
	Send       *windowJSON `json:"send-lifetime,omitempty"`
	Accept     *windowJSON `json:"accept-lifetime,omitempty"`
}

type windowJSON struct {
	Always   empty           `json:"always,omitempty"`
	Start    string          `json:"start-date-time,omitempty"`
	NoEnd    empty           `json:"no-end-time,omitempty"`
	Duration json.RawMessage `json:"duration,omitempty"`
	End      string          `json:"end-date-time,omitempty"`
}

type keyStringJSON struct {
	Keystring *string `json:"keystring,omitempty"`
	Hex       *string `json:"hexadecimal-string,omitempty"`
}

type authJSON struct {
	Keychain string    `json:"keychain,omitempty"`
	AO       *aoJSON   `json:"ao,omitempty"`
	MD5      *struct{} `json:"md5,omitempty"`
}

type aoJSON struct {
	SendID            json.RawMessage `json:"send-id,omitempty"`
	RecvID            json.RawMessage `json:"recv-id,omitempty"`
	IncludeTCPOptions *bool           `json:"include-tcp-options,omitempty"`
	AcceptKeyMismatch *bool           `json:"accept-key-mismatch,omitempty"`
}

// empty is a leaf of type empty: [null] in RFC 7951 JSON, false when
// absent.
type empty bool

// MarshalJSON writes [null].
func (e empty) MarshalJSON() ([]byte, error) { return []byte("[null]"), nil }

// UnmarshalJSON takes [null] only.
func (e *empty) UnmarshalJSON(b []byte) error {
	if !bytes.Equal(bytes.Join(bytes.Fields(b), nil), []byte("[null]")) {
		return errors.New("an empty leaf is [null]")
	}
	*e = true
	return nil
}

// decode reads a document strictly: one JSON value, no member the model
// does not have.
func decode(b []byte) (*document, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	d.UseNumber()
	var doc document
	if err := d.Decode(&doc); err != nil {
		var te *json.UnmarshalTypeError
		var se *json.SyntaxError
		switch {
		case errors.As(err, &te):
			return nil, errorf(te.Field, ErrSyntax, "want a JSON %s, got %s", te.Type, te.Value)
		case errors.As(err, &se):
			return nil, errorf("", ErrSyntax, "not JSON at byte %d", se.Offset)
		}
		// An unknown member's message names it, never a value.
		return nil, errorf("", ErrModel, "%s", err.Error())
	}
	if d.More() {
		return nil, errorf("", ErrSyntax, "data after the document")
	}
	if doc.KeyChains == nil {
		return nil, errorf("", ErrModel, `no "ietf-key-chain:key-chains"`)
	}
	return &doc, nil
}
