#!/usr/bin/env python3
"""Independent cross-check of the Linux TCP-AO captures against their manifest.

A second, deliberately naive implementation of the RFC 5925/5926 MAC as
Linux computes it (KDF with the digest size as output length, cmac(aes128)
key reduction, options-excluded header, SNE prepended), written without the
tcpsig engine, so that a mistake in the manifest cannot hide behind the same
mistake in the Go code. run-qemu.sh runs it on fresh captures when python3
and python3-cryptography (for AES-CMAC) are available; the Go tests of the
ao package are the real verification.

Usage: crosscheck.py DIR   (DIR holds manifest.json and the pcaps: run-qemu.sh's
                            fresh results, or testvectors/linux, the committed set)
Exit 0 if every segment verifies with the MKTs of the manifest.
"""
import hashlib
import hmac
import ipaddress
import json
import struct
import sys

try:
    from cryptography.hazmat.primitives.ciphers import algorithms
    from cryptography.hazmat.primitives.cmac import CMAC
except ImportError:  # pragma: no cover
    CMAC = None

HASHES = {
    "hmac(sha1)": "sha1", "hmac(sha224)": "sha224", "hmac(sha256)": "sha256",
    "hmac(sha384)": "sha384", "hmac(sha512)": "sha512", "hmac(md5)": "md5",
    "hmac(sha3-256)": "sha3_256", "hmac(sha3-512)": "sha3_512", "hmac(rmd160)": "ripemd160",
}


def aes_cmac(key, msg):
    c = CMAC(algorithms.AES(key))
    c.update(msg)
    return c.finalize()


def prf_for(alg):
    """Returns (prf(key, msg) -> digest, digest bits) or None if unavailable."""
    if alg in ("cmac(aes128)", "cmac(aes)"):
        return (aes_cmac, 128) if CMAC else None
    name = HASHES.get(alg)
    if name is None:
        return None
    try:
        size = hashlib.new(name).digest_size
    except ValueError:
        return None
    return (lambda k, m: hmac.new(k, m, lambda *a: hashlib.new(name, *a)).digest()), size * 8


def frames(path):
    d = open(path, "rb").read()
    if struct.unpack("<I", d[:4])[0] != 0xA1B2C3D4 or struct.unpack("<I", d[20:24])[0] != 1:
        raise ValueError(f"{path}: not a little-endian Ethernet pcap")
    d = d[24:]
    while d:
        n = struct.unpack("<I", d[8:12])[0]
        yield d[16:16 + n]
        d = d[16 + n:]


def split(frame):
    """-> (src, dst, tcp bytes) of an Ethernet/IPv4|IPv6/TCP frame."""
    ethertype = struct.unpack("!H", frame[12:14])[0]
    ip = frame[14:]
    if ethertype == 0x0800:
        ihl, total = (ip[0] & 15) * 4, struct.unpack("!H", ip[2:4])[0]
        return ip[12:16], ip[16:20], ip[ihl:total]
    plen = struct.unpack("!H", ip[4:6])[0]
    return ip[8:24], ip[24:40], ip[40:40 + plen]


def endpoint(s):
    addr, port = s.rsplit(":", 1)
    return ipaddress.ip_address(addr.strip("[]")).packed, int(port)


def check(dirname, cap):
    """-> (verified, total, problems) for one manifest entry."""
    prf = prf_for(cap["keys"]["ao"][0]["alg"])
    if prf is None:
        return 0, 0, ["skipped: algorithm not available in this Python"]
    prf, bits = prf
    mkts = []
    for k in cap["keys"]["ao"]:
        key = bytes.fromhex(k["key"][len("hex:"):])
        if k["alg"] == "cmac(aes128)" and len(key) != 16:
            key = aes_cmac(bytes(16), key)  # RFC 5926 3.1.1.2 key reduction
        peer = ipaddress.ip_network(k["peer"]).network_address.packed
        mkts.append((peer, k["sndid"], key, k["maclen"], k["exclude_options"]))
    isn = {endpoint(e): v for e, v in (cap.get("isn") or {}).items()}
    sne = {endpoint(e): v for e, v in (cap.get("sne") or {}).items()}
    basis = {}
    ok = total = 0
    problems = []
    for i, f in enumerate(frames(f"{dirname}/{cap['file']}"), 1):
        src, dst, tcp = split(f)
        sport, dport, seq = struct.unpack("!HHI", tcp[:8])
        flags, doff = tcp[13], (tcp[12] >> 4) * 4
        me, peer = (src, sport), (dst, dport)
        syn, ack = flags & 2, flags & 0x10
        if syn:
            isn[me] = seq
        # SNE of this segment, from the highest sequence number seen so far
        # in this direction (enough for captures without reordering).
        cur = sne.get(me, 0)
        if me in basis:
            prev = basis[me]
            if (seq - prev) % 2**32 < 2**31:  # at or after the basis
                if seq < prev:
                    cur += 1
                    sne[me] = cur
                basis[me] = seq
            elif seq > prev:  # before the basis, in the previous wrap
                cur -= 1
        else:
            basis[me] = seq
        opt, ao = 20, None
        while opt < doff and tcp[opt] != 0:
            if tcp[opt] == 1:
                opt += 1
                continue
            if tcp[opt] == 29:
                ao = opt
            opt += tcp[opt + 1]
        total += 1
        if ao is None:
            problems.append(f"frame {i}: unsigned")
            continue
        good = False
        for mpeer, sndid, key, maclen, exclude in mkts:
            if mpeer != dst or sndid != tcp[ao + 2]:
                continue
            disn = 0 if (syn and not ack) else isn.get(peer, 0)
            ctx = src + dst + struct.pack("!HHII", sport, dport, isn.get(me, 0), disn)
            traffic = prf(key, b"\x01TCP-AO" + ctx + struct.pack("!H", bits))
            if len(src) == 4:
                pseudo = src + dst + struct.pack("!BBH", 0, 6, len(tcp))
            else:
                pseudo = src + dst + struct.pack("!II", len(tcp), 6)
            hdr = bytearray(tcp[:doff])
            hdr[16:18] = b"\0\0"
            mac = bytes(hdr[ao + 4:ao + 4 + maclen])
            hdr[ao + 4:ao + 4 + maclen] = bytes(maclen)
            if exclude:
                hdr = hdr[:20] + hdr[ao:ao + 4] + bytes(maclen)
            msg = struct.pack("!I", cur % 2**32) + pseudo + bytes(hdr) + tcp[doff:]
            if prf is aes_cmac:
                traffic = traffic[:16]
            if prf(traffic, msg)[:maclen] == mac:
                good = True
                break
        if good:
            ok += 1
        else:
            problems.append(f"frame {i}: MAC does not verify (KeyID {tcp[ao + 2]}, SNE {cur})")
    return ok, total, problems


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    man = json.load(open(f"{sys.argv[1]}/manifest.json"))
    # "captures" is [] when only live cases ran (TCPSIG_CASES=live); older
    # guests wrote null there
    caps = man.get("captures") or []
    failed = skipped = ok_all = total_all = 0
    for cap in caps:
        ok, total, problems = check(sys.argv[1], cap)
        ok_all, total_all = ok_all + ok, total_all + total
        if total == 0:
            skipped += 1
            print(f"  {cap['name']}: {problems[0]}")
            continue
        if ok != total:
            failed += 1
            print(f"  {cap['name']}: {ok}/{total} verify; {problems[:3]}")
    print(f"crosscheck: {ok_all}/{total_all} segments of {len(caps)} captures verify"
          f" ({failed} captures failed, {skipped} skipped)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
