package pcapverify

import (
	"bytes"
	"errors"
	"net/netip"

	"github.com/tcpsig/tcpsig/keyfile"
	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/md5sig"
	"github.com/tcpsig/tcpsig/segment"
	"github.com/tcpsig/tcpsig/sigpool"
)

// md5Keys is the TCP-MD5 part of a keys file: md5sig keyrings (more than
// one only when two entries name the same peer with different keys, which
// one kernel keyring cannot hold: each is a reading).
type md5Keys struct {
	pool    *sigpool.Pool
	entries []keyfile.MD5
	labels  []string // entryName of each entry
	rings   []*md5sig.Keyring
	entry   map[*md5sig.Key]int // index in entries
}

func newMD5Keys(pool *sigpool.Pool, entries []keyfile.MD5) (*md5Keys, error) {
	k := &md5Keys{pool: pool, entries: entries, entry: map[*md5sig.Key]int{}}
	for i, e := range entries {
		k.labels = append(k.labels, entryName("md5", i, e.Name))
	}
	for i, e := range entries {
		if err := k.add(e.Config.Peer, i); err != nil {
			return nil, err
		}
	}
	return k, nil
}

// add puts entry i's key, for peer, into the first keyring that has no key
// for that exact prefix; an identical key is not added twice.
func (k *md5Keys) add(peer netip.Prefix, i int) error {
	key := k.entries[i].Config.Key
	for _, r := range k.rings {
		old := r.Find(peer, 0, false)
		if old == nil {
			return k.addTo(r, peer, i)
		}
		if bytes.Equal(k.entries[k.entry[old]].Config.Key, key) {
			return nil
		}
	}
	r := md5sig.NewKeyring(k.pool)
	k.rings = append(k.rings, r)
	return k.addTo(r, peer, i)
}

func (k *md5Keys) addTo(r *md5sig.Keyring, peer netip.Prefix, i int) error {
	key, err := r.Add(keys.MD5{Peer: peer, Key: k.entries[i].Config.Key})
	if err != nil {
		return errors.New(keyfile.Label("md5", i, k.entries[i].Name) + ": " + err.Error())
	}
	k.entry[key] = i
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
	m := &md5Keys{pool: k.pool, entries: k.entries, labels: k.labels, entry: map[*md5sig.Key]int{}}
	for _, r := range k.rings {
		if key := r.Lookup(dst, 0); key != nil {
			// The entry was added once already, so it cannot fail now.
			_ = m.add(peer, k.entry[key])
		}
	}
	return m
}

// verify judges a segment that carries a TCP-MD5 option under every
// reading: good under the first that verifies it, else bad. It returns the
// name of the key that judged it.
func (k *md5Keys) verify(seg *segment.Segment) (Verdict, string, error) {
	v, name := NoKey, ""
	var firstErr error
	for _, r := range k.rings {
		key := r.Lookup(seg.Src, 0)
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
