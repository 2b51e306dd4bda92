// Package keyfile reads the keys file: the TCP-AO MKTs and TCP-MD5 keys of
// one or more endpoints, as JSON, into the engine's own configuration
// (keys.AO, keys.MD5), so one file drives the engine, the kernel's
// sockets and "tcpsig verify" alike.
//
//	{"ao":  [{"name": "r1-v1", "alg": "hmac(sha1)", "key": "hex:0a0b0c",
//	          "sndid": 1, "rcvid": 2, "peer": "192.0.2.0/24",
//	          "maclen": 12, "exclude_options": false, "ifindex": 4}],
//	 "md5": [{"name": "r2", "peer": "192.0.2.1", "key": "text:secret"}]}
//
// An "ao" entry is an MKT as Linux's TCP_AO_ADD_KEY takes it, an "md5"
// entry a TCP_MD5SIG_EXT key (`tcpsig help keys` and docs/keys.md give
// each field). Reading is strict: an unknown, repeated, missing or bad
// field, or two entries a keyring would refuse side by side, is an
// [*Error] naming the entry and field and wrapping a sentinel below. A
// file above [MaxSize] is refused before it is read whole.
//
// Entries may carry RFC 8177 lifetimes ("lifetime", or "send_lifetime"
// and "accept_lifetime", and "accept_tolerance"; the file may give
// "clock_skew"): they land in Config.Lifetime, a keys.Lifetime. Two "md5"
// entries for one peer that both have lifetimes are a schedule. A road
// that cannot honour lifetimes calls [File.RefuseLifetimes].
//
// Key bytes stay in the process: printing a File or an entry never shows
// them, and only [File.Marshal] writes them; an error never quotes a
// field's value. Read, Load and Parse wipe what they read; [File.Wipe]
// zeroes a File's keys once keyrings hold their own. [CheckMode] refuses
// a file that group or others may read or write, or that a user other
// than root and the process's own owns; [LoadPrivate] loads only such a
// file.
//
// In order: [Load], [Read] or [Parse] gives a [File]; its entries go to
// keyrings in one call each, all or none (aoRing.AddAll(f.AOConfigs()),
// md5Ring.AddAll(f.MD5Configs())), or, through linuxsock.FileKeys, to
// kernel sockets.
package keyfile
