module github.com/tcpsig/tcpsig

go 1.26.0

toolchain go1.26.11

require (
	github.com/aead/cmac v0.0.0-20160719120800-7af84192f0b1
	github.com/google/nftables v0.3.0
	github.com/gopacket/gopacket v1.7.7
	github.com/klauspost/cpuid/v2 v2.4.2
	github.com/mdlayher/netlink v1.11.2
	github.com/mdlayher/packet v1.2.0
	golang.org/x/crypto v0.59.0
	golang.org/x/net v0.62.0
	golang.org/x/sys v0.50.0
)

require (
	github.com/google/go-cmp v0.7.0 // indirect
	github.com/mdlayher/socket v0.7.0 // indirect
	golang.org/x/sync v0.23.0 // indirect
)
