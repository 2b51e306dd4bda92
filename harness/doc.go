// Package harness is the root of tcpsig's test and interop scaffolding: code
// that proves the engine against real kernels and is not part of it.
//
//   - usertcp: a small userspace TCP endpoint over TUN that signs with the
//     engine, for talking to kernel sockets;
//   - netns: network namespaces, links and addresses for those tests;
//   - capture: AF_PACKET capture of a test's traffic into pcap files.
//
// The engine's own internals live beside it in internal/ (prefixmap,
// reclaim); nothing under harness is imported by the engine.
package harness
