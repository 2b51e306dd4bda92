// Package nfqueue is a client of Linux's netfilter queue (NFQUEUE): the
// kernel hands packets that a netfilter rule queued to one process, which
// answers each with a verdict — accept, accept a rewritten packet, or drop.
//
// It speaks the nfnetlink_queue protocol over a NETLINK_NETFILTER socket
// from github.com/mdlayher/netlink: no cgo, no libnetfilter_queue. The queue
// is bound in copy-packet mode without NFQA_CFG_F_GSO, so the kernel
// segments a GSO super-packet before queueing and fills in any checksum
// left to offload: every packet read is a whole, checksummed IP packet no
// larger than the path allows. A rewritten packet is reinjected as is; the
// kernel does not recompute its checksums.
//
// One goroutine reads packets ([Queue.Read]) and answers them
// ([Queue.Verdict]); in steady state neither allocates. A packet's payload
// aliases the receive buffer and is valid until the next Read.
//
// Without a process bound to the queue the kernel drops what the rules
// queue (unless the rule says bypass): a queue is fail-closed. With
// [Config.FailOpen], packets that find the queue full are accepted instead
// of dropped.
package nfqueue
