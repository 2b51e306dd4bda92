package usertcp

import "sync/atomic"

// SwitchAuth is an Auth that signs with Good until Switch names another
// Auth, and always verifies with Good. Tests use it to turn a connection's
// signatures wrong after a good handshake, to see that the peer really
// checks them.
type SwitchAuth struct {
	Good Auth
	bad  atomic.Pointer[Auth]
}

// Switch makes a sign with bad from the next segment on.
func (a *SwitchAuth) Switch(bad Auth) { a.bad.Store(&bad) }

// OptionLen is Good's.
func (a *SwitchAuth) OptionLen() int { return a.Good.OptionLen() }

// Verify verifies with Good.
func (a *SwitchAuth) Verify(pkt []byte) error { return a.Good.Verify(pkt) }

// Sign signs with Good, or with the Auth given to Switch.
func (a *SwitchAuth) Sign(pkt []byte) error {
	if bad := a.bad.Load(); bad != nil {
		return (*bad).Sign(pkt)
	}
	return a.Good.Sign(pkt)
}
