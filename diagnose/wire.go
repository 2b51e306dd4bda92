package diagnose

import (
	"fmt"
	"net/netip"
)

// Wire is what the wire shows of one flow direction, counted without a
// keys file: how many of its segments carry a TCP-AO option, a TCP-MD5
// option or neither, and whether a TCP-AO segment needs an ISN that
// neither the capture (its SYN or SYN-ACK) nor -isn gives.
type Wire struct {
	From, To      netip.AddrPort
	AO, MD5, Bare uint64
	ISNMissing    bool
}

// signs is the one kind of option w's segments carry: "TCP-AO",
// "TCP-MD5", or "" for none or both.
func (w Wire) signs() string {
	switch {
	case w.AO > 0 && w.MD5 == 0:
		return "TCP-AO"
	case w.MD5 > 0 && w.AO == 0:
		return "TCP-MD5"
	}
	return ""
}

// FromWire names the cause of d's failures that the wire shows without
// a keys file, rev being d's reverse direction (a zero Wire when it was
// not seen); false when the wire alone cannot tell one. It tells three
// causes:
//
//   - AuthKind: d signs with one kind of option (all its segments TCP-AO,
//     or all TCP-MD5) and rev with the other;
//   - Unsigned: d carries no option at all though rev signs;
//   - ISN: d signs with TCP-AO and an ISN its traffic keys need is
//     missing (the handshake is not in the capture, and no -isn).
//
// The others (Algorithm, Options, KeyID, KeyEncoding, Secret,
// PeerAddress, Tampered, MACLength without an entry) need a secret: a
// direction that signs is not judged further. The Entry is always "":
// there is no keys file to name one of.
func FromWire(d, rev Wire) (Diagnosis, bool) {
	mine, theirs := d.signs(), rev.signs()
	switch {
	case d.AO == 0 && d.MD5 == 0:
		if d.Bare == 0 || rev.AO+rev.MD5 == 0 {
			return Diagnosis{}, false
		}
		kind := theirs
		if kind == "" {
			kind = "TCP-AO and TCP-MD5"
		}
		return Diagnosis{Cause: Unsigned, Fix: fmt.Sprintf("%v sends no TCP-AO or TCP-MD5 option, though its peer %v signs with %s: configure the key on %v (or remove it from %v)",
			d.From.Addr(), d.To.Addr(), kind, d.From.Addr(), d.To.Addr())}, true
	case mine != "" && theirs != "" && mine != theirs:
		return Diagnosis{Cause: AuthKind, Fix: fmt.Sprintf("the peer %v signs with %s, this end %v with %s: configure the same kind on both",
			d.To.Addr(), theirs, d.From.Addr(), mine)}, true
	case d.AO > 0 && d.ISNMissing:
		return Diagnosis{Cause: ISN, Fix: fmt.Sprintf("the handshake of %v <-> %v is not in the capture: give -isn %v=ISN -isn %v=ISN (and -sne if it wrapped)",
			d.From, d.To, d.From, d.To)}, true
	}
	return Diagnosis{}, false
}
