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
	github.com/prometheus/client_golang v1.25.0
	github.com/prometheus/client_model v0.6.3
	github.com/prometheus/common v0.72.0
	golang.org/x/crypto v0.59.0
	golang.org/x/net v0.62.0
	golang.org/x/sys v0.50.0
)

require (
	github.com/beorn7/perks v1.0.1 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/google/go-cmp v0.7.0 // indirect
	github.com/mdlayher/socket v0.7.0 // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/prometheus/procfs v0.22.0 // indirect
	golang.org/x/sync v0.23.0 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)
