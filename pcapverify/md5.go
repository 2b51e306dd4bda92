package pcapverify

import (
	"bytes"
	"errors"
	"net/netip"
	"slices"

	"github.com/tcpsig/tcpsig/keyfile"
	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/md5sig"
	"github.com/tcpsig/tcpsig/segment"
)

// md5Keys is the TCP-MD5 part of a keys file: md5sig keyrings (more than
// one only when two entries name the same peer with different keys, which
// one kernel keyring cannot hold: each is a reading).
type md5Keys struct {
	entries []keyfile.MD5
	labels  []string // entryName of each entry
	rings   []*md5sig.Keyring
	entry   map[*md5sig.Key]int // index in entries
}

// newMD5Keys builds the keyrings of the file's "md5" entries.
func newMD5Keys(entries []keyfile.MD5) (*md5Keys, error) {
	k := &md5Keys{entries: entries, entry: map[*md5sig.Key]int{}}
	var all []md5Entry
	for i, e := range entries {
		k.labels = append(k.labels, entryName("md5", i, e.Name))
		all = append(all, md5Entry{e.Config.Peer, i})
	}
	if err := k.add(all); err != nil {
		return nil, err
	}
	return k, nil
}

// md5Entry is entry i of the file's "md5" list, for peer.
type md5Entry struct {
	peer netip.Prefix
	i    int
}

// add puts each entry's key, for its peer, into the first keyring that
// has no key for that exact prefix (an identical key is not added twice),
// each keyring's keys in one AddAll; an error names the file's entry.
func (k *md5Keys) add(entries []md5Entry) error {
	var groups [][]keys.MD5
	var index [][]int // the entries of each group
next:
	for _, e := range entries {
		c, err := keys.MD5{Peer: e.peer, Key: k.entries[e.i].Config.Key}.Validate() // the prefix as a keyring holds it
		if err != nil {
			return &keys.EntryError{Kind: "md5", Index: e.i, Name: k.entries[e.i].Name, Err: err}
		}
		for g, group := range groups {
			j := slices.IndexFunc(group, func(o keys.MD5) bool { return o.Peer == c.Peer })
			if j < 0 {
				groups[g], index[g] = append(group, c), append(index[g], e.i)
				continue next
			}
			if bytes.Equal(group[j].Key, c.Key) {
				continue next
			}
		}
		groups, index = append(groups, []keys.MD5{c}), append(index, []int{e.i})
	}
	for g, group := range groups {
		var names []string
		for _, i := range index[g] {
			names = append(names, k.entries[i].Name)
		}
		r := md5sig.NewKeyring(nil) // the engine's default pool
		ks, err := r.AddAll(group, names)
		if err != nil {
			var ee *keys.EntryError
			if errors.As(err, &ee) {
				ee.Index = index[g][ee.Index] // the file's index, not the group's
			}
			return err
		}
		for j, key := range ks {
			k.entry[key] = index[g][j]
		}
		k.rings = append(k.rings, r)
	}
	return nil
}

// covers reports whether a key would verify segments from addr.
func (k *md5Keys) covers(addr netip.Addr) bool {
	for _, r := range k.rings {
		if r.Lookup(addr, 0) != nil {
			return true
		}
	}
	return false
}

// mirror returns the sender's keys for segments to dst (the keys whose
// peer contains dst, the longest prefix first), as keys for peer: TCP-MD5
// keys are the same on both ends.
func (k *md5Keys) mirror(peer netip.Prefix, dst netip.Addr) *md5Keys {
	m := &md5Keys{entries: k.entries, labels: k.labels, entry: map[*md5sig.Key]int{}}
	var entries []md5Entry
	for _, r := range k.rings {
		if key := r.Lookup(dst, 0); key != nil {
			entries = append(entries, md5Entry{peer, k.entry[key]})
		}
	}
	// The entries were added once already, so they cannot fail now.
	_ = m.add(entries)
	return m
}

// verify judges a segment that carries a TCP-MD5 option under every
// reading: good under the first that verifies it, else bad. It returns the
// name of the key that judged it.
func (k *md5Keys) verify(seg *segment.Segment) (Verdict, string, error) {
	v, name := NoKey, ""
	var firstErr error
	for _, r := range k.rings {
		key := r.Lookup(seg.Src(), 0)
		if key == nil {
			continue
		}
		err := r.Verify(seg, 0)
		if err == nil {
			return Good, k.name(key), nil
		}
		if v == NoKey {
			v, name, firstErr = Bad, k.name(key), err
			if !errors.Is(err, md5sig.ErrBadMAC) {
				v = Malformed
			}
		}
	}
	return v, name, firstErr
}

// names returns the names of the keys that cover addr, one per reading.
func (k *md5Keys) names(addr netip.Addr) []string {
	var names []string
	for _, r := range k.rings {
		if key := r.Lookup(addr, 0); key != nil {
			names = append(names, k.name(key))
		}
	}
	return names
}

// name is how reports name the entry a key was made from.
func (k *md5Keys) name(key *md5sig.Key) string {
	return k.labels[k.entry[key]]
}
