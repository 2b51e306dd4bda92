package main

import (
	"fmt"
	"runtime/debug"
	"strings"
)

// release is tcpsig's semantic version, the newest heading of
// CHANGELOG.md.
const release = "v0.11.0"

// version describes the binary: its release, then from its build
// information the module version ("(devel)" when built from a clone;
// left out when it is the release), the commit and its time, and whether
// the tree had uncommitted changes, then the Go version.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "tcpsig " + release + " (no build information)"
	}
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	s := []string{"tcpsig", release}
	if v != release {
		s = append(s, v)
	}
	settings := map[string]string{}
	for _, kv := range bi.Settings {
		settings[kv.Key] = kv.Value
	}
	if rev := settings["vcs.revision"]; rev != "" {
		s = append(s, "commit "+rev)
		if t := settings["vcs.time"]; t != "" {
			s = append(s, t)
		}
		if settings["vcs.modified"] == "true" {
			s = append(s, "(with uncommitted changes)")
		}
	}
	s = append(s, bi.GoVersion)
	return fmt.Sprint(strings.Join(s, " "))
}
