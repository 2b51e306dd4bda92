// Package netstack gives gVisor's netstack TCP-AO and TCP-MD5.
package netstack
