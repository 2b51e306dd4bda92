package shim

import (
	"log/slog"
	"net/netip"

	"github.com/tcpsig/tcpsig/keyfile"
	"github.com/tcpsig/tcpsig/keys"
)

// Config configures a shim.
type Config struct {
	Keys   string       // path of the keys file (package keyfile); its peers are those covered
	Queue  uint16       // first netfilter queue number; the rules are the tables "tcpsig-shim-<Queue>"
	Queues int          // queues Queue, Queue+1, ... (one reader each, a connection on one); 0: one per CPU, at most 8
	Status string       // path of a unix socket serving the status as JSON over HTTP; "" for none
	State  string       // path of the TCP-AO sessions' state file; "" for none
	Log    *slog.Logger // nil: discard
}

// keySet is a keys file as the shim uses it: the MKTs and MD5 keys in file
// order, and the peer prefixes they cover.
type keySet struct {
	AO    []keys.AO
	MD5   []keys.MD5
	Peers []netip.Prefix
}

// loadKeys reads and validates the keys file at path.
func loadKeys(path string) (*keySet, error) {
	kf, err := keyfile.Load(path)
	if err != nil {
		return nil, err
	}
	k := &keySet{}
	seen := map[netip.Prefix]bool{}
	peer := func(p netip.Prefix) {
		p = p.Masked()
		if !seen[p] {
			seen[p] = true
			k.Peers = append(k.Peers, p)
		}
	}
	for _, e := range kf.AO {
		k.AO = append(k.AO, e.Config)
		peer(e.Config.Peer)
	}
	for _, e := range kf.MD5 {
		k.MD5 = append(k.MD5, e.Config)
		peer(e.Config.Peer)
	}
	return k, nil
}
