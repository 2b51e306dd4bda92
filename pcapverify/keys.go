package pcapverify

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net/netip"
	"slices"

	"github.com/tcpsig/tcpsig/ao"
	"github.com/tcpsig/tcpsig/keyfile"
	"github.com/tcpsig/tcpsig/keys"
)

// Keys is a keys file loaded into keyrings, and the readings a direction
// of a flow is judged under.
//
// A segment is judged, as in the kernel, with the keys of its receiver:
// the entries whose peer contains the sender's address. The keys file does
// not say which entry is whose, only their peers, so:
//
//   - entries that one kernel keyring would refuse side by side (same
//     KeyIDs on overlapping peers: both ends on one address, as on
//     loopback) go to separate keyrings, and a segment is judged under
//     each of them: "both readings";
//   - a direction that no entry covers as a receiver's key, when the
//     sender's keys are in the file (entries whose peer contains the
//     receiver's address), is judged with the sender's keys mirrored (a
//     TCP-AO MKT with SendID and RecvID swapped, a TCP-MD5 key as is): the
//     reading of a keys file that lists one endpoint's keys only.
//
// Keys serve one Verifier at a time: readings are built as flows need them.
type Keys struct {
	file    *keyfile.File
	aoRings []*ao.Keyring
	aoEntry map[*ao.MKT]int // index in file.AO
	aoNames []string        // entryName of each file.AO entry
	md5     *md5Keys
	mirrors map[string]*mirror // by mirrorKey
}

// mirror holds the sender's keys for segments to one receiver, mirrored
// into keys of the receiver for a peer of any address of its family:
// what judges a segment from any sender the entries do not cover.
type mirror struct {
	aoRings []*ao.Keyring
	md5     *md5Keys
}

// LoadKeys builds the keyrings of a keys file. A capture does not say in
// which L3 domain a segment was, so entries bound to an ifindex are judged
// as if they were not.
func LoadKeys(kf *keyfile.File) (*Keys, error) {
	if kf == nil {
		return nil, ErrNotSetUp
	}
	ks := &Keys{
		file:    kf,
		aoEntry: map[*ao.MKT]int{},
		mirrors: map[string]*mirror{},
	}
	for i, e := range kf.AO {
		ks.aoNames = append(ks.aoNames, entryName("ao", i, e.Name))
	}
	var entries []aoEntry
	for i, e := range kf.AO {
		cfg := e.Config
		cfg.IfIndex, cfg.HasIfIndex = 0, false
		entries = append(entries, aoEntry{cfg, i})
	}
	var err error
	if ks.aoRings, err = ks.addAO(entries); err != nil {
		return nil, err
	}
	if ks.md5, err = newMD5Keys(kf.MD5); err != nil {
		return nil, err
	}
	return ks, nil
}

// aoEntry is an entry of the file's "ao" list as the keyrings take it.
type aoEntry struct {
	cfg   keys.AO
	entry int // index in file.AO
}

// addAO puts entries into as few keyrings as hold them side by side,
// each one into the first keyring whose MKTs it does not clash with by
// ao.Keyring.Add's rule (the same SendID or RecvID on overlapping peers);
// an entry identical to an MKT of a keyring it clashes with is the same
// key configured on both ends and is not added twice. Each keyring takes
// its entries in one AddAll; an error names the file's entry.
func (ks *Keys) addAO(entries []aoEntry) ([]*ao.Keyring, error) {
	var groups [][]aoEntry
next:
	for _, e := range entries {
		v, err := e.cfg.Validate() // as a keyring holds it: peers masked and unmapped, maclen 0 the default
		if err != nil {
			return nil, &keys.EntryError{Kind: "ao", Index: e.entry, Name: ks.file.AO[e.entry].Name, Err: err}
		}
		// A capture is judged with every key of the file, whatever its
		// lifetimes (a capture's time is not the keyring's clock).
		v.Lifetime = keys.Lifetime{}
		for g, group := range groups {
			if !slices.ContainsFunc(group, func(o aoEntry) bool { return o.cfg.Clashes(v) }) {
				groups[g] = append(group, aoEntry{v, e.entry})
				continue next
			}
			if slices.ContainsFunc(group, func(o aoEntry) bool { return sameAO(o.cfg, v) }) {
				continue next
			}
		}
		groups = append(groups, []aoEntry{{v, e.entry}})
	}
	var rings []*ao.Keyring
	for _, group := range groups {
		var cfgs []keys.AO
		var names []string
		for _, e := range group {
			cfgs, names = append(cfgs, e.cfg), append(names, ks.file.AO[e.entry].Name)
		}
		r := ao.NewKeyring(nil) // the engine's default pool
		ms, err := r.AddAll(cfgs, names)
		if err != nil {
			var ee *keys.EntryError
			if errors.As(err, &ee) {
				ee.Index = group[ee.Index].entry // the file's index, not the group's
			}
			return nil, err
		}
		for j, m := range ms {
			ks.aoEntry[m] = group[j].entry
		}
		rings = append(rings, r)
	}
	return rings, nil
}

