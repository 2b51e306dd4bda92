package ao

import "fmt"

// RepairState is a connection's TCP-AO state for migration or restore, as
// Linux's TCP_AO_REPAIR carries it (snt_isn, rcv_isn, snd_sne, rcv_sne)
// plus the sequence numbers the SNEs belong to and the key selection.
// It holds no key material: the MKTs are re-added on the new side.
type RepairState struct {
	LocalISN, RemoteISN uint32
	SendSNE, RecvSNE    uint32 // SNEs of SendSeq and RecvSeq
	SendSeq, RecvSeq    uint32 // a sequence number in each direction (Linux: snd_una, rcv_nxt)
	CurrentSendID       uint8  // the current key's SendID
	RNextRecvID         uint8  // the RNext key's RecvID
}

// Export returns the connection's repair state.
func (c *Conn) Export() RepairState {
	if c == nil {
		return RepairState{}
	}
	s := RepairState{LocalISN: c.lisn, RemoteISN: c.risn}
	c.send.mu.Lock()
	s.SendSNE, s.SendSeq = c.send.sne.load()
	c.send.mu.Unlock()
	c.recv.mu.Lock()
	s.RecvSNE, s.RecvSeq = c.recv.sne.load()
	c.recv.mu.Unlock()
	if m := c.Current(); m != nil {
		s.CurrentSendID = m.sendID
	}
	if m := c.RNext(); m != nil {
		s.RNextRecvID = m.recvID
	}
	return s
}

// Import restores a connection from an exported state onto ring (whose
// MKTs the new side has re-added), like TCP_REPAIR + TCP_AO_REPAIR.
func (c *Conn) Import(ring *Keyring, ep Endpoint, p Policy, s RepairState) error {
	if c == nil || ring == nil {
		return ErrNotInitialized
	}
	ep.LocalISN = s.LocalISN
	cur := ring.LookupSend(ep.Remote.Addr().Unmap(), s.CurrentSendID, ep.L3Index)
	nxt := ring.LookupRecv(ep.Remote.Addr().Unmap(), s.RNextRecvID, ep.L3Index)
	if cur == nil || nxt == nil {
		return fmt.Errorf("%w: current SendID %d / RNext RecvID %d", ErrNoSuchKey, s.CurrentSendID, s.RNextRecvID)
	}
	c.Close()
	c.reset(ring, ep, p)
	c.setRISN(s.RemoteISN)
	c.send.sne.store(s.SendSNE, s.SendSeq)
	c.recv.sne.store(s.RecvSNE, s.RecvSeq)
	ring.mu.Lock()
	defer ring.mu.Unlock()
	if !ring.has(cur) || !ring.has(nxt) {
		return ErrNoSuchKey
	}
	ring.setRole(c, roleCurrent, cur)
	ring.setRole(c, roleRNext, nxt)
	return nil
}
