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

// SNE tracks one direction's sequence number extension (RFC 5925 §6.2):
// the SNE of a basis sequence number, which only moves forward. A Conn
// keeps one per direction; a tool that follows flows itself (a capture
// verifier) keeps its own. Its zero value is SNE 0 at sequence number 0.
type SNE struct{ sne, basis uint32 }

// NewSNE returns a tracker whose basis is seq, with SNE sne.
func NewSNE(sne, basis uint32) SNE { return SNE{sne, basis} }

// Basis returns the basis sequence number and its SNE.
func (s *SNE) Basis() (sne, basis uint32) { return s.sne, s.basis }

// Of returns the SNE of seq, within ±2^31 of the basis.
func (s *SNE) Of(seq uint32) uint32 { return ComputeSNE(s.sne, s.basis, seq) }

// Advance moves the basis to seq if seq is after it, carrying the SNE
// over a wrap; it never moves the basis backwards.
func (s *SNE) Advance(seq uint32) {
	if before(s.basis, seq) && !before(seq, s.basis) { // exactly 2^31 away is Of's previous wrap: no move
		s.sne, s.basis = ComputeSNE(s.sne, s.basis, seq), seq
	}
}
