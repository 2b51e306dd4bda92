package testvectors

import (
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
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

//go:embed rfc/tcp-ao-algs-07-vectors.json
var draftAlgs string

// DraftAlgs returns tcpsig's own vectors for draft-ietf-tcpm-tcp-ao-algs
// revision 07: RFC 9235's 32 packets re-signed with HMAC-SHA256-128 and
// with KMAC256-128 (64 segments; same addresses, ports, ISNs, payloads
// and KeyIDs, a 32-byte master key 0x00..0x1f, SNE 0), their TCP-AO option
// grown to 20 bytes for the 16-byte MAC, IP lengths and both checksums
// fixed. The traffic keys and MACs were computed with OpenSSL, not with
// tcpsig (TestDraftVectorsOpenSSL recomputes them). Section is the RFC
// 9235 section of the source packet.
func DraftAlgs() (RFC9235Set, error) {
	const file = "tcp-ao-algs-07-vectors.json"
	var in draftFile
	errorf := func(format string, args ...any) (RFC9235Set, error) {
		return RFC9235Set{}, fmt.Errorf("testvectors: %s: %s", file, fmt.Sprintf(format, args...))
	}
	dec := json.NewDecoder(strings.NewReader(draftAlgs))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return errorf("%v", err)
	}
	master, err := hex.DecodeString(in.MasterKey)
	if err != nil || len(master) != 32 || in.MACLen != 16 {
		return errorf("master key of %d bytes (%v), maclen %d", len(master), err, in.MACLen)
	}
	set := RFC9235Set{MasterKey: master, ClientKeyID: in.ClientKeyID, ServerKeyID: in.ServerKeyID, SNE: in.SNE, MACLen: in.MACLen}
	count := map[string]int{}
	for _, v := range in.Vectors {
		a := AO{Section: v.Section, Title: v.Title, Alg: v.Algorithm, IPVersion: v.IPVersion, IncludeOptions: v.IncludeOptions, TrafficKeyKind: v.TrafficKeyKind}
		if (a.Alg != "hmac-sha256-128" && a.Alg != "kmac256-128") || (a.IPVersion != 4 && a.IPVersion != 6) || !slices.Contains(trafficKeyKinds, a.TrafficKeyKind) {
			return errorf("%s: unknown algorithm, ip_version or traffic_key_kind", v.Section)
		}
		if err := decodeAO(&a, v.ClientISN, v.ServerISN, v.Packet, v.TrafficKey, v.MAC); err != nil {
			return errorf("%s: %v", v.Section, err)
		}
		if len(a.MAC) != 16 || len(a.TrafficKey) != 32 {
			return errorf("%s %s: MAC of %d bytes, traffic key of %d", a.Alg, v.Section, len(a.MAC), len(a.TrafficKey))
		}
		count[a.Alg]++
		set.Vectors = append(set.Vectors, a)
	}
	if count["hmac-sha256-128"] != 32 || count["kmac256-128"] != 32 {
		return errorf("%v vectors, want 32 per algorithm", count)
	}
	return set, nil
}

// draftFile is the layout of rfc/tcp-ao-algs-07-vectors.json: DraftAlgs
// reads it, TestDraftVectorsOpenSSL writes it.
type draftFile struct {
	Source      string        `json:"source"`
	MasterKey   string        `json:"master_key_hex"`
	ClientKeyID uint8         `json:"client_keyid"`
	ServerKeyID uint8         `json:"server_keyid"`
	SNE         uint32        `json:"sne"`
	MACLen      int           `json:"maclen"`
	Vectors     []draftVector `json:"vectors"`
}

// draftVector is one segment of a [draftFile], its numbers in hex.
type draftVector struct {
	Section        string `json:"rfc9235_section"`
	Title          string `json:"title"`
	IPVersion      int    `json:"ip_version"`
	Algorithm      string `json:"algorithm"`
	IncludeOptions bool   `json:"include_options"`
	ClientISN      string `json:"client_isn"`
	ServerISN      string `json:"server_isn"`
	TrafficKeyKind string `json:"traffic_key_kind"`
	Context        string `json:"kdf_context_hex"`
	Packet         string `json:"packet_hex"`
	TrafficKey     string `json:"traffic_key_hex"`
	MAC            string `json:"mac_hex"`
}
