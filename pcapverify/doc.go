// Package pcapverify checks the TCP-AO (RFC 5925) and TCP-MD5 (RFC 2385)
// signatures of the segments in a packet capture against a keys file, as
// the receiving Linux kernel would, with no connection state but what the
// capture shows.
//
// In call order: [LoadKeys] turns a parsed [keyfile.File] into keyrings;
// [Open] reads a pcap or pcapng stream (gzipped or not) frame by frame;
// a [Verifier] judges each IP packet, handing a [Result] with its
// [Verdict] to a callback, and sums up a [Report]: the [Totals] and a
// table per flow. [Verify] does all three for one whole capture.
//
// TCP-AO needs both ISNs of a connection and its SNE: they are learnt
// from the handshake, or given in [Options] when the capture lacks it
// (the segments are UnknownISN otherwise). A keys file does not say
// whose keys an entry is, only its peer: a segment is judged with its
// receiver's keys, else with the sender's mirrored (SendID and RecvID
// swapped), and when both ends share an address under both readings.
// Memory grows with the flows that keys cover, up to [Options].MaxFlows
// of them (the segments of later flows are Untracked), not with the
// packets.
//
// With [Options].Explain a Verifier keeps the first few failing segments
// of each flow direction, and [Verifier.Diagnoses] names why each
// direction failed (package diagnose): the cause, the entry and the fix.
//
// cmd/tcpsig's verify command prints a Report as text or JSON lines.
package pcapverify
