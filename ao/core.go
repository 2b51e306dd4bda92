package ao

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"

	"github.com/tcpsig/tcpsig/internal/reclaim"
	"github.com/tcpsig/tcpsig/kdf"
	"github.com/tcpsig/tcpsig/mac"
	"github.com/tcpsig/tcpsig/segment"
	"github.com/tcpsig/tcpsig/sigpool"
)

// ISNs are a connection's two initial sequence numbers as one segment sees
// them: Src is the ISN of the end that sends the segment, Dst that of the
// end that receives it (RFC 5925 §5.2). A SYN's traffic key ignores Dst.
type ISNs struct{ Src, Dst uint32 }

// segmentInput is the KDF input of seg's own direction.
func segmentInput(seg *segment.Segment, isns ISNs) (kdf.Input, error) {
	if err := seg.Check(); err != nil {
		return kdf.Input{}, err
	}
	h := seg.Header()
	in := kdf.Input{Src: seg.Src(), Dst: seg.Dst(), SrcPort: h.SrcPort(), DstPort: h.DstPort(), SrcISN: isns.Src, DstISN: isns.Dst}
	if isSYN(h.Flags()) {
		in.DstISN = 0
	}
	return in, nil
}

// isSYN reports a SYN without ACK: the segments of the SYN traffic keys.
func isSYN(f segment.Flags) bool { return f&(segment.SYN|segment.ACK) == segment.SYN }

// optionKind is the TCP option kind of TCP-AO (RFC 5925 §2.2).
const optionKind = segment.OptionKindAO

// optionHeaderLen is the option's kind, length, KeyID and RNextKeyID.
const optionHeaderLen = 4

// optionLen returns the option's length byte for a MAC of maclen bytes:
// 4 + maclen, unpadded, as Linux writes it.
func optionLen(maclen int) int { return optionHeaderLen + maclen }

// parseOption parses the TCP-AO option at the start of opt
// ([ParseOption]).
func parseOption(opt []byte) (Option, error) {
	if len(opt) < 2 || opt[0] != optionKind {
		return Option{}, ErrOption
	}
	n := int(opt[1])
	if n <= optionHeaderLen || n > len(opt) {
		return Option{}, fmt.Errorf("%w: length %d", ErrOption, n)
	}
	return Option{KeyID: opt[2], RNextKeyID: opt[3], MAC: opt[4:n:n]}, nil
}

// findOption returns the offset of seg's AO option and the option:
// [ErrNoOption] without one, segment.ErrUnparsed if its bytes no longer
// hold the option the parse found.
func findOption(seg *segment.Segment) (int, Option, error) {
	off := seg.Auth().AO
	if off == 0 {
		return 0, Option{}, ErrNoOption
	}
	o, err := parseOption(seg.Header()[off:])
	if err != nil || len(o.MAC)+optionHeaderLen != seg.Auth().AOLen {
		// The parse found the option here: the caller has written over
		// it since. Refused, never taken for an unsigned segment.
		return 0, Option{}, segment.ErrUnparsed
	}
	return off, o, nil
}

// checkedOption returns the offset and contents of seg's TCP-AO option,
// whose MAC must have m's length.
func checkedOption(m *MKT, seg *segment.Segment) (int, Option, error) {
	if err := seg.Check(); err != nil {
		return 0, Option{}, err
	}
	off, opt, err := findOption(seg)
	if err != nil {
		return 0, Option{}, err
	}
	if len(opt.MAC) != int(m.maclen) {
		return 0, Option{}, ErrMACLength
	}
	return off, opt, nil
}

// derive computes m's traffic key for in into key, with m's master key
// pinned, on a request of m's pool (the shard hint names first): the one
// derivation of package ao. A deleted MKT is [ErrKeyNotFound].
func (m *MKT) derive(in *kdf.Input, key *mac.Key, hint uint32) error {
	req, p, err := m.pinned(hint)
	if err != nil {
		return err
	}
	defer m.unpin(req, p)
	return deriveOn(req, m, in, key)
}

// pinned pins m's master key and starts a request of m's pool: what a
// derivation holds. A deleted MKT is [ErrKeyNotFound].
func (m *MKT) pinned(hint uint32) (*sigpool.Request, reclaim.Pin, error) {
	if m == nil || m.master == nil {
		return nil, reclaim.Pin{}, ErrKeyNotFound
	}
	p, ok := m.acquire(hint)
	if !ok {
		return nil, reclaim.Pin{}, ErrKeyNotFound
	}
	req, err := m.request(hint)
	if err != nil {
		m.release(p)
		return nil, reclaim.Pin{}, err
	}
	return req, p, nil
}

