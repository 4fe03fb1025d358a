package cuckoo

// Hooks for the Window's black-box tests.

// CheckInvariants returns the first broken invariant, scanning the whole
// table.
func (w *Window) CheckInvariants() error {
	if w.t.NumBuckets() == 0 {
		return nil
	}
	return w.validate(true)
}

// IdentityForTest returns what tells the key's entry apart: its bucket
// pair (the lower bucket) and its fingerprint. Keys of one identity share
// one entry.
func (w *Window) IdentityForTest(h uint64) uint64 {
	i1, i2, fp := w.t.Pair(h)
	return min(i1, i2)<<32 | fp
}

// EpochForTest returns the epoch of the latest write, and the epoch
// length in ns.
func (w *Window) EpochForTest() (epoch, nanos int64) { return w.epoch, w.gran }

// SweepCursorForTest returns the next bucket the sweep empties.
func (w *Window) SweepCursorForTest() uint64 { return w.cursor }

// StampOffsetForTest is the bit offset of slot j of bucket i's stamp in
// the table, for tests that damage an encoding.
func (w *Window) StampOffsetForTest(i, j uint64) uint64 {
	return w.t.SlotOffset(i, j)
}

// SlotForTest returns the fingerprint and the stamp in slot j of bucket i.
func (w *Window) SlotForTest(i, j uint64) (fp, stamp uint64) {
	return w.t.Slot(i, j)
}
