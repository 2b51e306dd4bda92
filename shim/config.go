package shim

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/netip"
	"strings"
	"time"

	"github.com/tcpsig/tcpsig/keychain"
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
	// Metrics is a TCP address ("127.0.0.1:9180") serving the metrics
	// (Prometheus' text format) at /metrics; "" for none. The status
	// socket serves them at /metrics too.
	Metrics string
	// Notify, if set, is told the shim's state in sd_notify(3)'s words:
	// "READY=1…" once Run has the rules in and answers packets,
	// "RELOADING=1…" and "READY=1…" around each reload, "STOPPING=1" as
	// Run returns. [Notify] sends them to systemd.
	Notify func(state string)
}

// keySet is a keys file as the shim uses it: the MKTs and MD5 keys in file
// order, and the peer prefixes they cover. Once applied its key bytes are
// wiped (the keyrings hold their own): what tells a changed key from the
// same one on the next reload is a fingerprint, keyed per process.
type keySet struct {
	AO    []keys.AO
	MD5   []keys.MD5
	aoFP  []fingerprint // of AO[i].Key
	md5FP []fingerprint // of MD5[i].Key
	Peers []netip.Prefix
	l3    []l3Entry // the entries bound to a VRF
}

// fingerprint is HMAC-SHA256 of a key under fpKey: equal for equal keys
// within this process, and telling nothing of a key without fpKey.
type fingerprint [sha256.Size]byte

var fpKey = func() []byte {
	k := make([]byte, 32)
	_, _ = rand.Read(k) // crypto/rand.Read never fails (it crashes the program instead)
	return k
}()

func fingerprintOf(key []byte) fingerprint {
	h := hmac.New(sha256.New, fpKey)
	h.Write(key)
	return fingerprint(h.Sum(nil))
}

// loadKeys reads and validates the keys file at path, refusing one that
// group or others may read or write or that a user other than root and
// the shim's own owns (keyfile.LoadPrivate).
func loadKeys(path string) (*keySet, error) {
	kf, err := keyfile.LoadPrivate(path)
	if err != nil {
		return nil, keysFileError(path, err)
	}
	// An entry bound to an interface that is no VRF would protect
	// nothing: refused, the whole file with it.
	if err := CheckIfIndexes(kf); err != nil {
		kf.Wipe()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	k := &keySet{l3: l3Entries(kf)}
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
		k.aoFP = append(k.aoFP, fingerprintOf(e.Config.Key))
		peer(e.Config.Peer)
	}
	for _, e := range kf.MD5 {
		k.MD5 = append(k.MD5, e.Config)
		k.md5FP = append(k.md5FP, fingerprintOf(e.Config.Key))
		peer(e.Config.Peer)
	}
	if err := k.check(); err != nil {
		k.wipe()
		return nil, err
	}
	// A schedule that leaves a peer without a send key (a gap, or a last
	// key's end) would stop its sessions at that moment: refused now.
	if tl := keychain.Check(kf, nil, time.Now()); len(tl.Problems) > 0 {
		k.wipe()
		return nil, fmt.Errorf("%s: %w: %s", path, ErrSchedule, strings.Join(tl.Problems, "; "))
	}
	return k, nil
}

// ErrSchedule is the error of a keys file whose lifetimes leave a peer,
// at some moment from now on, with no key inside its send lifetime
// (tcpsig keys check prints the timeline).
var ErrSchedule = errors.New("the key schedule leaves a peer without a send key")

// keysFileError words an error of the keys file at path as tcpsig verify
// does: "nope.json: no such file or directory", not "stat nope.json: …";
// "k.json: ao[0].rcvid: …". errors.Is still finds fs.ErrNotExist and
// keyfile's sentinels.
func keysFileError(path string, err error) error {
	var pe *fs.PathError
	switch {
	case errors.As(err, &pe):
		return fmt.Errorf("%s: %w", pe.Path, pe.Err)
	case errors.Is(err, keyfile.ErrMode), errors.Is(err, keyfile.ErrOwner):
		return err // it names the file
	}
	return fmt.Errorf("%s: %w", path, err)
}

// check refuses what a keyring would refuse once part of the file is in:
// two MKTs whose peer prefixes overlap (in overlapping L3 domains) with
// the same SendID or RecvID (RFC 5925 §3.1), which the keys file accepts
// for different prefixes.
func (k *keySet) check() error {
	type idKey struct {
		kind byte
		id   uint8
	}
	byID := map[idKey][]int{}
	for i, c := range k.AO {
		for _, id := range []idKey{{'s', c.SendID}, {'r', c.RecvID}} {
			for _, j := range byID[id] {
				o := k.AO[j]
				if o.Clashes(c) { // byID holds only entries with this ID
					what := "sndid"
					if id.kind == 'r' {
						what = "rcvid"
					}
					return fmt.Errorf("%w: ao[%d] and ao[%d]: overlapping peers %v and %v with the same %s %d",
						keyfile.ErrDuplicate, j, i, o.Peer, c.Peer, what, id.id)
				}
			}
			byID[id] = append(byID[id], i)
		}
	}
	return nil
}

// wipe clears the key bytes k holds.
func (k *keySet) wipe() {
	for i := range k.AO {
		clear(k.AO[i].Key)
	}
	for i := range k.MD5 {
		clear(k.MD5[i].Key)
	}
}

// sameAO reports whether entry i of a and entry j of b are the same MKT.
func sameAO(a *keySet, i int, b *keySet, j int) bool {
	x, y := a.AO[i], b.AO[j]
	return x.Peer.Masked() == y.Peer.Masked() && x.SendID == y.SendID && x.RecvID == y.RecvID &&
		x.Algorithm == y.Algorithm && a.aoFP[i] == b.aoFP[j] && x.MACLen == y.MACLen &&
		x.ExcludeOptions == y.ExcludeOptions && x.IfIndex == y.IfIndex && x.HasIfIndex == y.HasIfIndex &&
		sameLifetime(x.Lifetime, y.Lifetime)
}

// sameLifetime reports whether two lifetimes are the same schedule: an
// entry whose lifetime changed is a new key to the keyrings.
func sameLifetime(a, b keys.Lifetime) bool {
	same := func(x, y keys.Window) bool { return x.Start.Equal(y.Start) && x.End.Equal(y.End) }
	return same(a.Send, b.Send) && same(a.Accept, b.Accept) && a.Tolerance == b.Tolerance
}

// sameMD5 reports whether entry i of a and entry j of b are the same key.
func sameMD5(a *keySet, i int, b *keySet, j int) bool {
	x, y := a.MD5[i], b.MD5[j]
	return x.Peer.Masked() == y.Peer.Masked() && a.md5FP[i] == b.md5FP[j] && x.IfIndex == y.IfIndex && x.HasIfIndex == y.HasIfIndex &&
		sameLifetime(x.Lifetime, y.Lifetime)
}
