//go:build linux

package netns

import (
	"encoding/binary"
	"fmt"
	"net"
	"syscall"
)

// rtnetlink attribute numbers package syscall lacks.
const (
	iflaLinkInfo = 18 // IFLA_LINKINFO
	iflaInfoKind = 1  // IFLA_INFO_KIND
	iflaInfoData = 2  // IFLA_INFO_DATA
	iflaVRFTable = 1  // IFLA_VRF_TABLE
	iflaMaster   = 10 // IFLA_MASTER
)

// AddVRF creates a VRF device (CONFIG_NET_VRF) named name for routing
// table table, down. A kernel without VRF answers EOPNOTSUPP.
func AddVRF(name string, table uint32) error {
	var data msg
	data.attr(iflaVRFTable, binary.NativeEndian.AppendUint32(nil, table))
	return addLink(name, "vrf", data.b)
}

func addLink(name, kind string, data []byte) error {
	m := newLinkMsg(name, kind, data)
	if err := m.do(); err != nil {
		return fmt.Errorf("netns: add %s link %s: %w", kind, name, err)
	}
	return nil
}

// newLinkMsg is the RTM_NEWLINK request that creates the link name of
// kind, with data (nil: none) as its IFLA_INFO_DATA.
func newLinkMsg(name, kind string, data []byte) *msg {
	var info msg
	info.attr(iflaInfoKind, []byte(kind))
	if data != nil {
		info.attr(syscall.NLA_F_NESTED|iflaInfoData, data)
	}
	var m msg
	m.header(syscall.RTM_NEWLINK, syscall.NLM_F_CREATE|syscall.NLM_F_EXCL)
	m.ifinfo(0, 0)
	m.attr(syscall.IFLA_IFNAME, append([]byte(name), 0))
	m.attr(syscall.NLA_F_NESTED|iflaLinkInfo, info.b)
	return &m
}

// SetMaster enslaves the interface named name to master (a VRF, say).
func SetMaster(name, master string) error {
	ifi, err := net.InterfaceByName(name)
	if err != nil {
		return fmt.Errorf("netns: %w", err)
	}
	mi, err := net.InterfaceByName(master)
	if err != nil {
		return fmt.Errorf("netns: %w", err)
	}
	var m msg
	m.header(syscall.RTM_NEWLINK, 0)
	m.ifinfo(int32(ifi.Index), 0)
	m.attr(iflaMaster, binary.NativeEndian.AppendUint32(nil, uint32(mi.Index)))
	if err := m.do(); err != nil {
		return fmt.Errorf("netns: set master of %s to %s: %w", name, master, err)
	}
	return nil
}

// ifinfo appends a struct ifinfomsg for interface index (0: a new one)
// that sets the flags set (0: changes no flags).
func (m *msg) ifinfo(index int32, set uint32) {
	m.u8(syscall.AF_UNSPEC)
	m.u8(0)
	m.u16(0)
	m.u32(uint32(index))
	m.u32(set) // ifi_flags
	m.u32(set) // ifi_change
}
