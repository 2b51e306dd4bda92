package shim

import (
	"errors"

	"github.com/tcpsig/tcpsig/ao"
	"github.com/tcpsig/tcpsig/md5sig"
	"github.com/tcpsig/tcpsig/packetauth"
	"github.com/tcpsig/tcpsig/segment"
)

// verdict is what became of a covered peer's segment, in the words of the
// metrics' verdict label and of the drop log.
type verdict uint8

// The verdicts. good and bad_mac are counted per key (the keys' own
// counters); the others per peer prefix, by the drop path.
const (
	verdictGood       verdict = iota // verified
	verdictBadMAC                    // MAC or MD5 digest mismatch
	verdictUnsigned                  // no option from a covered peer (Linux's TCPAORequired, TCPMD5NotFound)
	verdictNoKey                     // a KeyID no MKT of the peer has, or no key to sign with
	verdictUnexpected                // the other kind's option (TCP-MD5 on TCP-AO, a signed segment from a peer of no key of that kind)
	verdictRevoked                   // the session's key was removed by a reload
	verdictNoSession                 // TCP-AO without a tracked session (its ISNs unknown)
	verdictFragment                  // an IP fragment to or from a covered peer
	verdictNoRoom                    // no room for the option in 40 bytes
	verdictMalformed                 // a packet or options that do not parse
	verdictFull                      // a new session over the table's bound
	verdictICMP                      // an RFC 5925 §7.8 hard error for a TCP-AO session, ignored
	verdictOther                     // anything else
	numVerdicts
)

var verdictNames = [numVerdicts]string{
	"good", "bad_mac", "unsigned", "no_key", "unexpected_option", "revoked", "no_session",
	"fragment", "no_room", "malformed", "table_full", "icmp_ignored", "other",
}

// String is the verdict's label value.
func (v verdict) String() string {
	if v < numVerdicts {
		return verdictNames[v]
	}
	return "other"
}

var segmentErrors = []error{segment.ErrShortPacket, segment.ErrIPHeaderLength, segment.ErrExtHeaderChain,
	segment.ErrShortTCP, segment.ErrDataOffset, segment.ErrOptionLength, segment.ErrAuthOption,
	segment.ErrDuplicateAuth, segment.ErrSegmentTooLong, segment.ErrPacketTooLong, segment.ErrIPVersion,
	segment.ErrNotTCP, segment.ErrAddrFamily, segment.ErrNotICMP}

// classify returns the verdict of a packet the layer refused with err.
func classify(err error) verdict {
	is := func(targets ...error) bool {
		for _, t := range targets {
			if errors.Is(err, t) {
				return true
			}
		}
		return false
	}
	switch {
	case is(packetauth.ErrRevoked):
		return verdictRevoked
	case is(ao.ErrBadMAC, md5sig.ErrBadMAC):
		return verdictBadMAC
	case is(packetauth.ErrUnsigned, ao.ErrAORequired, md5sig.ErrMissing):
		return verdictUnsigned
	case is(ao.ErrUnexpected, md5sig.ErrUnexpected, md5sig.ErrAOOption, segment.ErrBothAuth):
		return verdictUnexpected
	case is(ao.ErrKeyNotFound, ao.ErrNoCurrentKey, md5sig.ErrNoKey):
		return verdictNoKey
	case is(packetauth.ErrNoConn, ao.ErrNoISN):
		return verdictNoSession
	case is(packetauth.ErrFragment, segment.ErrFragment):
		return verdictFragment
	case is(packetauth.ErrNoRoom, ao.ErrNoRoom, md5sig.ErrNoRoom):
		return verdictNoRoom
	case is(packetauth.ErrFull):
		return verdictFull
	case is(packetauth.ErrICMP):
		return verdictICMP
	case is(packetauth.ErrOptions) || is(segmentErrors...):
		return verdictMalformed
	}
	return verdictOther
}

// The kind label's values: "ao", "md5", or "" when neither the error, the
// segment nor the peer's keys tell.
const (
	kindAO      = "ao"
	kindMD5     = "md5"
	kindUnknown = ""
)

// kindIndex numbers the kind labels for the per-peer counters.
func kindIndex(kind string) int {
	switch kind {
	case kindAO:
		return 0
	case kindMD5:
		return 1
	}
	return 2
}

var kindByIndex = [3]string{kindAO, kindMD5, kindUnknown}

var (
	aoErrors = []error{ao.ErrBadMAC, ao.ErrKeyNotFound, ao.ErrAORequired, ao.ErrUnexpected, ao.ErrNoRoom,
		ao.ErrNoCurrentKey, ao.ErrNoISN, ao.ErrISN, ao.ErrNotSYN, ao.ErrConnClosed, packetauth.ErrICMP, packetauth.ErrNoConn}
	md5Errors = []error{md5sig.ErrBadMAC, md5sig.ErrMissing, md5sig.ErrUnexpected, md5sig.ErrAOOption,
		md5sig.ErrNoKey, md5sig.ErrNoRoom}
)

// errKind returns the kind whose check refused a packet with err, or
// kindUnknown when err does not say.
func errKind(err error) string {
	for _, e := range aoErrors {
		if errors.Is(err, e) {
			return kindAO
		}
	}
	for _, e := range md5Errors {
		if errors.Is(err, e) {
			return kindMD5
		}
	}
	return kindUnknown
}
