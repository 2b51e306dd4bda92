package mac

import (
	"crypto/sha3"
	"crypto/subtle"
	"encoding"
	"encoding/binary"
	"hash"
)

// Context computes MACs of one algorithm, one message at a time: [Start]
// begins a message under a [Key], Write absorbs it, [Finish] ends it and
// appends its MAC. It is not a hash.Hash: every message needs a key, and a
// finished message stays finished (Finish again repeats its MAC, Write
// fails) until Start or [Restart] begins the next. A context is one
// goroutine's at a time: tcpsig's pool hands each user its own.
//
// A context takes a key in one of two ways, fixed when it is made: one
// from [Algorithm.NewContext] copies the Key's template (the clone: no key
// schedule per message); one from [Algorithm.NewRekeyContext] runs the key
// schedule again from the Key's bytes for every message, as Linux's
// per-CPU requests do. Both compute the same MACs.
type Context struct {
	alg            *Algorithm
	key            *Key // the keyed state Restart returns to
	own            *Key // a re-keying context's (and SetKey's) template, made on first use
	inner, outer   hash.Hash
	innerU, outerU encoding.BinaryUnmarshaler
	innerA, outerA encoding.BinaryAppender
	n              int      // message bytes written since Restart
	done           finished // where the MAC of a finished message is; Write refuses then
	rekey          bool     // Start and Compute run the key schedule (NewRekeyContext)
	cmac           cmacState
	xof            sha3.SHAKE // KMAC's sponge
	kx             sha3.SHAKE // KMAC: the keyed sponge of the Key of generation kxGen, restored from it once
	kxGen          uint64
	first          cmacFirst
	tmp            [MaxSize]byte
	pad            [maxPad]byte       // a padded tail, then the outer hash's block
	st             [maxStateSize]byte // a marshalled state the digest is read from
}

// NewContext returns an unkeyed context of a that clones a Key's template
// at every Start. Call Start or SetKey before writing.
func (a *Algorithm) NewContext() *Context {
	if !a.valid() {
		return &Context{}
	}
	c := &Context{alg: a}
	if a.newHash != nil {
		c.inner = a.newHash()
		c.outer = a.newHash()
		c.innerU, _ = c.inner.(encoding.BinaryUnmarshaler)
		c.outerU, _ = c.outer.(encoding.BinaryUnmarshaler)
		c.innerA, _ = c.inner.(encoding.BinaryAppender)
		c.outerA, _ = c.outer.(encoding.BinaryAppender)
	}
	if a.kind == kindKMAC {
		c.xof, c.kx = newCSHAKE(), newCSHAKE()
	}
	return c
}

// NewRekeyContext returns an unkeyed context of a that runs the key
// schedule from a Key's bytes at every Start and Compute instead of
// loading its template: Linux's way, for comparing the two.
func (a *Algorithm) NewRekeyContext() *Context {
	c := a.NewContext()
	c.rekey = c.alg != nil
	return c
}

// Algorithm returns the context's algorithm, nil for a context of none.
func (c *Context) Algorithm() *Algorithm {
	if c == nil {
		return nil
	}
	return c.alg
}

// Rekeys reports whether the context runs the key schedule per message
// (made by NewRekeyContext).
func (c *Context) Rekeys() bool { return c != nil && c.rekey }

// Start begins a message under k: a cloning context loads k's template, a
// re-keying one runs the key schedule for k's bytes. k must stay
// unchanged while the context uses it. A nil or empty k, or one of
// another algorithm, is [ErrNoKey].
func (c *Context) Start(k *Key) error {
	if c == nil || c.alg == nil || k == nil || k.alg != c.alg {
		return ErrNoKey
	}
	if c.rekey {
		k = c.rekeyed(k)
	}
	c.key = k
	c.Restart()
	return nil
}

// rekeyed runs the key schedule for k's bytes into the context's own
// template and returns it. The template is numbered 0, so that neither
// CMAC's cached first block nor KMAC's keyed sponge outlives it. A KMAC
// template made with a customization or prefix ([Key.InitKMAC]) has no
// key bytes to schedule: it is used as it is.
func (c *Context) rekeyed(k *Key) *Key {
	if k.fixed {
		return k
	}
	if c.own == nil {
		c.own = new(Key)
	}
	_ = c.schedule(c.own, k.raw()) // k's bytes were accepted by k's own keying
	return c.own
}

// SetKey runs the key schedule for key in place and begins a message under
// it. A key the algorithm cannot take is [ErrKeySize].
func (c *Context) SetKey(key []byte) error {
	if c == nil || c.alg == nil {
		return ErrNoKey
	}
	if c.own == nil {
		c.own = new(Key)
	}
	if err := c.Schedule(c.own, key); err != nil {
		return err
	}
	c.key = c.own
	c.Restart()
	return nil
}

