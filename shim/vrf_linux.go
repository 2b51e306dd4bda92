//go:build linux

package shim

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"

	"github.com/tcpsig/tcpsig/segment"
	"github.com/tcpsig/tcpsig/shim/nfqueue"
)

// VRF support: each queued packet's L3 domain comes from the interface
// the queue message names (NFQA_IFINDEX_INDEV on input, OUTDEV on
// output), mapped to its VRF the way Linux's l3mdev_master_ifindex does,
// from a table of the namespace's links read over rtnetlink once and
// again on each link notification, or when a packet names an interface
// the table does not know. The packet path reads the table without a
// system call or a lock.

// ErrUnknownInterface: a queued packet names an interface the shim cannot
// place in an L3 domain (it went away as the packet was queued, or the
// link table cannot be read): the packet is dropped, never judged in a
// domain that may not be its own.
var ErrUnknownInterface = errors.New("shim: packet's interface not in the link table: its L3 domain is unknown")

// missInterval bounds how often packets naming unknown interfaces make
// the table be read again.
const missInterval = 100 * time.Millisecond

// readLinks reads the links of the calling thread's network namespace.
func readLinks() (map[uint32]link, error) {
	c, err := netlink.Dial(unix.NETLINK_ROUTE, nil)
	if err != nil {
		return nil, fmt.Errorf("rtnetlink: %w", err)
	}
	defer c.Close()
	return dumpLinks(c)
}

// dumpLinks asks c for every link (RTM_GETLINK, a dump).
func dumpLinks(c *netlink.Conn) (map[uint32]link, error) {
	msgs, err := c.Execute(netlink.Message{
		Header: netlink.Header{Type: unix.RTM_GETLINK, Flags: netlink.Request | netlink.Dump},
		Data:   make([]byte, unix.SizeofIfInfomsg),
	})
	if err != nil {
		return nil, fmt.Errorf("rtnetlink: RTM_GETLINK: %w", err)
	}
	links := make(map[uint32]link, len(msgs))
	for _, m := range msgs {
		if m.Header.Type != unix.RTM_NEWLINK {
			continue
		}
		i, l, err := parseLink(m.Data)
		if err != nil {
			return nil, err
		}
		links[i] = l
	}
	return links, nil
}

// parseLink reads an RTM_NEWLINK message: ifinfomsg, then its
// attributes (IFLA_IFNAME, IFLA_MASTER, IFLA_LINKINFO's IFLA_INFO_KIND).
func parseLink(b []byte) (uint32, link, error) {
	if len(b) < unix.SizeofIfInfomsg {
		return 0, link{}, fmt.Errorf("rtnetlink: short ifinfomsg (%d bytes)", len(b))
	}
	var l link
	index := binary.NativeEndian.Uint32(b[4:8]) // ifi_index
	ad, err := netlink.NewAttributeDecoder(b[unix.SizeofIfInfomsg:])
	if err != nil {
		return 0, link{}, fmt.Errorf("rtnetlink: link %d: %w", index, err)
	}
	for ad.Next() {
		switch ad.Type() {
		case unix.IFLA_IFNAME:
			l.name = ad.String()
		case unix.IFLA_MASTER:
			l.master = ad.Uint32()
		case unix.IFLA_LINKINFO:
			ad.Nested(func(nad *netlink.AttributeDecoder) error {
				for nad.Next() {
					if nad.Type() == unix.IFLA_INFO_KIND {
						l.vrf = nad.String() == "vrf"
					}
				}
				return nil
			})
		}
	}
	if err := ad.Err(); err != nil {
		return 0, link{}, fmt.Errorf("rtnetlink: link %d: %w", index, err)
	}
	return index, l, nil
}

// l3Map maps interface indexes to L3 domains for the packet path.
type l3Map struct {
	log     *slog.Logger
	req     *netlink.Conn // dumps
	watch   *netlink.Conn // RTMGRP_LINK notifications
	snap    atomic.Pointer[map[uint32]int]
	links   atomic.Pointer[map[uint32]link] // the table snap was made from
	mu      sync.Mutex                      // one dump at a time
	missed  time.Time                       // when a miss last read the table; under mu
	closed  atomic.Bool
	done    chan struct{}
	reads   atomic.Uint64 // times the table was read
	unknown atomic.Uint64 // packets whose interface stayed unknown
}

