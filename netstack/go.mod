module github.com/tcpsig/tcpsig/netstack

go 1.26.3

toolchain go1.26.11

require (
	github.com/osrg/gobgp/v4 v4.8.0
	gvisor.dev/gvisor v0.0.0-20260905035102-160fafc42237
)

require (
	github.com/beorn7/perks v1.0.1 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/google/go-cmp v0.7.0 // indirect
	github.com/google/nftables v0.3.0 // indirect
	github.com/gopacket/gopacket v1.7.7 // indirect
	github.com/klauspost/cpuid/v2 v2.4.2 // indirect
	github.com/mdlayher/netlink v1.11.2 // indirect
	github.com/mdlayher/socket v0.7.0 // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/prometheus/client_golang v1.25.0 // indirect
	github.com/prometheus/client_model v0.6.3 // indirect
	github.com/prometheus/common v0.72.0 // indirect
	github.com/prometheus/procfs v0.22.0 // indirect
	golang.org/x/crypto v0.59.0 // indirect
	golang.org/x/net v0.62.0 // indirect
	golang.org/x/sync v0.23.0 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)

require (
	github.com/google/btree v1.1.2 // indirect
	github.com/tcpsig/tcpsig v0.0.0-00010101000000-000000000000
	golang.org/x/exp v0.0.0-20250711185948-6ae5c78190dc // indirect
	golang.org/x/sys v0.50.0
	golang.org/x/time v0.15.0 // indirect
)

replace github.com/tcpsig/tcpsig => ../
