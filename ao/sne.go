package ao

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

// sneState is one direction's (SNE, basis) pair. It belongs to that
// direction's lane and is read and written under the lane's lock.
type sneState struct{ sne, basis uint32 }

func (s *sneState) load() (sne, basis uint32) { return s.sne, s.basis }

func (s *sneState) store(sne, basis uint32) { s.sne, s.basis = sne, basis }

// of returns the SNE of seq.
func (s *sneState) of(seq uint32) uint32 { return ComputeSNE(s.sne, s.basis, seq) }

// advance moves the basis to seq if seq is after it, carrying the SNE
// over a wrap; it never moves the basis backwards.
func (s *sneState) advance(seq uint32) {
	if before(s.basis, seq) {
		s.sne, s.basis = ComputeSNE(s.sne, s.basis, seq), seq
	}
}
