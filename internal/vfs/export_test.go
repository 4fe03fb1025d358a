package vfs

// FlockSupported says whether this system has flock(2), without which
// nothing is locked.
const FlockSupported = flockSupported
