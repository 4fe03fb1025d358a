// Package vfs is the project's one layer of disk safety: the file
// system the store works in and the crash-testing file system its tests
// swap in, the lock that keeps two processes out of one directory or one
// file, the fsync of a directory, and the atomic replacement of a file.
// The store, the server and the command use it; nothing in the filters
// does I/O.
//
// # File systems
//
// [FS] is the small file system a store works in: [OS] is the operating
// system's, and [MemFS] is an in-memory one for tests that keeps, across
// a simulated crash, only what a real disk is sure to keep (the bytes up
// to each file's last sync, the names up to the directory's last sync),
// plus a random, possibly torn, part of the rest.
//
// # Locks
//
// [LockFile] takes the lock of a data directory (flock(2) on a file in
// it) without waiting: a second holder gets [ErrLocked]; [LockExisting]
// takes the same lock on a lock file that exists, opened for reading
// only, for a reader that changes nothing. [Acquire] takes
// the writers' lock of one file (on a lock file beside it), waiting its
// turn, so that two processes updating one file never lose each other's
// update. Both are released when their holder ends, however it ends.
// Where flock(2) does not exist, neither locks: one process at a time is
// then the user's to ensure.
//
// # Atomic replacement
//
// A file is replaced by writing a temporary file in the same directory,
// syncing it, renaming it over the target (rename is atomic on POSIX file
// systems) and syncing the directory, so that a reader, or the file
// system after a crash, finds either the old contents or the complete new
// ones, never a mix. [Replace] does it in any [FS]; [Create] and
// [WriteFile] do it in the operating system's, holding the writers' lock
// and keeping the old file's permission bits and symbolic links.
// A caller that replaces many files (an export of a tree) commits each
// without the syncs ([Replacement.CommitUnsynced]) and makes them durable
// together with [SyncWritten].
package vfs
