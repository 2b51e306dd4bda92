package keychain

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strconv"
	"time"

	"github.com/tcpsig/tcpsig/keyfile"
	"github.com/tcpsig/tcpsig/keys"
)

// ErrRotate is the kind of error of a rotation that cannot be made.
var ErrRotate = errors.New("keychain: cannot rotate")

// Rotation says which peer's key to replace, and when.
type Rotation struct {
	Peer    netip.Prefix  // the entries' "peer", exactly
	At      time.Time     // the new key's send start, and the old one's send end
	Overlap time.Duration // how long before At the new key is accepted, and after At the old one still is
	Rand    io.Reader     // the new key's bytes; nil is crypto/rand
}

// Rotated says what Rotate added and changed: indexes into the AO or MD5
// list (by MD5) of the file and of the mirror's file.
type Rotated struct {
	MD5                  bool
	Old, New             int // in the rotated file
	MirrorOld, MirrorNew int // in the mirror's file
}

// textAlphabet is what a text key is made of: 6 bits of randomness a
// character, nothing a router's prompt or a JSON string must escape.
const textAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

// NewKey returns n bytes from r (crypto/rand when nil); with text, each
// one of 64 printable characters, to be typed into a router as its
// password.
func NewKey(r io.Reader, n int, text bool) ([]byte, error) {
	if r == nil {
		r = rand.Reader
	}
	k := make([]byte, n)
	if _, err := io.ReadFull(r, k); err != nil {
		clear(k)
		return nil, err
	}
	if text {
		for i := range k {
			k[i] = textAlphabet[k[i]&63]
		}
	}
	return k, nil
}

// Rotate adds to f a new key for r.Peer that sends from r.At, and to
// mirror (the other end's file; f itself when f holds both ends, as
// keys gen -o writes) the new key's mirror. The key that sends before
// r.At stops sending at r.At and is accepted until r.At+r.Overlap; the
// new one is accepted from r.At-r.Overlap: both ends accept both keys
// for 2×Overlap around r.At, and the send keys hand over at r.At with
// no gap. The new key is as long as the old, printable when the old one
// is, of the same algorithm, MAC length and options; its TCP-AO KeyIDs
// are the next that no entry of either file for an overlapping peer uses.
// Both files are checked as keyfile.Parse checks them; on an error
// neither is changed. Every entry whose key is printable ASCII is marked
// Text, so the files keep typed passwords as "text:…".
func Rotate(f, mirror *keyfile.File, r Rotation) (Rotated, error) {
	if f == nil || mirror == nil {
		return Rotated{}, fmt.Errorf("%w: no keys file", ErrRotate)
	}
	if r.At.IsZero() || r.Overlap < 0 {
		return Rotated{}, fmt.Errorf("%w: want a time to rotate at and an overlap of 0 or more", ErrRotate)
	}
	nf, nm := clone(f), nf2(f, mirror)
	if mirror == f {
		nm = nf
	}
	out, err := rotate(nf, nm, r)
	if err != nil {
		return out, err
	}
	for _, g := range []*keyfile.File{nf, nm} {
		b, err := g.Marshal()
		clear(b)
		if err != nil {
			return out, fmt.Errorf("%w: the result would not load: %w", ErrRotate, err)
		}
	}
	*f = *nf
	if mirror != f {
		*mirror = *nm
	}
	markText(f)
	markText(mirror)
	return out, nil
}

// markText marks each entry whose key is printable ASCII to be written
// "text:…": a rotated file keeps typed passwords typeable.
func markText(f *keyfile.File) {
	for i := range f.AO {
		f.AO[i].Text = f.AO[i].Text || printableText(f.AO[i].Config.Key)
	}
	for i := range f.MD5 {
		f.MD5[i].Text = f.MD5[i].Text || printableText(f.MD5[i].Config.Key)
	}
}

// nf2 is mirror's clone, unless it is f.
func nf2(f, mirror *keyfile.File) *keyfile.File {
	if mirror == f {
		return nil
	}
	return clone(mirror)
}

// clone copies f's lists (not its keys' bytes, which Rotate never
// changes in place).
func clone(f *keyfile.File) *keyfile.File {
	g := *f
	g.AO = append([]keyfile.AO(nil), f.AO...)
	g.MD5 = append([]keyfile.MD5(nil), f.MD5...)
	return &g
}

