//go:build linux

package shim

import "github.com/tcpsig/tcpsig/packetauth"

// collectLifetimes: per key of the keyrings, whether it is inside its
// send and its accept lifetime (RFC 8177's send-lifetime-active and
// accept-lifetime-active), and the sessions whose current key (TCP-AO)
// it is; under s.mu. An alert joins them: a key leaving its accept
// lifetime while sessions still send with it.
func (s *Shim) collectLifetimes(out emit) {
	type state struct{ send, accept, sessions int }
	states := map[keyLabels]*state{}
	var order []keyLabels
	at := func(l keyLabels) *state {
		st := states[l]
		if st == nil {
			st = new(state)
			states[l] = st
			order = append(order, l)
		}
		return st
	}
	b := func(v bool) int {
		if v {
			return 1
		}
		return 0
	}
	for _, m := range s.aoRing.MKTs() {
		st := at(aoLabels(m.Peer(), m.SendID(), m.RecvID()))
		st.send, st.accept = max(st.send, b(m.SendActive())), max(st.accept, b(m.AcceptActive()))
	}
	for _, k := range s.md5Ring.Keys() {
		st := at(md5Labels(k.Peer()))
		st.send, st.accept = max(st.send, b(k.SendActive())), max(st.accept, b(k.AcceptActive()))
	}
	for c := range s.layer.Conns {
		if c.Kind != packetauth.KindAO || c.Revoked {
			continue
		}
		if ac, ok := s.layer.Conn(c.Local, c.Remote); ok {
			if m := ac.Current(); m != nil {
				at(aoLabels(m.Peer(), m.SendID(), m.RecvID())).sessions++
			}
		}
	}
	for _, l := range order {
		st := states[l]
		out.gauge(descSendActive, float64(st.send), l.peer, l.kind, l.sndid, l.rcvid)
		out.gauge(descAcceptActive, float64(st.accept), l.peer, l.kind, l.sndid, l.rcvid)
		if l.kind == kindAO {
			out.gauge(descKeySessions, float64(st.sessions), l.peer, l.kind, l.sndid, l.rcvid)
		}
	}
}
