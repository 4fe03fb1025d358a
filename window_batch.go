package cuckoo

import "github.com/dedupkit/cuckoo/internal/table"

// The batch methods of a Window work as a Filter's (table.Pipeline): keys are
// hashed and located a group at a time, the buckets of the next group are
// prefetched while the current one is worked on, and writes go in order,
// each key seeing the effect of the keys before it. A batch reads the clock
// once: its keys are added, and looked up, at one instant.

// pipelineOf returns the engine's pipeline over keys, or over hashes
// when keys is nil, in the Window's table.
func (w *Window) pipelineOf(keys [][]byte, hashes []uint64) table.Pipeline {
	return table.NewPipeline(w.t.Locator(), w.seed, keys, hashes)
}

// ContainsBatch sets found[i] to w.Contains(keys[i]) for every key, with
// one reading of the clock (when a fingerprint matches). It allocates
// nothing and may run concurrently with other readers. It panics if found
// is shorter than keys.
func (w *Window) ContainsBatch(keys [][]byte, found []bool) {
	if len(found) < len(keys) {
		panic("cuckoo: Window.ContainsBatch: found is shorter than keys")
	}
	w.containsBatch(keys, nil, found[:len(keys)])
}

// ContainsHashBatch is [Window.ContainsBatch] for keys' 64-bit hashes (see
// [Window.AddHash]).
func (w *Window) ContainsHashBatch(hashes []uint64, found []bool) {
	if len(found) < len(hashes) {
		panic("cuckoo: Window.ContainsHashBatch: found is shorter than hashes")
	}
	w.containsBatch(nil, hashes, found[:len(hashes)])
}

func (w *Window) containsBatch(keys [][]byte, hashes []uint64, found []bool) {
	if w.t.NumBuckets() == 0 || len(found) == 0 {
		clear(found)
		return
	}
	var clk lazyClock
	p := w.pipelineOf(keys, hashes)
	for cur, start, ok := p.Next(); ok; cur, start, ok = p.Next() {
		for k := range cur.N {
			found[start+k] = w.holdsYoung(cur.I1[k], cur.I2[k], cur.FP[k], &clk)
		}
	}
}

// AddBatch adds every key, in order, as Add would, at one reading of the
// clock. It stops at the first error ([ErrFull]) and returns how many keys
// it added before it; the key that failed and those after it are not
// added.
func (w *Window) AddBatch(keys [][]byte) (added int, err error) {
	return w.putBatch(keys, nil, nil, putRefresh, false)
}

// AddUniqueBatch is [Window.AddUnique] for every key, in order, at one
// reading of the clock: added[i] reports whether keys[i] was added (false
// when it, or an earlier key of the batch equal to it, was in the window).
// It returns how many keys it processed, which is len(keys) unless Add
// failed with [ErrFull] on keys[processed]; entries of added past that are
// left as they were. It panics if added is shorter than keys.
func (w *Window) AddUniqueBatch(keys [][]byte, added []bool) (processed int, err error) {
	if len(added) < len(keys) {
		panic("cuckoo: Window.AddUniqueBatch: added is shorter than keys")
	}
	return w.putBatch(keys, nil, added, putUnique, true)
}

// TouchBatch is [Window.Touch] for every key, in order, at one reading of
// the clock: seen[i] reports whether keys[i] was in the window (an earlier
// key of the batch equal to it counts). It returns how many keys it
// processed, as [Window.AddUniqueBatch] does. It panics if seen is shorter
// than keys.
func (w *Window) TouchBatch(keys [][]byte, seen []bool) (processed int, err error) {
	if len(seen) < len(keys) {
		panic("cuckoo: Window.TouchBatch: seen is shorter than keys")
	}
	return w.putBatch(keys, nil, seen, putRefresh, false)
}

// AddHashBatch is [Window.AddBatch] for keys' 64-bit hashes (see
// [Filter.AddHashBatch]): one reading of the clock, as AddBatch.
func (w *Window) AddHashBatch(hashes []uint64) (added int, err error) {
	return w.putBatch(nil, hashes, nil, putRefresh, false)
}

// AddUniqueHashBatch is [Window.AddUniqueBatch] for keys' 64-bit hashes
// (see [Filter.AddUniqueHashBatch]). It panics if added is shorter than
// hashes.
func (w *Window) AddUniqueHashBatch(hashes []uint64, added []bool) (processed int, err error) {
	if len(added) < len(hashes) {
		panic("cuckoo: Window.AddUniqueHashBatch: added is shorter than hashes")
	}
	return w.putBatch(nil, hashes, added, putUnique, true)
}

// TouchHashBatch is [Window.TouchBatch] for keys' 64-bit hashes (see
// [Window.AddHash]). It panics if seen is shorter than hashes.
func (w *Window) TouchHashBatch(hashes []uint64, seen []bool) (processed int, err error) {
	if len(seen) < len(hashes) {
		panic("cuckoo: Window.TouchHashBatch: seen is shorter than hashes")
	}
	return w.putBatch(nil, hashes, seen, putRefresh, false)
}

// putBatch puts keys (or, when keys is nil, hashes) in order with mode,
// recording in out (when not nil) whether each was seen, or added when
// unique.
func (w *Window) putBatch(keys [][]byte, hashes []uint64, out []bool, mode putMode, unique bool) (int, error) {
	n := len(keys)
	if keys == nil {
		n = len(hashes)
	}
	if n == 0 {
		return 0, nil
	}
	if w.t.NumBuckets() == 0 {
		return 0, errZeroWindow
	}
	ns := w.nanos()
	p := w.pipelineOf(keys, hashes)
	for cur, start, ok := p.Next(); ok; cur, start, ok = p.Next() {
		for k, h := range cur.H[:cur.N] {
			seen, err := w.put(h, ns, mode)
			if err != nil {
				return start + k, err
			}
			if out != nil {
				out[start+k] = seen != unique
			}
		}
	}
	return n, nil
}