// Restart begins a new message under the key of the last Start, without
// running the key schedule. Without a key it does nothing.
func (c *Context) Restart() {
	if c == nil || c.key == nil {
		return
	}
	k := c.key
	c.n, c.done = 0, 0
	switch c.alg.kind {
	case kindHMAC:
		_ = c.innerU.UnmarshalBinary(k.state(0)) // our own marshalled state
	case kindHMACRe:
		c.inner.Reset()
		c.inner.Write(k.state(0))
	case kindCMAC:
		c.cmac = cmacState{}
	case kindTCPMD5:
		c.inner.Reset()
	case kindKMAC:
		c.kmacReset(k)
	}
}

// Write absorbs p into the message. It fails on a context without a key
// ([ErrNoKey]) and after Finish until the next Start or Restart
// ([ErrFinished]).
func (c *Context) Write(p []byte) (int, error) {
	if c == nil || c.key == nil {
		return 0, ErrNoKey
	}
	if c.done != 0 {
		return 0, ErrFinished
	}
	switch c.alg.kind {
	case kindCMAC:
		c.cmac.write(c.key, p)
	case kindKMAC:
		c.xof.Write(p)
	default:
		c.inner.Write(p)
		c.n += len(p)
	}
	return len(p), nil
}

// Finish appends the full MAC of the message written since the last Start to
// dst and returns the result; with enough capacity in dst it allocates
// nothing. The message is then finished: Finish again appends the same MAC,
// and Write fails until Start or Restart begins the next message. A context without
// a key appends nothing.
func (c *Context) Finish(dst []byte) []byte {
	if c == nil || c.key == nil {
		return dst
	}
	if c.done != 0 {
		return append(dst, c.summed()...)
	}
	return c.sum(dst)
}

// finished says where a finished message's MAC is kept, so that Finish can
// repeat it: the CMAC chaining value, the outer hash's marshalled state,
// or tmp.
type finished uint8

const (
	inCMAC finished = iota + 1
	inState
	inTmp
)

// summed is the MAC of the summed message.
func (c *Context) summed() []byte {
	switch c.done {
	case inCMAC:
		return c.cmac.x[:]
	case inState:
		return c.st[stateMagic : stateMagic+c.alg.size]
	}
	if c.alg.kind == kindKMAC {
		return c.tmp[:c.key.outLen]
	}
	return c.tmp[:c.alg.size]
}

// sum finishes the message, appends its MAC to dst and notes where it is
// kept.
func (c *Context) sum(dst []byte) []byte {
	k := c.key
	switch {
	case c.alg.kind == kindCMAC:
		c.done = inCMAC
		return c.cmac.sum(k, dst)
	case c.alg.kind == kindKMAC:
		return c.kmacSum(dst)
	case c.alg.kind == kindTCPMD5:
		c.inner.Write(k.raw())
		if c.alg.lenSize > 0 {
			c.done = inState
			return c.finishPlain(dst, c.n+int(k.nraw))
		}
		c.done = inTmp
		return append(dst, c.inner.Sum(c.tmp[:0])...)
	case c.alg.lenSize > 0:
		c.done = inState
		return c.finishMD(dst, nil, c.n)
	}
	in := c.inner.Sum(c.tmp[:0])
	if c.alg.kind == kindHMAC {
		_ = c.outerU.UnmarshalBinary(k.state(1))
	} else {
		c.outer.Reset()
		c.outer.Write(k.state(1))
	}
	c.outer.Write(in)
	c.done = inTmp
	return append(dst, c.outer.Sum(c.tmp[:0])...)
}

// Compute appends to dst the MAC of msg, a whole message, under k: Start,
// Write and Finish in one call. CMAC then runs its blocks over msg in place
// instead of buffering them, and reuses the cipher block of msg's first
// 16 bytes when they and the key are those of the context's previous CMAC
// (TCP-AO's SNE and IPv4 pseudo-header, the same for every pure ACK of a
// connection); msg's first block is compared in variable time, so it must
// not be secret. Errors are those of Start.
func (c *Context) Compute(k *Key, dst, msg []byte) ([]byte, error) {
	if c == nil || c.alg == nil || k == nil || k.alg != c.alg {
		return dst, ErrNoKey
	}
	if c.rekey {
		k = c.rekeyed(k)
	}
	c.key = k
	if c.alg.kind == kindKMAC {
		c.kmacReset(k)
		c.n, c.done = 0, 0
		c.xof.Write(msg)
		return c.kmacSum(dst), nil
	}
	if c.alg.kind == kindCMAC {
		c.done = inCMAC
		return c.cmac.mac(k, &c.first, dst, msg), nil
	}
	c.Restart()
	if c.alg.kind == kindHMAC && c.alg.lenSize > 0 {
		full := len(msg) &^ (c.alg.blockSize - 1) // a power of two (init)
		if full > 0 {
			c.inner.Write(msg[:full])
		}
		c.done = inState
		return c.finishMD(dst, msg[full:], len(msg)), nil
	}
	c.inner.Write(msg)
	c.n = len(msg)
	return c.sum(dst), nil
}

