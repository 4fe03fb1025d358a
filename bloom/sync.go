package bloom

import (
	"io"
	"sync"
)

// SyncCounting is a [Counting] filter that any number of goroutines may use
// at once: each method takes a read-write mutex, shared for lookups and
// exclusive for changes, so concurrent Contains calls proceed in parallel
// while Add and Delete take turns. Use View and Update for anything else.
//
// The zero SyncCounting behaves as one that wraps the zero [Counting]:
// lookups report nothing present, Add returns an error wrapping
// [ErrUninitialized], and Update can decode into it.
type SyncCounting struct {
	mu struct {
		sync.RWMutex
		c *Counting
	}
}

// NewSyncCounting returns a SyncCounting that owns c: the caller must not
// use c directly afterwards.
func NewSyncCounting(c *Counting) *SyncCounting {
	s := &SyncCounting{}
	s.mu.c = c
	return s
}

// Add is [Counting.Add] under the exclusive lock.
func (s *SyncCounting) Add(key []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.write().Add(key)
}

// AddString is [Counting.AddString] under the exclusive lock.
func (s *SyncCounting) AddString(key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.write().AddString(key)
}

// AddUnique is [Counting.AddUnique] under the exclusive lock: the test
// and the add are one step, so of several goroutines adding the same
// absent key exactly one gets true.
func (s *SyncCounting) AddUnique(key []byte) (added bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.write().AddUnique(key)
}

// AddUniqueString is [Counting.AddUniqueString] under the exclusive lock.
func (s *SyncCounting) AddUniqueString(key string) (added bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.write().AddUniqueString(key)
}

// Contains is [Counting.Contains] under the shared lock.
func (s *SyncCounting) Contains(key []byte) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.read().Contains(key)
}

// ContainsString is [Counting.ContainsString] under the shared lock.
func (s *SyncCounting) ContainsString(key string) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.read().ContainsString(key)
}

// Delete is [Counting.Delete] under the exclusive lock.
func (s *SyncCounting) Delete(key []byte) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.write().Delete(key)
}

// DeleteString is [Counting.DeleteString] under the exclusive lock.
func (s *SyncCounting) DeleteString(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.write().DeleteString(key)
}

// Len is [Counting.Len] under the shared lock.
func (s *SyncCounting) Len() uint64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.read().Len()
}

// WriteTo is [Counting.WriteTo] under the shared lock: a consistent
// snapshot, taken while lookups go on.
func (s *SyncCounting) WriteTo(w io.Writer) (int64, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.read().WriteTo(w)
}

// View calls fn with the filter under the shared lock. fn must only read
// it, and must not keep it after returning.
func (s *SyncCounting) View(fn func(c *Counting)) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	fn(s.read())
}

// Update calls fn with the filter under the exclusive lock, for any change
// the other methods do not cover (Union, Reset, ReadFrom …). fn must not
// keep the filter after returning.
func (s *SyncCounting) Update(fn func(c *Counting)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fn(s.write())
}

// SyncScalable is a [Scalable] filter that any number of goroutines may use
// at once, with the locking of [SyncCounting]: concurrent Contains calls
// proceed in parallel while Adds take turns.
//
// The zero SyncScalable behaves as one that wraps the zero [Scalable]:
// lookups report nothing present, the first Add sets it up, and Update
// can decode into it.
type SyncScalable struct {
	mu struct {
		sync.RWMutex
		s *Scalable
	}
}

// NewSyncScalable returns a SyncScalable that owns s: the caller must not
// use s directly afterwards.
func NewSyncScalable(s *Scalable) *SyncScalable {
	w := &SyncScalable{}
	w.mu.s = s
	return w
}

// Add is [Scalable.Add] under the exclusive lock.
func (w *SyncScalable) Add(key []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.write().Add(key)
}

// AddString is [Scalable.AddString] under the exclusive lock.
func (w *SyncScalable) AddString(key string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.write().AddString(key)
}

// AddUnique is [Scalable.AddUnique] under the exclusive lock: of
// several goroutines adding the same absent key, exactly one gets true.
func (w *SyncScalable) AddUnique(key []byte) (added bool, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.write().AddUnique(key)
}

// AddUniqueString is [Scalable.AddUniqueString] under the exclusive
// lock.
func (w *SyncScalable) AddUniqueString(key string) (added bool, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.write().AddUniqueString(key)
}

// Contains is [Scalable.Contains] under the shared lock.
func (w *SyncScalable) Contains(key []byte) bool {
	w.mu.RLock()
	defer w.mu.RUnlock()
	return w.read().Contains(key)
}

// ContainsString is [Scalable.ContainsString] under the shared lock.
func (w *SyncScalable) ContainsString(key string) bool {
	w.mu.RLock()
	defer w.mu.RUnlock()
	return w.read().ContainsString(key)
}

// Len is [Scalable.Len] under the shared lock.
func (w *SyncScalable) Len() uint64 {
	w.mu.RLock()
	defer w.mu.RUnlock()
	return w.read().Len()
}

// WriteTo is [Scalable.WriteTo] under the shared lock.
func (w *SyncScalable) WriteTo(wr io.Writer) (int64, error) {
	w.mu.RLock()
	defer w.mu.RUnlock()
	return w.read().WriteTo(wr)
}

// View calls fn with the filter under the shared lock. fn must only read
// it, and must not keep it after returning.
func (w *SyncScalable) View(fn func(s *Scalable)) {
	w.mu.RLock()
	defer w.mu.RUnlock()
	fn(w.read())
}

// Update calls fn with the filter under the exclusive lock, for any change
// the other methods do not cover (Reset, ReadFrom …). fn must not keep the
// filter after returning.
func (w *SyncScalable) Update(fn func(s *Scalable)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	fn(w.write())
}
