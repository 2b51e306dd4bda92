package ao

import "sync/atomic"

// ComputeSNE returns the sequence number extension of seq, given the SNE
// of a basis sequence number (for stacks and tools that track their own
// basis, e.g. snd_una and rcv_nxt as Linux does): RFC 5925 §6.2 as Linux computes it
// (tcp_ao_compute_sne): a seq "before" the basis in serial arithmetic but
// numerically larger is in the previous wrap, one "after" it but
// numerically smaller in the next. Valid within ±2^31 of the basis.
func ComputeSNE(sne, basis, seq uint32) uint32 {
	if before(seq, basis) {
		if seq > basis {
			sne--
		}
	} else if seq < basis {
		sne++
	}
	return sne
}

// before is Linux's before(): a precedes b in 32-bit serial arithmetic.
func before(a, b uint32) bool { return int32(a-b) < 0 }

// sneState is one direction's (SNE, basis) pair in one word, so readers
// always see a consistent pair without a lock (the pair Linux's proposed
// sne_lock protected).
type sneState struct{ v atomic.Uint64 }

func (s *sneState) load() (sne, basis uint32) {
	v := s.v.Load()
	return uint32(v >> 32), uint32(v)
}

func (s *sneState) store(sne, basis uint32) { s.v.Store(uint64(sne)<<32 | uint64(basis)) }

// of returns the SNE of seq.
func (s *sneState) of(seq uint32) uint32 {
	sne, basis := s.load()
	return ComputeSNE(sne, basis, seq)
}

// advance moves the basis to seq if seq is after it, carrying the SNE
// over a wrap; it never moves the basis backwards. Callers of one
// direction are serialised (a lane's lock): there is one writer.
func (s *sneState) advance(seq uint32) {
	sne, basis := s.load()
	if before(basis, seq) {
		s.store(ComputeSNE(sne, basis, seq), seq)
	}
}
