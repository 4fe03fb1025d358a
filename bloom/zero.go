package bloom

// The zero SyncCounting and SyncScalable wrap no filter: they behave as if
// they wrapped a zero Counting or Scalable. Readers see a shared empty
// filter that nothing writes; a writer, under the exclusive lock, gives
// the wrapper a zero filter of its own (one that Update can decode into).
var (
	zeroCounting Counting
	zeroScalable Scalable
)

// read returns the Counting s wraps, or an empty one; under either lock.
func (s *SyncCounting) read() *Counting {
	if s.mu.c == nil {
		return &zeroCounting
	}
	return s.mu.c
}

// write returns the Counting s wraps, first giving the zero SyncCounting
// a zero Counting of its own; under the exclusive lock.
func (s *SyncCounting) write() *Counting {
	if s.mu.c == nil {
		s.mu.c = new(Counting)
	}
	return s.mu.c
}

// read returns the Scalable w wraps, or an empty one; under either lock.
func (w *SyncScalable) read() *Scalable {
	if w.mu.s == nil {
		return &zeroScalable
	}
	return w.mu.s
}

// write returns the Scalable w wraps, first giving the zero SyncScalable a
// zero Scalable of its own; under the exclusive lock.
func (w *SyncScalable) write() *Scalable {
	if w.mu.s == nil {
		w.mu.s = new(Scalable)
	}
	return w.mu.s
}
