package capture_test

import (
	"fmt"
	"log"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/tcpsig/tcpsig/harness/capture"
)

// Capture one TCP connection on lo and keep it as a pcap file. Capturing
// needs root (CAP_NET_RAW), so this example is compiled but not run.
func Example() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	defer ln.Close()
	port := uint16(ln.Addr().(*net.TCPAddr).Port)

	c, err := capture.Start(capture.Options{Interface: "lo", Filter: capture.TCPPorts(port)})
	if err != nil {
		log.Fatal(err)
	}
	go func() {
		if s, err := ln.Accept(); err == nil {
			s.Write([]byte("hello"))
			s.Close()
		}
	}()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		log.Fatal(err)
	}
	conn.Read(make([]byte, 5))
	conn.Close()

	c.WaitIdle(200*time.Millisecond, 5*time.Second)
	if err := c.Stop(); err != nil {
		log.Fatal(err)
	}
	path := filepath.Join(os.TempDir(), "hello.pcap")
	if err := c.WriteFile(path); err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(c.Packets()), "packets in", path)
}

// Write and read back a pcap file.
func ExampleWriteFile() {
	path := filepath.Join(os.TempDir(), "capture-example.pcap")
	defer os.Remove(path)
	pkts := []capture.Packet{{Time: time.Unix(0, 0), Data: []byte{0x45, 0, 0, 20}, Length: 20}}
	if err := capture.WriteFile(path, capture.LinkTypeRaw, pkts); err != nil {
		log.Fatal(err)
	}
	lt, back, err := capture.ReadFile(path)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(lt, len(back), back[0].Length)
	// Output: RAW 1 20
}
