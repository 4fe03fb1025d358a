//go:build oldstore

package main

import "github.com/dedupkit/cuckoo/store"

// The older store does not say what Open replayed, and writes no
// checkpoint while it runs.

func replayed(*store.Store) int64    { return -1 }
func checkpoints(*store.Store) int64 { return -1 }
func checkpointsOff() store.Option {
	return func() store.Option { return store.WithSync(store.SyncEverySecond) }()
}
func nearCheckpoint(*store.Store) bool { return true }
