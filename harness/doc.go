// Package harness is the root of tcpsig's test and interop scaffolding:
// code that proves the engine and the application against real kernels
// and is part of neither.
//
//   - usertcp: a small userspace TCP endpoint over TUN that signs with the
//     engine, for talking to kernel sockets;
//   - netns: network namespaces, links and addresses for those tests;
//   - nfprobe: whether the kernel can queue packets for the shim;
//   - onpath: an on-path attacker (a router namespace between two hosts)
//     that follows a TCP flow and forges in-window segments into it;
//   - proc: the helper processes of the end-to-end tests (the shim,
//     BIRD), their output kept and their start awaited;
//   - capture: AF_PACKET capture of a test's traffic into pcap files;
//   - kstat: the kernel's TcpExt counters and socket queues;
//   - tcprepair: TCP_REPAIR on kernel sockets;
//   - vrfproof: TCP-MD5 keys scoped to an L3 domain, with the kernel's
//     verdicts;
//   - kernellab: the qemu kernel lab, not a package: run-qemu.sh builds a
//     Linux 6.12 with CONFIG_TCP_AO and boots it with kernellab/guest, the
//     program that runs the kernel↔kernel, live, shim, BIRD and linuxsock
//     cases inside it (its README). What it records is data, kept in
//     testvectors/linux.
//
// The engine's own internals live in internal/ (csum, prefixmap, reclaim),
// the shim application in shim/. Only tests, the harness itself and
// testvectors' capture loaders (harness/capture's pcap reader) import
// harness: layers_test.go at the top keeps it so.
package harness
