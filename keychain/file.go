package keychain

import (
	"bytes"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tcpsig/tcpsig/keyfile"
	"github.com/tcpsig/tcpsig/keys"
)

// Import reads an ietf-key-chain document and returns the keys file
// entries of the chains that peers names, for each of their peers: one
// entry per key and peer, named "CHAIN/KEY-ID", in document order. A
// chain that peers names and the document lacks is an [ErrPeers] error;
// the document's other chains are left out. The result is checked as
// keyfile.Parse checks a file (an error wraps keyfile's sentinel).
func Import(doc []byte, peers map[string][]netip.Prefix) (*keyfile.File, error) {
	chains, err := Parse(doc)
	if err != nil {
		return nil, err
	}
	defer Wipe(chains)
	return Entries(chains, peers)
}

// Entries is Import after Parse: the entries of chains for peers.
func Entries(chains []Chain, peers map[string][]netip.Prefix) (*keyfile.File, error) {
	names := make([]string, 0, len(peers))
	for name := range peers {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if !slices.ContainsFunc(chains, func(c Chain) bool { return c.Name == name }) {
			return nil, errorf(chainPath(name), ErrPeers, "no such key-chain in the document")
		}
		if len(peers[name]) == 0 {
			return nil, errorf(chainPath(name), ErrPeers, "no peer given")
		}
	}
	var f keyfile.File
	defer f.Wipe()
	var tols []int64
	for _, c := range chains {
		for _, p := range peers[c.Name] {
			if !p.IsValid() {
				return nil, errorf(chainPath(c.Name), ErrPeers, "an invalid peer prefix")
			}
			for _, k := range c.Keys {
				name := c.Name + "/" + strconv.FormatUint(k.ID, 10)
				if k.MD5 {
					f.MD5 = append(f.MD5, keyfile.MD5{Name: name, Config: keys.MD5{Peer: p, Key: bytes.Clone(k.Key), Lifetime: k.Lifetime}})
				} else {
					f.AO = append(f.AO, keyfile.AO{Name: name, Config: keys.AO{Peer: p, SendID: k.SendID, RecvID: k.RecvID,
						Algorithm: k.Algorithm, Key: bytes.Clone(k.Key), ExcludeOptions: k.ExcludeOptions, Lifetime: k.Lifetime}})
				}
				tols = append(tols, int64(k.Lifetime.Tolerance))
			}
		}
	}
	if len(tols) > 0 && !slices.ContainsFunc(tols, func(t int64) bool { return t != tols[0] }) {
		f.AcceptTolerance = time.Duration(tols[0])
	}
	b, err := f.Marshal()
	defer clear(b)
	if err != nil {
		return nil, &Error{Err: err, msg: "as a keys file: " + err.Error()}
	}
	out, err := keyfile.Parse(b)
	if err != nil {
		return nil, &Error{Err: err, msg: "as a keys file: " + err.Error()}
	}
	return out, nil
}

// Export writes the entries of a keys file as an ietf-key-chain document
// (keys included: a secret), and returns the peers of each chain, which
// the document cannot hold. Entries named "CHAIN/KEY-ID" go to that
// chain as that key; the others to a chain named after their peer, with
// the next free key-ids. What the model cannot say is an
// [ErrUnrepresentable] error naming the entry.
func Export(f *keyfile.File) (doc []byte, peers map[string][]netip.Prefix, err error) {
	chains, peers, err := FromFile(f)
	if err != nil {
		return nil, nil, err
	}
	defer Wipe(chains)
	doc, err = Marshal(chains)
	return doc, peers, err
}

// FromFile is Export before Marshal: the chains of f's entries and their
// peers. The chains hold copies of f's keys ([Wipe] them).
func FromFile(f *keyfile.File) ([]Chain, map[string][]netip.Prefix, error) {
	if f == nil {
		return nil, nil, errorf("", ErrUnrepresentable, "no keys file")
	}
	b := builder{index: map[string]int{}, peers: map[string][]netip.Prefix{}, has: map[string]map[netip.Prefix][]uint64{}}
	for i, e := range f.AO {
		label := keyfile.Label("ao", i, e.Name)
		k, err := aoKey(label, e.Config)
		if err != nil {
			Wipe(b.chains)
			return nil, nil, err
		}
		if err := b.add(label, e.Name, e.Config.Peer, k); err != nil {
			clear(k.Key)
			Wipe(b.chains)
			return nil, nil, err
		}
	}
	for i, e := range f.MD5 {
		label := keyfile.Label("md5", i, e.Name)
		if e.Config.HasIfIndex {
			Wipe(b.chains)
			return nil, nil, errorf(label, ErrUnrepresentable, "an ifindex: a key chain is bound to no interface")
		}
		k := Key{MD5: true, Key: bytes.Clone(e.Config.Key), Lifetime: e.Config.Lifetime}
		if err := b.add(label, e.Name, e.Config.Peer, k); err != nil {
			clear(k.Key)
			Wipe(b.chains)
			return nil, nil, err
		}
	}
	if err := b.complete(); err != nil {
		Wipe(b.chains)
		return nil, nil, err
	}
	return b.chains, b.peers, nil
}