// openL3Map reads the link table of the calling thread's network
// namespace and follows its changes until Close.
func openL3Map(log *slog.Logger) (*l3Map, error) {
	req, err := netlink.Dial(unix.NETLINK_ROUTE, nil)
	if err != nil {
		return nil, fmt.Errorf("rtnetlink: %w", err)
	}
	watch, err := netlink.Dial(unix.NETLINK_ROUTE, &netlink.Config{Groups: unix.RTMGRP_LINK})
	if err != nil {
		req.Close()
		return nil, fmt.Errorf("rtnetlink: link notifications: %w", err)
	}
	m := &l3Map{log: log, req: req, watch: watch, done: make(chan struct{})}
	// Subscribed first, then read: a change between the two is both in
	// the table and notified.
	if err := m.refresh(); err != nil {
		req.Close()
		watch.Close()
		return nil, err
	}
	go m.follow()
	return m, nil
}

// Close stops following the link table.
func (m *l3Map) Close() {
	if m == nil || m.closed.Swap(true) {
		return
	}
	m.watch.Close()
	<-m.done
	m.req.Close()
}

// refresh reads the link table again.
func (m *l3Map) refresh() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.refreshLocked()
}

func (m *l3Map) refreshLocked() error {
	if m.req == nil {
		return errors.New("rtnetlink: no link table socket")
	}
	links, err := dumpLinks(m.req)
	if err != nil {
		return err
	}
	d := domains(links)
	m.links.Store(&links)
	m.snap.Store(&d)
	m.reads.Add(1)
	return nil
}

// follow reads the table again after each batch of link notifications,
// and after notifications were lost (ENOBUFS).
func (m *l3Map) follow() {
	defer close(m.done)
	for {
		_, err := m.watch.Receive()
		if m.closed.Load() {
			return
		}
		if err != nil && !errors.Is(err, unix.ENOBUFS) {
			m.log.Error("link notifications", "err", err)
			time.Sleep(missInterval)
		}
		if err := m.refresh(); err != nil {
			m.log.Error("reading the link table", "err", err)
		}
	}
}

// domain returns the L3 domain of the interface with index ifindex (0,
// none: the default domain), or false if it is not in the table even
// after reading it again (at most once per missInterval). A nil map (no
// Run) puts every interface in the default domain.
func (m *l3Map) domain(ifindex uint32) (int, bool) {
	if ifindex == 0 || m == nil {
		return 0, true
	}
	if d, ok := (*m.snap.Load())[ifindex]; ok {
		return d, true
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if d, ok := (*m.snap.Load())[ifindex]; ok {
		return d, true
	}
	if now := time.Now(); now.Sub(m.missed) >= missInterval {
		m.missed = now
		if err := m.refreshLocked(); err != nil {
			m.log.Error("reading the link table", "err", err)
		}
		if d, ok := (*m.snap.Load())[ifindex]; ok {
			return d, true
		}
	}
	m.unknown.Add(1)
	return 0, false
}

// inbound passes a packet from the input hook through the layer in the
// L3 domain of the interface it came in by.
func (s *Shim) inbound(dst []byte, p *nfqueue.Packet) ([]byte, error) {
	l3, ok := s.l3.domain(p.InDev)
	if !ok {
		return nil, ErrUnknownInterface
	}
	return s.layer.InboundL3(dst, p.Payload, l3)
}

// outbound passes a packet from the output hook through the layer in the
// L3 domain of the interface it leaves by. A packet routed through a VRF
// meets the output hook twice (Linux's vrf_ip_out, then vrf_ip_local_out
// or __ip_local_out): first by the VRF device, where it is signed, then
// by the enslaved device; that second pass of a packet that already
// carries its option is accepted as it is, since signing it again would
// refuse it.
func (s *Shim) outbound(dst []byte, p *nfqueue.Packet) ([]byte, error) {
	l3, ok := s.l3.domain(p.OutDev)
	if !ok {
		return nil, ErrUnknownInterface
	}
	if l3 != 0 && uint32(l3) != p.OutDev && signed(p.Payload) {
		return p.Payload, nil
	}
	return s.layer.OutboundL3(dst, p.Payload, l3)
}

// signed reports whether pkt is a TCP segment with a TCP-AO or TCP-MD5
// option.
func signed(pkt []byte) bool {
	seg, err := segment.ParsePacket(pkt)
	return err == nil && (seg.Auth().AO > 0 || seg.Auth().MD5 > 0)
}

// openL3 opens the L3 domain map in the calling thread's namespace and
// refuses keys bound to an interface that is no VRF there.
func (s *Shim) openL3() error {
	m, err := openL3Map(s.log)
	if err != nil {
		return err
	}
	s.mu.Lock()
	err = checkL3(s.keys.l3, *m.links.Load())
	s.mu.Unlock()
	if err != nil {
		m.Close()
		return fmt.Errorf("%s: %w", s.cfg.Keys, err)
	}
	s.l3 = m
	return nil
}
