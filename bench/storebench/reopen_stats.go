//go:build !oldstore

package main

import "github.com/dedupkit/cuckoo/store"

// replayed returns the records Open read from the log.
func replayed(s *store.Store) int64 { return int64(s.Stats().Replayed) }

// checkpoints returns the checkpoints written since Open.
func checkpoints(s *store.Store) int64 { return int64(s.Stats().Checkpoints) }

func checkpointsOff() store.Option { return store.WithCheckpoints(0, 0) }

// nearCheckpoint reports whether the next write or so starts a
// checkpoint: the records since the last are within 100 of the
// threshold of the default schedule.
func nearCheckpoint(s *store.Store) bool {
	st := s.Stats()
	due := max(store.DefaultCheckpointMin, uint64(store.DefaultCheckpointRatio*float64(st.Keys)))
	return st.SinceCheckpoint+100 >= due
}