// unpin ends what pinned started.
func (m *MKT) unpin(req *sigpool.Request, p reclaim.Pin) {
	req.End()
	m.release(p)
}

// request starts a request of m's pool for m's algorithm; m is pinned,
// so its pool entry is held.
func (m *MKT) request(hint uint32) (*sigpool.Request, error) {
	req, err := m.pool.StartHint(m.poolID, hint)
	if err != nil {
		return nil, ErrKeyNotFound
	}
	if req.MAC.Algorithm() != m.alg {
		req.End()
		return nil, ErrKeyNotFound
	}
	return req, nil
}

// deriveOn is derive on a request already held: the KDF (RFC 5925 §5.2)
// on its context and scratch, then the traffic key's schedule on the
// same context.
func deriveOn(req *sigpool.Request, m *MKT, in *kdf.Input, key *mac.Key) error {
	var raw [mac.MaxSize]byte
	tk, err := m.master.Derive(req.MAC, req.Scratch, in, raw[:0])
	if err == nil {
		err = req.MAC.Schedule(key, tk)
	}
	clear(raw[:])
	return err
}

// once signs seg (got nil) or verifies it against got under j's MKT with
// a traffic key derived for this one segment (a handshake's, from in), in
// one request of the MKT's pool: the key lives in the request's spare key
// and is wiped before the request ends.
func (j *job) once(in *kdf.Input, seg *segment.Segment, got []byte, hint uint32) error {
	m := j.m
	req, p, err := m.pinned(hint)
	if err != nil {
		return err
	}
	defer m.unpin(req, p)
	defer req.Spare.Wipe()
	if err := deriveOn(req, m, in, &req.Spare); err != nil {
		return err
	}
	j.key, j.w, j.sc = &req.Spare, req.MAC, req.Scratch
	if got == nil {
		return j.sign(seg)
	}
	return j.verify(seg, got)
}

// goodIn counts a good segment verified with k, a lane's entry whose
// lane's lock the caller holds: one writer, so plain and atomic stores,
// no locked add.
func (c *counters) goodIn(k *laneKey) {
	k.good.Store(k.good.Load() + 1)
	c.laneGood++
}

// record counts the outcome err of a verification under m in c and m:
// the one place package ao counts segments. A good one counts for m in k,
// a lane's entry whose lane's lock the caller holds (and then in c's
// laneGood), or in m itself without one. It returns err.
func (c *counters) record(m *MKT, k *laneKey, err error) error {
	switch {
	case err == nil && k != nil:
		c.goodIn(k)
	case err == nil:
		if m != nil {
			m.good.Add(1)
		}
		c.good.Add(1)
	case errors.Is(err, ErrBadMAC):
		c.bad.Add(1)
		if m != nil {
			m.bad.Add(1)
		}
	case errors.Is(err, ErrKeyNotFound):
		c.keyNotFound.Add(1)
	case errors.Is(err, ErrAORequired):
		c.aoRequired.Add(1)
	}
	return err
}

// signOption returns the offset of seg's TCP-AO option after making it
// exactly m's length (seg passed Check): a longer one is shortened and its tail turned into
// NOPs; a shorter one is [ErrNoRoom].
func signOption(m *MKT, seg *segment.Segment) (int, error) {
	a := seg.Auth()
	if a.AO == 0 {
		return 0, ErrNoOption
	}
	want := optionLen(int(m.maclen))
	if a.AOLen < want {
		return 0, ErrNoRoom
	}
	if a.AOLen > want {
		if err := seg.ShortenAO(want); err != nil {
			return 0, err
		}
	}
	return a.AO, nil
}

// labelOption lays out seg's option for m (signOption) and writes m's
// KeyID and rnext into it, returning its offset.
func labelOption(m *MKT, seg *segment.Segment, rnext uint8) (int, error) {
	off, err := signOption(m, seg)
	if err != nil {
		return 0, err
	}
	seg.Header()[off+2], seg.Header()[off+3] = m.sendID, rnext
	return off, nil
}

// job is what every signer and verifier hands the core for one segment,
// besides the segment itself: the MKT and the traffic key, a working
// context of the MKT's algorithm and scratch of at least scratchSize
// bytes (both the caller's alone for the call), the offset of the
// segment's TCP-AO option and the SNE of its sequence number. (The
// segment stays a parameter: the context keeps what it is given, so a job
// goes to the heap in the compiler's eyes, and the caller's segment must
// not.)
type job struct {
	m   *MKT
	key *mac.Key
	w   *mac.Context
	sc  []byte
	off int
	sne uint32
}

