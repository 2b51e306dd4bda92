package shim

import (
	"errors"
	"fmt"

	"github.com/tcpsig/tcpsig/keyfile"
)

// ErrIfIndex: a keys file entry bound to an L3 domain ("ifindex": N, N >
// 0) whose interface does not exist or is not an L3 master (VRF) device.
// Linux refuses such a key (EINVAL); the shim refuses the file, at start
// and on reload, since no packet would ever be in that domain and the
// entry would protect nothing.
var ErrIfIndex = errors.New("not an L3 master (VRF) device: Linux refuses such a key (EINVAL) and the shim cannot enforce it")

// l3Entry is an entry of a keys file bound to a VRF: its label
// (ao[2] ("name")) and the VRF's ifindex.
type l3Entry struct {
	label   string
	ifindex int
}

// l3Entries returns f's entries bound to an L3 domain other than the
// default one.
func l3Entries(f *keyfile.File) []l3Entry {
	var es []l3Entry
	for i, e := range f.AO {
		if e.Config.HasIfIndex && e.Config.IfIndex != 0 {
			es = append(es, l3Entry{keyfile.Label("ao", i, e.Name), e.Config.IfIndex})
		}
	}
	for i, e := range f.MD5 {
		if e.Config.HasIfIndex && e.Config.IfIndex != 0 {
			es = append(es, l3Entry{keyfile.Label("md5", i, e.Name), e.Config.IfIndex})
		}
	}
	return es
}

// link is what the shim needs of a network interface: its name, its
// master's ifindex (0 for none) and whether it is a VRF (an L3 master).
type link struct {
	name   string
	master uint32
	vrf    bool
}

// CheckIfIndexes refuses f's entries bound to an L3 domain ("ifindex": N,
// N > 0) whose interface, in the calling thread's network namespace, does
// not exist or is not a VRF device: each error names its entry and wraps
// ErrIfIndex. "ifindex": 0 (the default domain) needs no interface. It
// reads the interfaces only when some entry needs it; where they cannot
// be read (not Linux) the error wraps errors.ErrUnsupported too. The shim
// runs it on every load; tcpsig keys check runs it on the host it is
// run on.
func CheckIfIndexes(f *keyfile.File) error {
	if f == nil {
		return nil
	}
	es := l3Entries(f)
	if len(es) == 0 {
		return nil
	}
	links, err := readLinks()
	if err != nil {
		return fmt.Errorf("%s: ifindex %d: %w: reading the interfaces: %w", es[0].label, es[0].ifindex, ErrIfIndex, err)
	}
	return checkL3(es, links)
}

// checkL3 returns an error for each of es whose ifindex is not a VRF in
// links.
func checkL3(es []l3Entry, links map[uint32]link) error {
	var errs []error
	for _, e := range es {
		l, ok := links[uint32(e.ifindex)]
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("%s: ifindex %d: no such interface: %w", e.label, e.ifindex, ErrIfIndex))
		case !l.vrf:
			errs = append(errs, fmt.Errorf("%s: ifindex %d (%s): %w", e.label, e.ifindex, l.name, ErrIfIndex))
		}
	}
	return errors.Join(errs...)
}

// domains maps each interface of links to its L3 domain, as Linux's
// l3mdev_master_ifindex: a VRF's own ifindex, its master's for an
// interface enslaved to a VRF, else 0.
func domains(links map[uint32]link) map[uint32]int {
	m := make(map[uint32]int, len(links))
	for i, l := range links {
		switch {
		case l.vrf:
			m[i] = int(i)
		case l.master != 0 && links[l.master].vrf:
			m[i] = int(l.master)
		default:
			m[i] = 0
		}
	}
	return m
}
