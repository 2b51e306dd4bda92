//go:build linux

package main

// Manifest is testvectors/linux/manifest.json.
type Manifest struct {
	Kernel      string `json:"kernel"`
	GeneratedBy string `json:"generated_by"`
	// LinkType of every pcap: "EN10MB" (Ethernet; lo gives zero MACs).
	LinkType string            `json:"link_type"`
	Notes    string            `json:"notes"`
	Captures []ManifestCapture `json:"captures"`
}

// ManifestCapture describes one pcap.
type ManifestCapture struct {
	Name string `json:"name"`
	File string `json:"file"`
	// Keys is exactly a keys file of the tcpsig CLI.
	Keys KeysFile `json:"keys"`
	// ISN and SNE are given only where the handshake is not on the wire:
	// "ip:port" (IPv6 "[addr]:port") -> that endpoint's ISN, and the SNE of
	// its send direction at its first captured segment.
	ISN      map[string]uint32 `json:"isn,omitempty"`
	SNE      map[string]uint32 `json:"sne,omitempty"`
	Packets  int               `json:"packets"`
	AOSigned int               `json:"ao_signed"`
	Features []string          `json:"features"`
	Notes    string            `json:"notes"`
}

// KeysFile is the tcpsig CLI's keys file.
type KeysFile struct {
	AO []AOKey `json:"ao"`
}

// AOKey is one MKT as configured on the endpoint whose peer is Peer: that
// endpoint sends KeyID = SndID and receives KeyID = RcvID.
type AOKey struct {
	Alg            string `json:"alg"`
	Key            string `json:"key"`
	SndID          uint8  `json:"sndid"`
	RcvID          uint8  `json:"rcvid"`
	Peer           string `json:"peer"`
	MACLen         int    `json:"maclen"`
	ExcludeOptions bool   `json:"exclude_options"`
}

// CaseResult is one line of results.json (the guest's verdict on a case).
type CaseResult struct {
	Name string `json:"name"`
	Kind string `json:"kind"`
	Pass bool   `json:"pass"`
	// Skipped says why the case could not run here (not passed, not failed).
	Skipped  string   `json:"skipped,omitempty"`
	Errors   []string `json:"errors,omitempty"`
	Seconds  float64  `json:"seconds"`
	Captures []string `json:"captures,omitempty"`
	// Retried: the first attempt failed with FirstErrors, this is the second.
	Retried     bool     `json:"retried,omitempty"`
	FirstErrors []string `json:"first_errors,omitempty"`
}

// Results is results.json.
type Results struct {
	Kernel        string       `json:"kernel"`
	BootSeconds   float64      `json:"boot_seconds"`  // guest uptime when the cases started
	CasesSeconds  float64      `json:"cases_seconds"` // wall time of all cases
	Cases         []CaseResult `json:"cases"`
	SetupFailures []string     `json:"setup_failures,omitempty"`
}
