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
// An entry is configured on the endpoint whose peer is "peer": an "ao"
// entry is an MKT as Linux's TCP_AO_ADD_KEY takes it (alg, key as "hex:…"
// or "text:…", sndid, rcvid, peer; optional name, maclen,
// exclude_options, ifindex: `tcpsig help keys` and docs/keys.md give
// each field's range).
// An "md5" entry (TCP_MD5SIG_EXT) has name, peer, key and ifindex. Reading is strict: an unknown or repeated field, a missing
// or bad value, two "ao" entries for the same peer (and ifindex) with the
// same sndid or rcvid, or two "md5" entries for the same peer (without
// lifetimes), is an
// [*Error] naming the entry and field (both entries for a duplicate) and
// wrapping one of the sentinels below. A file above [MaxSize] is refused
// before it is read whole.
//
// Any entry may carry RFC 8177 lifetimes ("lifetime", or
// "send_lifetime" and "accept_lifetime": {"start": T, "end": T} in RFC
// 3339, either bound optional) and an "accept_tolerance" in seconds; the
// file's top level may give "accept_tolerance" for every entry and
// "clock_skew", the clock difference it assumes. They land in the
// entry's Config.Lifetime (a keys.Lifetime: SendActive, AcceptActive). A
// file without them means what it meant before. A bad lifetime is an
// [*Error] wrapping [ErrLifetime]; two "md5" entries for one peer are a
// schedule, not a clash, when both have lifetimes. A road that cannot
// honour lifetimes calls [File.RefuseLifetimes], whose error names the
// entry and wraps [ErrLifetimeUnsupported].
//
// Key bytes stay in the process: printing a File or an entry (any fmt
// verb, slog's text and JSON handlers, json.Marshal, which writes
// "[redacted]" for each key) never shows them, and only [File.Marshal]
// writes them. An error never quotes the value of a field, which may be
// a key pasted into the wrong one: it names the entry, the field and what
// was expected. Read and Load wipe the bytes they read, Parse wipes the
// copies it makes on the way and the keys of a file it refuses, and
// [File.Wipe] zeroes a File's keys once keyrings hold their own. Go
// cannot promise no other copy (a moved goroutine stack, a swapped page).
// [CheckMode] refuses a keys file that group or others may read or write,
// or that a user other than root and the process's own owns; [LoadPrivate]
// loads a file only if CheckMode's rule holds for it.
//
// In order: [Load] (a path), [Read] or [Parse] gives a [File]; its entries
// go to keyrings in one call each, all or none
// (aoRing.AddAll(f.AOConfigs()), md5Ring.AddAll(f.MD5Configs()), errors
// naming the entry), or, through linuxsock.FileKeys, to kernel sockets.
package keyfile