// rotate is Rotate on the copies.
func rotate(f, m *keyfile.File, r Rotation) (Rotated, error) {
	var out Rotated
	cur, isMD5, err := current(f, r)
	if err != nil {
		return out, err
	}
	out.MD5, out.Old = isMD5, cur
	var (
		old   keysView
		label string
	)
	if isMD5 {
		old, label = md5View(f.MD5[cur]), keyfile.Label("md5", cur, f.MD5[cur].Name)
	} else {
		old, label = aoView(f.AO[cur]), keyfile.Label("ao", cur, f.AO[cur].Name)
	}
	mi := mirrorOf(m, old, f == m, cur)
	if mi < 0 {
		return out, fmt.Errorf("%w: %s has no mirror in the other end's file (its peer's entry with the same key%s): give that file, or a file with both ends",
			ErrRotate, label, map[bool]string{false: " and the KeyIDs swapped", true: ""}[isMD5])
	}
	out.MirrorOld = mi
	text := printableText(old.key)
	key, err := NewKey(r.Rand, len(old.key), text)
	if err != nil {
		return out, fmt.Errorf("%w: %w", ErrRotate, err)
	}
	newL := keys.Lifetime{Send: keys.Window{Start: r.At}, Accept: keys.Window{Start: r.At.Add(-r.Overlap)}, Tolerance: old.lifetime.Tolerance}
	end := func(l *keys.Lifetime) {
		l.Send.End, l.Accept.End = r.At, r.At.Add(r.Overlap)
	}
	if isMD5 {
		o, mo := f.MD5[cur], m.MD5[mi]
		end(&f.MD5[cur].Config.Lifetime)
		end(&m.MD5[mi].Config.Lifetime)
		nl := newL
		nl.Tolerance = o.Config.Lifetime.Tolerance
		f.MD5 = append(f.MD5, keyfile.MD5{Name: nextName(o.Name, f), Text: text,
			Config: keys.MD5{Peer: o.Config.Peer, Key: key, IfIndex: o.Config.IfIndex, HasIfIndex: o.Config.HasIfIndex, Lifetime: nl}})
		out.New = len(f.MD5) - 1
		ml := newL
		ml.Tolerance = mo.Config.Lifetime.Tolerance
		m.MD5 = append(m.MD5, keyfile.MD5{Name: nextName(mo.Name, m), Text: text,
			Config: keys.MD5{Peer: mo.Config.Peer, Key: bytes.Clone(key), IfIndex: mo.Config.IfIndex, HasIfIndex: mo.Config.HasIfIndex, Lifetime: ml}})
		out.MirrorNew = len(m.MD5) - 1
		return out, nil
	}
	o, mo := f.AO[cur], m.AO[mi]
	snd, rcv, err := newIDs(f, m, o.Config, mo.Config.Peer)
	if err != nil {
		return out, err
	}
	end(&f.AO[cur].Config.Lifetime)
	end(&m.AO[mi].Config.Lifetime)
	nc := o.Config
	nc.Key, nc.SendID, nc.RecvID, nc.Lifetime = key, snd, rcv, newL
	f.AO = append(f.AO, keyfile.AO{Name: nextName(o.Name, f), Config: nc, Text: text})
	out.New = len(f.AO) - 1
	mc := mo.Config
	mc.Key, mc.SendID, mc.RecvID, mc.Lifetime = bytes.Clone(key), rcv, snd, newL
	mc.Lifetime.Tolerance = mo.Config.Lifetime.Tolerance
	m.AO = append(m.AO, keyfile.AO{Name: nextName(mo.Name, m), Config: mc, Text: text})
	out.MirrorNew = len(m.AO) - 1
	return out, nil
}

// current finds the key of r.Peer that sends just before r.At: of the
// entries for that peer whose send lifetime has not ended by then, the
// one whose send lifetime starts last.
func current(f *keyfile.File, r Rotation) (int, bool, error) {
	best, bestMD5 := -1, false
	var bestStart time.Time
	consider := func(i int, isMD5 bool, peer netip.Prefix, l keys.Lifetime) {
		if peer != r.Peer || !l.Send.End.IsZero() && l.Send.End.Before(r.At) {
			return
		}
		if best < 0 || l.Send.Start.After(bestStart) {
			best, bestMD5, bestStart = i, isMD5, l.Send.Start
		}
	}
	for i, e := range f.AO {
		consider(i, false, e.Config.Peer, e.Config.Lifetime)
	}
	for i, e := range f.MD5 {
		consider(i, true, e.Config.Peer, e.Config.Lifetime)
	}
	if best < 0 {
		return 0, false, fmt.Errorf("%w: no entry for peer %v sends at %s", ErrRotate, r.Peer, r.At.UTC().Format(time.RFC3339))
	}
	if !bestStart.IsZero() && !bestStart.Before(r.At) {
		return 0, false, fmt.Errorf("%w: peer %v's newest key already starts sending at %s, not before %s",
			ErrRotate, r.Peer, bestStart.UTC().Format(time.RFC3339), r.At.UTC().Format(time.RFC3339))
	}
	return best, bestMD5, nil
}

// keysView is what finding a mirror needs of an entry.
type keysView struct {
	md5            bool
	peer           netip.Prefix
	key            []byte
	alg            string
	sendID, recvID uint8
	maclen         int
	exclude        bool
	lifetime       keys.Lifetime
}