// aoKey is a TCP-AO entry as a chain's key, or the error for what the
// model cannot say of it.
func aoKey(label string, c keys.AO) (Key, error) {
	alg := c.Algorithm
	if alg == "cmac(aes)" && len(c.Key) == 16 {
		alg = "cmac(aes128)" // the same MAC for a 16-byte key: RFC 5926 reduces only other lengths
	}
	switch {
	case toIdentity[alg] == "":
		return Key{}, errorf(label, ErrUnrepresentable,
			"%s has no identity in ietf-key-chain or ietf-tcp (they name hmac(sha1), hmac(sha256), hmac(sha384), hmac(sha512) and cmac(aes128))", c.Algorithm)
	case c.MACLen != keys.DefaultMACLen && c.MACLen != 0:
		return Key{}, errorf(label, ErrUnrepresentable, "maclen %d: the model has no MAC length, and its algorithms mean 12 bytes", c.MACLen)
	case c.HasIfIndex:
		return Key{}, errorf(label, ErrUnrepresentable, "an ifindex: a key chain is bound to no interface")
	}
	return Key{Algorithm: alg, Key: bytes.Clone(c.Key), SendID: c.SendID, RecvID: c.RecvID, ExcludeOptions: c.ExcludeOptions, Lifetime: c.Lifetime}, nil
}

// builder gathers entries into chains.
type builder struct {
	chains []Chain
	index  map[string]int // chain name → index in chains
	peers  map[string][]netip.Prefix
	has    map[string]map[netip.Prefix][]uint64 // the key-ids each chain has for each peer
}

// add puts entry label (named name, for peer) into its chain as k.
func (b *builder) add(label, name string, peer netip.Prefix, k Key) error {
	chain, id, named := chainKey(name)
	if !named {
		chain = peer.String()
	}
	ci, ok := b.index[chain]
	if !ok {
		ci = len(b.chains)
		b.index[chain] = ci
		b.chains = append(b.chains, Chain{Name: chain, Tolerance: k.Lifetime.Tolerance})
		b.has[chain] = map[netip.Prefix][]uint64{}
	}
	c := &b.chains[ci]
	if c.Tolerance != k.Lifetime.Tolerance {
		return errorf(label, ErrUnrepresentable, "accept tolerance %v, but key-chain %s has %v: the model has one per chain", k.Lifetime.Tolerance, chain, c.Tolerance)
	}
	if !named {
		id = 1
		for _, o := range c.Keys {
			id = max(id, o.ID+1)
		}
	}
	k.ID = id
	if j := slices.IndexFunc(c.Keys, func(o Key) bool { return o.ID == id }); j >= 0 {
		if !sameKey(c.Keys[j], k) {
			return errorf(label, ErrUnrepresentable, "key %d of key-chain %s differs from the one another peer's entry gives it", id, chain)
		}
		clear(k.Key) // the chain has its own copy
	} else {
		c.Keys = append(c.Keys, k)
	}
	if !slices.Contains(b.peers[chain], peer) {
		b.peers[chain] = append(b.peers[chain], peer)
	}
	if slices.Contains(b.has[chain][peer], id) {
		return errorf(label, ErrUnrepresentable, "a second entry for key %d of key-chain %s and peer %v", id, chain, peer)
	}
	b.has[chain][peer] = append(b.has[chain][peer], id)
	return nil
}

// complete refuses a chain that some of its peers have only part of: the
// document would give every peer every key.
func (b *builder) complete() error {
	for _, c := range b.chains {
		for _, p := range b.peers[c.Name] {
			if n := len(b.has[c.Name][p]); n != len(c.Keys) {
				return errorf(chainPath(c.Name), ErrUnrepresentable, "peer %v has %d of the chain's %d keys: a key chain gives all its peers every key", p, n, len(c.Keys))
			}
		}
	}
	return nil
}

// chainKey splits an entry name "CHAIN/KEY-ID".
func chainKey(name string) (chain string, id uint64, ok bool) {
	i := strings.LastIndexByte(name, '/')
	if i <= 0 {
		return "", 0, false
	}
	id, err := strconv.ParseUint(name[i+1:], 10, 64)
	if err != nil || strconv.FormatUint(id, 10) != name[i+1:] {
		return "", 0, false
	}
	return name[:i], id, true
}

// sameKey reports whether a and b are one key of a chain.
func sameKey(a, b Key) bool {
	la, lb := a.Lifetime, b.Lifetime
	return a.MD5 == b.MD5 && a.Algorithm == b.Algorithm && bytes.Equal(a.Key, b.Key) && a.SendID == b.SendID &&
		a.RecvID == b.RecvID && a.ExcludeOptions == b.ExcludeOptions && la.Tolerance == lb.Tolerance &&
		la.Send.Start.Equal(lb.Send.Start) && la.Send.End.Equal(lb.Send.End) &&
		la.Accept.Start.Equal(lb.Accept.Start) && la.Accept.End.Equal(lb.Accept.End)
}

// String lists chains without their keys, for messages and tests.
func String(chains []Chain) string {
	var s strings.Builder
	for _, c := range chains {
		fmt.Fprintf(&s, "key-chain %s (tolerance %v)\n", c.Name, c.Tolerance)
		for _, k := range c.Keys {
			fmt.Fprintf(&s, "  %v\n", k)
		}
	}
	return s.String()
}
