package mac

import "fmt"

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
//
// A context holds the working state of its algorithm's family only (an
// HMAC's two hashes, CMAC's chaining value, KMAC's sponges, TCP-MD5's
// hash), so that one kept per busy connection costs what its algorithm
// needs.
type Context struct {
	alg   *Algorithm
	key   *Key   // the keyed state Restart returns to
	own   *Key   // a re-keying context's (and SetKey's) template, made on first use
	e     engine // the family's working state and code
	rekey bool   // Start and Compute run the key schedule (NewRekeyContext)
	done  bool   // the message is finished: Finish repeats its MAC, Write refuses
	// *kmacEngine is e for KMAC (nil otherwise): ScheduleKMAC, which only
	// KMAC has, reaches it without an assertion.
	*kmacEngine
}

// engine is one MAC family's working state and code behind a Context.
// The registry (Algorithm.newEngine) picks it; its methods run with the
// Context's checks done: k is a Key of the algorithm, keyed.
type engine interface {
	// schedule keys k, wiped, with key, whose length the algorithm
	// takes, on the engine's own buffers, which it leaves cleared. It
	// leaves k unnumbered; KMAC's numbers it (its context caches by
	// number).
	schedule(k *Key, key []byte) error
	// start begins a message under k.
	start(k *Key)
	// write absorbs p into the message.
	write(k *Key, p []byte)
	// sum ends the message and appends its MAC to dst.
	sum(k *Key, dst []byte) []byte
	// summed returns the MAC of the message sum ended.
	summed(k *Key) []byte
	// compute is start, write and sum of the whole message msg.
	compute(k *Key, dst, msg []byte) []byte
	// wipe clears every key-derived byte of the working state.
	wipe()
}

// NewContext returns an unkeyed context of a that clones a Key's template
// at every Start. Call Start or SetKey before writing.
func (a *Algorithm) NewContext() *Context {
	if !a.valid() {
		return &Context{}
	}
	c := &Context{alg: a, e: a.newEngine()}
	c.kmacEngine, _ = c.e.(*kmacEngine)
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
	c.key, c.done = k, false
	c.e.start(k)
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
	c.done = false
	c.e.start(c.key)
}

// Write absorbs p into the message. It fails on a context without a key
// ([ErrNoKey]) and after Finish until the next Start or Restart
// ([ErrFinished]).
func (c *Context) Write(p []byte) (int, error) {
	if c == nil || c.key == nil {
		return 0, ErrNoKey
	}
	if c.done {
		return 0, ErrFinished
	}
	c.e.write(c.key, p)
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
	if c.done {
		return append(dst, c.e.summed(c.key)...)
	}
	c.done = true
	return c.e.sum(c.key, dst)
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
	c.key, c.done = k, true
	return c.e.compute(k, dst, msg), nil
}

// Schedule keys k for the context's algorithm with key, running the key
// schedule on the context's own hashes and buffers: with a context from
// a pool and a k keyed before for the algorithm, it allocates nothing
// (AES-CMAC aside: crypto/aes allocates its schedule). k must not be in
// use by a reader. A key the algorithm cannot take is [ErrKeySize].
func (c *Context) Schedule(k *Key, key []byte) error {
	if c == nil || c.alg == nil || k == nil {
		return ErrNoKey
	}
	if !c.alg.KeySizeOK(len(key)) {
		return fmt.Errorf("%w: %s does not take a %d-byte key", ErrKeySize, c.alg.name, len(key))
	}
	if err := c.schedule(k, key); err != nil {
		return err
	}
	k.gen = keyGen.Add(1)
	return nil
}

// schedule is Schedule for a key whose length the algorithm accepts,
// leaving k unnumbered (gen 0; KMAC's is numbered): a re-keying
// context's template, keyed per message.
func (c *Context) schedule(k *Key, key []byte) error {
	k.Wipe()
	c.key, c.done = nil, false // the context is used to schedule, not to MAC
	if err := c.e.schedule(k, key); err != nil {
		k.Wipe()
		return err
	}
	k.alg = c.alg
	return nil
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
	c.key, c.done = nil, false
	if c.e != nil {
		c.e.wipe()
	}
}
