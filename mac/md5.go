package mac

import (
	"encoding"
	"hash"
)

// md5Engine is TCP-MD5's keyed MD5 (RFC 2385 §2.0): MD5 over the segment
// bytes with the key appended. Its key has no schedule; the Key keeps
// its bytes.
type md5Engine struct {
	a       *Algorithm
	h       hash.Hash
	hA      encoding.BinaryAppender
	n       int  // message bytes written since start
	inState bool // the finished MAC is in st (padded finish), not tmp
	bufs
}

func newMD5Engine(a *Algorithm) *md5Engine {
	s := &md5Engine{a: a, h: a.newHash(), bufs: newBufs(a)}
	s.hA, _ = s.h.(encoding.BinaryAppender)
	return s
}

func (s *md5Engine) schedule(k *Key, key []byte) error {
	k.layout(0, 0, len(key))
	copy(k.raw(), key)
	return nil
}

func (s *md5Engine) start(*Key) {
	s.h.Reset()
	s.n = 0
}

func (s *md5Engine) write(_ *Key, p []byte) {
	s.h.Write(p)
	s.n += len(p)
}

// sum appends the key, then pads itself when the hash lets it
// (finish.go).
func (s *md5Engine) sum(k *Key, dst []byte) []byte {
	s.h.Write(k.raw())
	if s.a.lenSize > 0 {
		s.inState = true
		s.h.Write(s.a.appendPad(s.pad[:0], s.n+int(k.nraw)))
		return append(dst, s.a.digest(s.hA, s.st)...)
	}
	s.inState = false
	return append(dst, s.h.Sum(s.tmp[:0])...)
}

func (s *md5Engine) summed(*Key) []byte {
	if s.inState {
		return s.st[stateMagic : stateMagic+s.a.size]
	}
	return s.tmp[:s.a.size]
}

func (s *md5Engine) compute(k *Key, dst, msg []byte) []byte {
	s.start(k)
	s.write(k, msg)
	return s.sum(k, dst)
}

func (s *md5Engine) wipe() {
	s.bufs.clear()
	s.h.Reset()
	s.n, s.inState = 0, false
}
