// Package capture records the packets that cross a Linux network interface
// and reads and writes them as classic pcap files.
//
// It exists so that tests can prove byte-exactness against the kernel: a
// test opens TCP connections, captures what the kernel put on the wire, and
// keeps the capture as a fixture. [Start] opens an AF_PACKET socket bound to
// one interface (default "lo") in the network namespace of the calling
// thread, so a test that has moved its locked OS thread into a fresh
// namespace captures that namespace's traffic only.
//
// On a loopback device every packet is seen twice by a packet socket, once
// leaving and once arriving; [Capture] keeps only the leaving copy, so each
// segment appears once, in the order the kernel transmitted them. On other
// devices (a TUN device, for example) both directions are kept.
//
// Files are written and read with gopacket's pcapgo: ordinary pcap (magic
// 0xa1b2c3d4, microsecond timestamps), readable by tcpdump and Wireshark.
package capture
