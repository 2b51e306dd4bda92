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

// Inbound verifies with Good.
func (a *SwitchAuth) Inbound(dst, pkt []byte) ([]byte, error) { return a.Good.Inbound(dst, pkt) }

// Outbound signs with Good, or with the Auth given to Switch.
func (a *SwitchAuth) Outbound(dst, pkt []byte) ([]byte, error) {
	if bad := a.bad.Load(); bad != nil {
		return (*bad).Outbound(dst, pkt)
	}
	return a.Good.Outbound(dst, pkt)
}
