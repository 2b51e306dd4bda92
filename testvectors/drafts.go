package testvectors

import (
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
)

var (
	//go:embed rfc/rfc5869-hkdf-sha256-vectors.json
	rfc5869 string
	//go:embed rfc/sp800-185-kmac256-vectors.json
	sp800185 string
)

// HKDF is one RFC 5869 HKDF-SHA256 case: PRK = Extract(Salt, IKM) and
// OKM = Expand(PRK, Info, L).
type HKDF struct {
	Case                      string // "A.1", "A.2", "A.3"
	IKM, Salt, Info, PRK, OKM []byte
	L                         int
}

// KMAC is one NIST SP 800-185 KMAC256 sample: Out = KMAC256(Key, Data,
// OutBits, S).
type KMAC struct {
	Sample    int // 4, 5, 6
	Key, Data []byte
	S         string
	OutBits   int
	Out       []byte
}

// RFC5869 returns RFC 5869 Appendix A.1–A.3, the HKDF-SHA256 cases.
func RFC5869() ([]HKDF, error) {
	var f struct {
		Vectors []struct {
			Case                      string
			IKM, Salt, Info, PRK, OKM string
			L                         int
		}
	}
	const file = "rfc5869-hkdf-sha256-vectors.json"
	if err := json.Unmarshal([]byte(rfc5869), &f); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	var out []HKDF
	for _, v := range f.Vectors {
		h := HKDF{Case: v.Case, L: v.L}
		for _, p := range []struct {
			dst *[]byte
			s   string
		}{{&h.IKM, v.IKM}, {&h.Salt, v.Salt}, {&h.Info, v.Info}, {&h.PRK, v.PRK}, {&h.OKM, v.OKM}} {
			b, err := hex.DecodeString(p.s)
			if err != nil {
				return nil, fmt.Errorf("%s %s: %w", file, v.Case, err)
			}
			*p.dst = b
		}
		if len(h.OKM) != h.L || len(h.PRK) != 32 {
			return nil, fmt.Errorf("%s %s: OKM of %d bytes for L %d, PRK of %d", file, v.Case, len(h.OKM), h.L, len(h.PRK))
		}
		out = append(out, h)
	}
	if len(out) != 3 {
		return nil, fmt.Errorf("%s: %d cases, want 3", file, len(out))
	}
	return out, nil
}

// KMAC256Samples returns SP 800-185's KMAC256 samples #4–#6.
func KMAC256Samples() ([]KMAC, error) {
	var f struct {
		Vectors []struct {
			Sample         int
			Key, Data, Out string
			S              string
			OutBits        int
		}
	}
	const file = "sp800-185-kmac256-vectors.json"
	if err := json.Unmarshal([]byte(sp800185), &f); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	var out []KMAC
	for _, v := range f.Vectors {
		k := KMAC{Sample: v.Sample, S: v.S, OutBits: v.OutBits}
		var err error
		if k.Key, err = hex.DecodeString(v.Key); err == nil {
			if k.Data, err = hex.DecodeString(v.Data); err == nil {
				k.Out, err = hex.DecodeString(v.Out)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("%s sample %d: %w", file, v.Sample, err)
		}
		if 8*len(k.Out) != k.OutBits {
			return nil, fmt.Errorf("%s sample %d: %d output bytes for L %d", file, v.Sample, len(k.Out), k.OutBits)
		}
		out = append(out, k)
	}
	if len(out) != 3 {
		return nil, fmt.Errorf("%s: %d samples, want 3", file, len(out))
	}
	return out, nil
}