func aoView(e keyfile.AO) keysView {
	c := e.Config
	return keysView{peer: c.Peer, key: c.Key, alg: c.Algorithm, sendID: c.SendID, recvID: c.RecvID, maclen: c.MACLen, exclude: c.ExcludeOptions, lifetime: c.Lifetime}
}

func md5View(e keyfile.MD5) keysView {
	return keysView{md5: true, peer: e.Config.Peer, key: e.Config.Key, lifetime: e.Config.Lifetime}
}

// mirrors reports whether b is a's mirror: configured on a's peer, for
// another peer, with the same key (and for TCP-AO the KeyIDs swapped,
// the same algorithm, MAC length and options).
func mirrors(a, b keysView) bool {
	if a.md5 != b.md5 || a.peer == b.peer || !bytes.Equal(a.key, b.key) {
		return false
	}
	return a.md5 || a.sendID == b.recvID && a.recvID == b.sendID && a.alg == b.alg && a.maclen == b.maclen && a.exclude == b.exclude
}

// mirrorOf returns the index of old's mirror in m (skipping entry self
// when m is old's own file), or -1.
func mirrorOf(m *keyfile.File, old keysView, same bool, self int) int {
	if old.md5 {
		for i, e := range m.MD5 {
			if !(same && i == self) && mirrors(old, md5View(e)) {
				return i
			}
		}
		return -1
	}
	for i, e := range m.AO {
		if !(same && i == self) && mirrors(old, aoView(e)) {
			return i
		}
	}
	return -1
}

// newIDs picks the new key's KeyIDs: after the old ones, the first that
// no TCP-AO entry of f for a peer overlapping c's, nor of m for one
// overlapping mirrorPeer, uses as sndid or rcvid; one ID for both when
// the old key used one.
func newIDs(f, m *keyfile.File, c keys.AO, mirrorPeer netip.Prefix) (snd, rcv uint8, err error) {
	used := [256]bool{}
	for _, g := range []struct {
		f    *keyfile.File
		peer netip.Prefix
	}{{f, c.Peer}, {m, mirrorPeer}} {
		for _, e := range g.f.AO {
			if e.Config.Peer.Overlaps(g.peer) {
				used[e.Config.SendID], used[e.Config.RecvID] = true, true
			}
		}
	}
	var free []uint8
	start := int(max(c.SendID, c.RecvID)) + 1
	for i := range 256 {
		if id := uint8((start + i) % 256); !used[id] {
			free = append(free, id)
		}
	}
	switch {
	case c.SendID == c.RecvID && len(free) >= 1:
		return free[0], free[0], nil
	case len(free) >= 2:
		return free[0], free[1], nil
	}
	return 0, 0, fmt.Errorf("%w: peer %v has no free KeyID left", ErrRotate, c.Peer)
}

// nextName names the new key after the old one: CHAIN/N becomes the
// chain's next free number, another name gets "/2" (or the next free);
// no name stays none.
func nextName(old string, f *keyfile.File) string {
	if old == "" {
		return ""
	}
	chain, id, ok := chainKey(old)
	if !ok {
		chain, id = old, 1
	}
	taken := map[string]bool{}
	for _, e := range f.AO {
		taken[e.Name] = true
	}
	for _, e := range f.MD5 {
		taken[e.Name] = true
	}
	for {
		id++
		if n := chain + "/" + strconv.FormatUint(id, 10); !taken[n] {
			return n
		}
	}
}

// printableText reports whether k looks typed: every byte printable
// ASCII.
func printableText(k []byte) bool { return len(k) > 0 && printable(k) }

// Mirror returns the other end's entries for f's keys of peer: each
// configured on that peer, for self, with the same key, algorithm, MAC
// length, options and lifetimes, and (TCP-AO) the KeyIDs swapped. It is
// the file to give a peer that has none yet (a router whose password is
// typed in), and, given to Rotate as the mirror's file, gets the new
// key's mirror too. The entries share f's key bytes.
func Mirror(f *keyfile.File, peer, self netip.Prefix) *keyfile.File {
	m := &keyfile.File{AcceptTolerance: f.AcceptTolerance, ClockSkew: f.ClockSkew}
	for _, e := range f.AO {
		if e.Config.Peer == peer {
			c := e.Config
			c.Peer, c.SendID, c.RecvID, c.IfIndex, c.HasIfIndex = self, c.RecvID, c.SendID, 0, false
			m.AO = append(m.AO, keyfile.AO{Name: e.Name, Config: c, Text: e.Text})
		}
	}
	for _, e := range f.MD5 {
		if e.Config.Peer == peer {
			c := e.Config
			c.Peer, c.IfIndex, c.HasIfIndex = self, 0, false
			m.MD5 = append(m.MD5, keyfile.MD5{Name: e.Name, Config: c, Text: e.Text})
		}
	}
	return m
}
