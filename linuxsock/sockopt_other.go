//go:build !linux

package linuxsock

import (
	"fmt"

	"github.com/tcpsig/tcpsig/keys"
)

func noAO(op string) error  { return fmt.Errorf("linuxsock: %s: %w", op, ErrNoAO) }
func noMD5(op string) error { return fmt.Errorf("linuxsock: %s: %w", op, ErrNoMD5) }

// AddAOKey returns an error wrapping ErrNoAO: only Linux has TCP_AO_ADD_KEY.
func AddAOKey(s Socket, c keys.AO, sel Select) error { return noAO("TCP_AO_ADD_KEY") }

// DeleteAOKey returns an error wrapping ErrNoAO.
func DeleteAOKey(s Socket, c keys.AO, d AODelete) error { return noAO("TCP_AO_DEL_KEY") }

// AOKeys returns an error wrapping ErrNoAO.
func AOKeys(s Socket) ([]AOKey, error) { return nil, noAO("TCP_AO_GET_KEYS") }

// ReadAOInfo returns an error wrapping ErrNoAO.
func ReadAOInfo(s Socket) (AOInfo, error) { return AOInfo{}, noAO("TCP_AO_INFO") }

// SelectAOKeys returns an error wrapping ErrNoAO.
func SelectAOKeys(s Socket, sel Select, sendID, recvID uint8) error { return noAO("TCP_AO_INFO") }

// SetAOFlags returns an error wrapping ErrNoAO.
func SetAOFlags(s Socket, required, acceptICMPs bool) error { return noAO("TCP_AO_INFO") }

// SetAOCounters returns an error wrapping ErrNoAO.
func SetAOCounters(s Socket, c AOCounters) error { return noAO("TCP_AO_INFO") }

// ReadAORepair returns an error wrapping ErrNoAO.
func ReadAORepair(s Socket) (AORepair, error) { return AORepair{}, noAO("TCP_AO_REPAIR") }

// SetAORepair returns an error wrapping ErrNoAO.
func SetAORepair(s Socket, r AORepair) error { return noAO("TCP_AO_REPAIR") }

// AddMD5Key returns an error wrapping ErrNoMD5: only Linux has TCP_MD5SIG.
func AddMD5Key(s Socket, c keys.MD5) error { return noMD5("TCP_MD5SIG") }

// DeleteMD5Key returns an error wrapping ErrNoMD5.
func DeleteMD5Key(s Socket, c keys.MD5) error { return noMD5("TCP_MD5SIG") }

// ProbeAO returns an error wrapping ErrNoAO.
func ProbeAO() error { return noAO("probe") }

// ProbeMD5 returns an error wrapping ErrNoMD5.
func ProbeMD5() error { return noMD5("probe") }
