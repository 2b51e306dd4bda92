// Package nfqueue is a client of Linux's netfilter queue (NFQUEUE): the
// kernel hands packets that a netfilter rule queued to one process, which
// answers each with a verdict — accept, accept a rewritten packet, or drop.
//
// It speaks the nfnetlink_queue protocol on a NETLINK_NETFILTER socket of
// its own (attributes marshalled with github.com/mdlayher/netlink): no cgo,
// no libnetfilter_queue. The queue is bound in copy-packet mode without
// NFQA_CFG_F_GSO, so the kernel segments a GSO super-packet before
// queueing and fills in any checksum left to offload: every packet read is
// a whole, checksummed IP packet no larger than the path allows. A
// rewritten packet is reinjected as is; the kernel does not recompute its
// checksums.
//
// One goroutine reads and answers. [Queue.ReadBatch] takes every packet
// waiting (up to a slice's length) per wake-up, sleeping in poll(2) on its
// thread when there is none; [Queue.AddVerdict] collects their answers and
// [Queue.Flush] sends them in one write, which the kernel takes in order.
// [Queue.Read] and [Queue.Verdict] do one packet. In steady state nothing
// allocates. A payload aliases the receive buffer until the next read.
//
// Without a process bound to the queue the kernel drops what the rules
// queue (unless the rule says bypass): a queue is fail-closed. So does a
// full queue or a full socket (counted, see [Queue.Stats]); with
// [Config.FailOpen], packets that find the queue full are accepted instead.
package nfqueue