// sign writes the MAC into seg's option, which labelOption laid out and
// labelled: the per-segment core of every signer.
func (j *job) sign(seg *segment.Segment) error {
	sum, err := j.mac(seg)
	if err != nil {
		return err
	}
	off := j.off + optionHeaderLen
	copy(seg.Header()[off:off+int(j.m.maclen)], sum)
	return nil
}

// verify compares got, the MAC in seg's option, with seg's MAC in
// constant time: the per-segment core of every verifier.
func (j *job) verify(seg *segment.Segment, got []byte) error {
	if len(got) != int(j.m.maclen) {
		return ErrMACLength
	}
	sum, err := j.mac(seg)
	if err != nil {
		return err
	}
	if !mac.Equal(sum, got) {
		return ErrBadMAC
	}
	return nil
}

// mac computes seg's MAC (RFC 5925 §5.1, Linux tcp_ao_hash_skb): SNE,
// pseudo-header, TCP header with checksum and MAC zeroed (or only the
// base header and the AO option when options are excluded), payload. The
// result, the MKT's MAC length, aliases the scratch.
func (j *job) mac(seg *segment.Segment) ([]byte, error) {
	m, sc, off, w, key, sne := j.m, j.sc, j.off, j.w, j.key, j.sne
	maclen := int(m.maclen)
	var b []byte
	if seg.Src().Is4() {
		// SNE and the IPv4 pseudo-header as two 8-byte stores: the MAC
		// reads them back 8 or 16 bytes at a time, which a load spanning
		// several narrower stores would stall on.
		s, d := seg.Src().As4(), seg.Dst().As4()
		be := binary.BigEndian
		be.PutUint64(sc[0:8], uint64(sne)<<32|uint64(be.Uint32(s[:])))
		be.PutUint64(sc[8:16], uint64(be.Uint32(d[:]))<<32|protoTCP<<16|uint64(uint16(seg.Len())))
		b = sc[:16]
	} else {
		b = binary.BigEndian.AppendUint32(sc[:0], sne)
		b = segment.AppendPseudoHeader(b, seg.Src(), seg.Dst(), seg.Len())
	}
	start := len(b)
	h := seg.Header()
	if m.exclude {
		b = append(b, h[:segment.TCPMinimumSize]...)
		b = append(b, h[off:off+optionHeaderLen]...)
		for i := 0; i < maclen; i++ {
			b = append(b, 0)
		}
	} else {
		// The header's first 16 bytes as one store: CMAC reads them back
		// as its next block at once, and a load that spans several
		// stores still in flight stalls.
		b = b[:start+len(h)]
		*(*[16]byte)(b[start:]) = [16]byte(h)
		copy(b[start+16:], h[16:])
		clear(b[start+off+optionHeaderLen : start+off+optionHeaderLen+maclen])
	}
	binary.BigEndian.PutUint16(b[start+segment.TCPChecksumOffset:], 0)
	// Complete the hash's first block(s) here: the hash would otherwise
	// buffer the header and the payload's first bytes in its own block
	// buffer and run its block function once more. The bytes staged are
	// at most one block of payload, exactly what the hash would have
	// copied itself; the payload is otherwise hashed in place. KMAC's
	// sponge has no block buffer (it absorbs in place at any offset), so
	// staging would only add a copy.
	pay := seg.Payload()
	if bs := m.alg.BufferSize(); bs > 0 && len(pay) > 0 {
		fill := min((bs-len(b)%bs)%bs, len(pay))
		b = append(b, pay[:fill]...)
		pay = pay[fill:]
	}
	if len(pay) == 0 && len(seg.Frags()) == 0 {
		// The whole message is in scratch (a pure ACK, for one).
		sum, err := w.Compute(key, sc[sumOff:sumOff], b)
		if err != nil {
			return nil, err
		}
		return sum[:maclen], nil
	}
	if err := w.Start(key); err != nil {
		return nil, err
	}
	w.Write(b)
	if len(pay) > 0 {
		w.Write(pay)
	}
	for _, f := range seg.Frags() {
		w.Write(f)
	}
	return w.Finish(sc[sumOff:sumOff])[:maclen], nil
}

// protoTCP is TCP's IP protocol number, in the pseudo-header.
const protoTCP = 6

func netipAddrPort(a netip.Addr, port uint16) netip.AddrPort {
	return netip.AddrPortFrom(a.Unmap(), port)
}
