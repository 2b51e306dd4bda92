package tcpsig_test

import (
	"strings"
	"testing"
)

// TestConfigPullsNoEngine: the packages that only describe keys (the keys
// file, kernel socket options) build without the signing engine: their
// configuration types live in package keys, and keyfile validates without
// deriving a key (issue 19, item 6).
func TestConfigPullsNoEngine(t *testing.T) {
	deps := goCmd(t, ".", "list", "-deps", "./linuxsock", "./keyfile")
	for _, engine := range []string{
		"github.com/tcpsig/tcpsig/sigpool", "github.com/tcpsig/tcpsig/internal/reclaim",
		"github.com/tcpsig/tcpsig/internal/prefixmap", "github.com/tcpsig/tcpsig/scratch",
		"github.com/tcpsig/tcpsig/kdf", "github.com/klauspost/cpuid",
		"github.com/tcpsig/tcpsig/ao", "github.com/tcpsig/tcpsig/md5sig",
	} {
		for _, d := range strings.Fields(deps) {
			if d == engine || strings.HasPrefix(d, engine+"/") {
				t.Errorf("go list -deps ./linuxsock ./keyfile names %s", d)
			}
		}
	}
}