// sameAO reports whether a and b, both validated, are the same MKT.
func sameAO(a, b keys.AO) bool {
	return a.Peer == b.Peer && a.SendID == b.SendID && a.RecvID == b.RecvID && a.Algorithm == b.Algorithm &&
		a.MACLen == b.MACLen && a.ExcludeOptions == b.ExcludeOptions && a.IfIndex == b.IfIndex &&
		a.HasIfIndex == b.HasIfIndex && bytes.Equal(a.Key, b.Key)
}

// aoName returns the name of the entry an MKT was made from.
func (ks *Keys) aoName(m *ao.MKT) string {
	if i, ok := ks.aoEntry[m]; ok {
		return ks.aoNames[i]
	}
	return "?"
}

// entryName is how reports name entry i: its "name", else ao[i] or md5[i].
func entryName(Kind string, i int, name string) string {
	if name != "" {
		return name
	}
	return keyfile.Label(Kind, i, "")
}

// aoReadings returns the keyrings that judge TCP-AO segments from src to
// dst, and whether they hold the sender's keys mirrored.
func (ks *Keys) aoReadings(src, dst netip.Addr) (rings []*ao.Keyring, sender bool) {
	for _, r := range ks.aoRings {
		if r.Covers(src, 0) {
			rings = append(rings, r)
		}
	}
	if len(rings) > 0 {
		return rings, false
	}
	m := ks.mirrorOf(dst)
	return m.aoRings, len(m.aoRings) > 0
}

// md5Readings is aoReadings for TCP-MD5.
func (ks *Keys) md5Readings(src, dst netip.Addr) (*md5Keys, bool) {
	if ks.md5.covers(src) {
		return ks.md5, false
	}
	m := ks.mirrorOf(dst)
	return m.md5, m.md5.covers(src)
}

// relevant reports whether any key concerns traffic between a and b.
func (ks *Keys) relevant(a, b netip.Addr) bool {
	return ks.coversAny(a) || ks.coversAny(b)
}

// coversAny reports whether any entry's peer contains a.
func (ks *Keys) coversAny(a netip.Addr) bool {
	for _, r := range ks.aoRings {
		if r.Covers(a, 0) {
			return true
		}
	}
	return ks.md5.covers(a)
}

// mirrorOf returns the sender's keys for segments to dst: the entries
// whose peer contains dst, mirrored. They are built once per set of such
// entries, not per address: a capture of many addresses does not make
// more of them than the keys file has sets.
func (ks *Keys) mirrorOf(dst netip.Addr) *mirror {
	var buf [64]byte
	k := ks.mirrorKey(buf[:0], dst)
	if m, ok := ks.mirrors[string(k)]; ok {
		return m
	}
	m := &mirror{}
	anyPeer := netip.PrefixFrom(netip.IPv6Unspecified(), 0)
	if dst.Is4() {
		anyPeer = netip.PrefixFrom(netip.IPv4Unspecified(), 0)
	}
	var entries []aoEntry
	for i, e := range ks.file.AO {
		if !e.Config.Peer.Contains(dst) {
			continue
		}
		cfg := e.Config
		cfg.Peer, cfg.SendID, cfg.RecvID = anyPeer, e.Config.RecvID, e.Config.SendID
		cfg.IfIndex, cfg.HasIfIndex = 0, false
		entries = append(entries, aoEntry{cfg, i})
	}
	// The entries were added once already, so they cannot fail now.
	m.aoRings, _ = ks.addAO(entries)
	m.md5 = ks.md5.mirror(anyPeer, dst)
	ks.mirrors[string(k)] = m
	return m
}

// mirrorKey appends to b what mirrorOf(dst) is built from: dst's family,
// the TCP-AO entries whose peer contains dst, and the TCP-MD5 entries
// that verify segments to it (one per reading).
func (ks *Keys) mirrorKey(b []byte, dst netip.Addr) []byte {
	b = append(b, byte(dst.BitLen()))
	n := 0
	for _, e := range ks.file.AO {
		if e.Config.Peer.Contains(dst) {
			n++
		}
	}
	b = binary.AppendUvarint(b, uint64(n))
	for i, e := range ks.file.AO {
		if e.Config.Peer.Contains(dst) {
			b = binary.AppendUvarint(b, uint64(i))
		}
	}
	for _, r := range ks.md5.rings {
		if key := r.Lookup(dst, 0); key != nil {
			b = binary.AppendUvarint(b, uint64(ks.md5.entry[key]))
		}
	}
	return b
}

// aoCovering returns the names of the entries that cover src as a
// receiver's MKTs and their RecvIDs, for explaining a no-key verdict.
func (ks *Keys) aoCovering(rings []*ao.Keyring, src netip.Addr) (names []string, recvIDs []int) {
	for m, i := range ks.aoEntry {
		name := ks.aoNames[i]
		if !m.Peer().Contains(src) || !slices.ContainsFunc(rings, func(r *ao.Keyring) bool { return r.Find(m.Peer(), m.SendID(), m.RecvID()) == m }) {
			continue
		}
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
		if !slices.Contains(recvIDs, int(m.RecvID())) {
			recvIDs = append(recvIDs, int(m.RecvID()))
		}
	}
	slices.Sort(names)
	slices.Sort(recvIDs)
	return names, recvIDs
}
