package tcpsig_test

import (
	"go/parser"
	"go/token"
	"regexp"
	"strings"
	"testing"
)

// Issue 29: mac and sigpool are public, and their docs say at once (the
// paragraph after the first) that most programs do not need them, and
// which packages they need instead.
func TestLowLevelDocsPointUp(t *testing.T) {
	for _, file := range []string{"mac/doc.go", "sigpool/sigpool.go"} {
		f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.ParseComments|parser.PackageClauseOnly)
		if err != nil || f.Doc == nil {
			t.Fatalf("%s: %v, no package doc", file, err)
		}
		paras := strings.Split(f.Doc.Text(), "\n\n")
		if len(paras) < 2 || !strings.HasPrefix(paras[1], "Most programs do not need it") {
			t.Errorf("%s: the doc's second paragraph does not say most programs do not need it:\n%s", file, f.Doc.Text())
			continue
		}
		for _, up := range []string{"ao", "md5sig", "packetauth"} {
			if !regexp.MustCompile(`\b` + up + `\b`).MatchString(paras[1]) {
				t.Errorf("%s: the doc does not point to %s:\n%s", file, up, paras[1])
			}
		}
	}
}
