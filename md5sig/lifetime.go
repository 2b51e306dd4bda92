package md5sig

import (
	"context"
	"math"
	"net/netip"
	"time"
)

// Keys with lifetimes (RFC 8177, keys.Lifetime) are applied on the
// keyring's clock, never per segment: Advance computes each key's state
// at the clock's now, and Run calls it at each boundary. Keys of one
// peer and binding that all have lifetimes stay side by side, as the
// peer's schedule: a segment from the peer verifies with any of them
// inside its accept lifetime, and a connection signs with the one its
// peer uses (see SignWith).

// SetClock makes now the keyring's clock (time.Now when nil): what Add
// and Advance read. Tests give a fake one, so that nothing sleeps.
func (r *Keyring) SetClock(now func() time.Time) {
	if r == nil {
		return
	}
	r.life.SetClock(&r.mu, now)
}

// Advance applies the keys' lifetimes at the clock's now and returns the
// next moment at which one begins or ends, the zero time without one.
func (r *Keyring) Advance() time.Time {
	if r == nil {
		return time.Time{}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.life.Timed == 0 {
		return time.Time{}
	}
	now := r.life.Clock.Now()
	next := int64(math.MaxInt64)
	r.keys.Range(func(_ netip.Prefix, _ uint32, k *Key) bool {
		if k.timed {
			k.off.Store(k.sched.Off(now))
			next = min(next, k.sched.Next(now))
		}
		return true
	})
	if next == math.MaxInt64 {
		return time.Time{}
	}
	return time.Unix(0, next)
}

// Run calls Advance now and at every moment it names, until ctx is done
// (then it returns ctx.Err());
// an Add or a Delete of a key with a lifetime makes it look again.
func (r *Keyring) Run(ctx context.Context) error {
	if r == nil || ctx == nil {
		return ErrNotInitialized
	}
	return r.life.Run(ctx, &r.mu, r.Advance)
}
