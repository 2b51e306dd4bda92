// Package shim signs and verifies the TCP-AO and TCP-MD5 sessions of a
// host's own TCP for a kernel that cannot (built without CONFIG_TCP_AO or
// CONFIG_TCP_MD5SIG): it is `tcpsig shim` without the command line.
//
// Rules of its own (package nfrules) send the host's TCP with the peers of
// a keys file to netfilter queues (package nfqueue), one per CPU by
// default, each connection to one of them; each queue's reader answers
// every packet with a verdict after package packetauth: outgoing ones get
// the option inserted and signed, incoming ones are verified, stripped and
// their MSS clamped, and what fails is dropped and counted. The ICMP hard
// errors of RFC 5925 §7.8 quoting a packet to a peer are queued too, and
// dropped for TCP-AO sessions.
//
// Protection never lapses on its own: Run takes over the rules an earlier
// run left in one batch, and leaves them on every way out, so while no
// shim reads the queues the kernel drops the covered peers' packets.
// Only [Uninstall] removes them. A reload is applied whole or refused
// whole; a session whose key it removes is revoked (its packets dropped
// until it expires), never passed unsigned.
//
// TCP-MD5 needs no per-connection state, so a restarted shim carries on
// with sessions it never saw open. TCP-AO needs each session's ISNs and
// SNEs: with Config.State the shim keeps them in a file (no key material)
// and resumes those sessions after a restart; others are reported in the
// status and their packets dropped.
//
// In order: [New] reads the keys file; [Shim.Run] (in the namespace to
// cover) installs the rules and answers packets until its context ends;
// meanwhile [Shim.Reload] (SIGHUP), [Shim.Status] and [Shim.LogStatus]
// (SIGUSR1). Config.Status serves the Status as JSON over HTTP on a unix
// socket, kinds and states in the log's words.
package shim