// Wipe clears the context's own template and working state; a context
// that loaded a shared Key keeps no key copy of its own beyond the hash
// midstate, which the next Start or Restart overwrites, CMAC's cached
// first block (Compute), which the next Compute of another first block
// overwrites, and KMAC's keyed sponge, which the next Start of another Key
// overwrites.
func (c *Context) Wipe() {
	if c == nil {
		return
	}
	c.own.Wipe()
	c.key, c.done = nil, 0
	c.cmac = cmacState{}
	c.first = cmacFirst{}
	clear(c.tmp[:])
	clear(c.pad[:])
	clear(c.st[:])
	if c.inner != nil {
		c.inner.Reset()
		c.outer.Reset()
	}
	if c.alg != nil && c.alg.kind == kindKMAC {
		c.xof.Reset()
		c.kx.Reset()
	}
	c.kxGen = 0
}

// cmacState is AES-CMAC (RFC 4493 §2.4) over the key schedule and subkeys
// of a Key: the CBC chaining value and the last, possibly full, block,
// which must wait for Finish to know whether it is the final one.
type cmacState struct {
	x    [16]byte
	buf  [16]byte
	last [16]byte // scratch for Finish: a local would escape through cipher.Block
	n    int
}

func (s *cmacState) write(k *Key, p []byte) {
	if s.n > 0 {
		m := copy(s.buf[s.n:], p)
		s.n += m
		p = p[m:]
		if len(p) == 0 {
			return
		}
		subtle.XORBytes(s.x[:], s.x[:], s.buf[:])
		k.block.Encrypt(s.x[:], s.x[:])
		s.n = 0
	}
	for len(p) > 16 {
		subtle.XORBytes(s.x[:], s.x[:], p[:16])
		k.block.Encrypt(s.x[:], s.x[:])
		p = p[16:]
	}
	s.n = copy(s.buf[:], p)
}

func (s *cmacState) sum(k *Key, dst []byte) []byte {
	last := &s.last
	if s.n == 16 {
		subtle.XORBytes(last[:], s.buf[:], k.k1[:])
	} else {
		*last = [16]byte{}
		copy(last[:], s.buf[:s.n])
		last[s.n] = 0x80
		subtle.XORBytes(last[:], last[:], k.k2[:])
	}
	subtle.XORBytes(last[:], last[:], s.x[:])
	k.block.Encrypt(s.x[:], last[:]) // x keeps the MAC (Context.summed)
	return append(dst, s.x[:]...)
}

// cmacFirst is the CBC chaining value after one first block under one
// key: what MAC reuses when the next message starts with the same block.
type cmacFirst struct {
	gen    uint64 // the Key's generation; 0: empty (no Key numbered 0 is cached)
	b0, b1 uint64 // the block, as two little-endian words
	x      [16]byte
}

// mac is write and sum for a whole message, without buffering: RFC 4493
// §2.4 over msg in place, from a zero chaining value, the first block's
// encryption taken from f when f holds it. The last block, padded and
// xored with its subkey, is built first, in 8-byte words, so that its
// stores have landed by the time the chain reaches it; the first block is
// compared in words too. (A 16-byte load of bytes just stored in
// narrower pieces stalls.)
func (s *cmacState) mac(k *Key, f *cmacFirst, dst, msg []byte) []byte {
	le := binary.LittleEndian
	x, last := &s.x, &s.last
	n := len(msg) &^ 15 // the whole blocks before the last
	if n == len(msg) && n > 0 {
		n -= 16
	}
	tail := msg[n:]
	var w0, w1 uint64
	if len(tail) == 16 {
		w0, w1 = le.Uint64(tail)^le.Uint64(k.k1[:]), le.Uint64(tail[8:])^le.Uint64(k.k1[8:])
	} else {
		// The tail padded with 0x80 and zeros, xor K2.
		var p0, p1 uint64
		for i, c := range tail {
			if i < 8 {
				p0 |= uint64(c) << (8 * i)
			} else {
				p1 |= uint64(c) << (8 * (i - 8))
			}
		}
		if t := len(tail); t < 8 {
			p0 |= 0x80 << (8 * t)
		} else {
			p1 |= 0x80 << (8 * (t - 8))
		}
		w0, w1 = p0^le.Uint64(k.k2[:]), p1^le.Uint64(k.k2[8:])
	}
	le.PutUint64(last[:], w0)
	le.PutUint64(last[8:], w1)
	msg = msg[:n]
	if len(msg) > 0 {
		if b0, b1 := le.Uint64(msg), le.Uint64(msg[8:]); k.gen != 0 && f.gen == k.gen && b0 == f.b0 && b1 == f.b1 {
			*x = f.x
		} else {
			*x = [16]byte(msg) // the zero chaining value xor the block
			k.block.Encrypt(x[:], x[:])
			if k.gen != 0 { // an unnumbered (re-keyed) key caches nothing
				f.gen, f.b0, f.b1, f.x = k.gen, b0, b1, *x
			}
		}
		msg = msg[16:]
	} else {
		*x = [16]byte{}
	}
	for len(msg) > 0 {
		subtle.XORBytes(x[:], x[:], msg[:16])
		k.block.Encrypt(x[:], x[:])
		msg = msg[16:]
	}
	subtle.XORBytes(x[:], x[:], last[:])
	k.block.Encrypt(x[:], x[:])
	s.n = 0
	return append(dst, x[:]...)
}
