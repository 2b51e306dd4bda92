//go:build !linux

package shim

import "errors"

// readLinks cannot read interfaces outside Linux.
func readLinks() (map[uint32]link, error) { return nil, errors.ErrUnsupported }
