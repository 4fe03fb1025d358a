package server

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/dedupkit/cuckoo/server/resp"
)

// recover loads the data directory: the snapshot, then the records of the
// log files of its epoch and later, and opens the log for appending.
func (s *Server) recover() error {
	dir, start := s.cfg.Dir, time.Now()
	snapEpoch, when, snapSize, err := loadSnapshot(filepath.Join(dir, snapName), s.ks, ^uint64(0))
	if err != nil {
		return fmt.Errorf("%w %s: %s: %v; move the file aside to start without it (its keys would be lost)", ErrDataDir, dir, snapName, err)
	}
	if !when.IsZero() {
		s.save.last.Store(when.Unix())
		s.save.fileSize.Store(snapSize)
	}
	s.ks.epoch.Store(snapEpoch)
	keys := s.ks.count.Load()

	epochs, err := logFiles(dir)
	if err != nil {
		return fmt.Errorf("%w %s: %v", ErrDataDir, dir, err)
	}
	var replay []uint64
	for _, e := range epochs {
		if e >= snapEpoch {
			replay = append(replay, e)
		}
	}
	// Each snapshot begins a log file of its epoch, one more than the
	// last: the files to replay are those of the snapshot's epoch (when
	// there is a snapshot) and of every epoch after it, none missing. A
	// missing file lost writes that the files after it build on (a
	// CF.ADD replayed without the CF.RESERVE before it would make a
	// filter of other parameters): that is damage, not a torn end.
	if i, missing := missingLog(replay, snapEpoch, snapSize > 0); i >= 0 {
		if !s.cfg.Repair {
			return fmt.Errorf("%w %s: %s is missing, and %s holds writes that follow it; start with --repair to keep the log up to it (what follows it is lost)",
				ErrDataDir, dir, logName(missing), logName(replay[i]))
		}
		for _, later := range replay[i:] {
			os.Remove(filepath.Join(dir, logName(later)))
		}
		s.logf("repair: %s is missing; dropped the %s after it", logName(missing), plural(len(replay)-i, "later log file"))
		replay = replay[:i]
	}
	records := 0
	var c call
	w := resp.NewWriter(&s.replayOut, 0)
	for i, e := range replay {
		path := filepath.Join(dir, logName(e))
		last := i == len(replay)-1
		end, err := readLog(path, maxLogRecord, func(off int64, epoch uint64, args [][]byte) error {
			if epoch < snapEpoch {
				return nil // in the snapshot already
			}
			records++
			return s.replay(&c, w, args)
		})
		if err == nil {
			continue
		}
		size := fileSize(path)
		var damage *logDamage
		switch {
		case errors.Is(err, errTorn) && last:
			if terr := truncateLog(path, end); terr != nil {
				return fmt.Errorf("%w %s: cutting the torn end of %s: %v", ErrDataDir, dir, logName(e), terr)
			}
			s.logf("cut the torn end of %s at byte %d, %d bytes (%v): a write the crash interrupted, never acknowledged", logName(e), end, size-end, err)
		case s.cfg.Repair && (errors.As(err, &damage) || errors.Is(err, errTorn)):
			if terr := truncateLog(path, end); terr != nil {
				return fmt.Errorf("%w %s: repairing %s: %v", ErrDataDir, dir, logName(e), terr)
			}
			for _, later := range replay[i+1:] {
				os.Remove(filepath.Join(dir, logName(later)))
			}
			s.logf("repair: %v; cut %s at byte %d, dropping %d bytes and %d later log files", err, logName(e), end, size-end, len(replay)-i-1)
			replay = replay[:i+1]
		default:
			if errors.Is(err, errTorn) {
				err = &logDamage{logName(e), end, "a torn record, and later log files after it"}
			}
			return fmt.Errorf("%w %s: %v; start with --repair to keep the log up to that point (what follows it is lost)", ErrDataDir, dir, err)
		}
		break
	}
	current := snapEpoch
	if len(replay) > 0 {
		current = max(current, replay[len(replay)-1])
	}
	s.ks.epoch.Store(current)
	if s.cfg.AppendOnly {
		a, err := openAOF(dir, current, s.cfg.Sync)
		if err != nil {
			return fmt.Errorf("%w %s: %v", ErrDataDir, dir, err)
		}
		s.aof = a
	}
	if keys > 0 || records > 0 {
		s.logf("loaded %s from the snapshot and %s in %v: %s", plural(keys, "key"), plural(records, "log record"), time.Since(start).Round(time.Millisecond), plural(s.ks.count.Load(), "key"))
	}
	if !s.cfg.AppendOnly && len(replay) > 0 {
		// The log holds writes the snapshot lacks: keep them in a new
		// snapshot before the log files go.
		if err := s.snapshot(); err != nil {
			return fmt.Errorf("%w %s: saving the replayed log in a snapshot: %v", ErrDataDir, dir, err)
		}
	}
	return nil
}

// missingLog returns the index in replay (the epochs of the log files to
// replay, ascending) of the first file that follows a missing one, and the
// epoch of the missing file; -1 when none is missing. The first file is
// the snapshot's epoch's when there is a snapshot; without one (moved
// aside, see docs/server.md) the log may start at any epoch.
func missingLog(replay []uint64, snapEpoch uint64, snapshot bool) (int, uint64) {
	if len(replay) == 0 {
		return -1, 0
	}
	want := replay[0]
	if snapshot {
		want = snapEpoch
	}
	for i, e := range replay {
		if e != want {
			return i, want
		}
		want++
	}
	return -1, 0
}

// replay runs one logged command during recovery. A logged command
// succeeded when it ran, and the filters are deterministic, so an error
// now means the log and the data disagree.
func (s *Server) replay(c *call, w *resp.Writer, args [][]byte) error {
	cmd := lookupCommand(args[0])
	if cmd == nil || cmd.flags&flagWrite == 0 {
		return fmt.Errorf("%q is not a write command", args[0])
	}
	s.replayOut.Reset()
	s.exec(c, nil, w, args)
	w.Flush()
	if out := s.replayOut.Bytes(); len(out) > 0 && out[0] == '-' {
		return fmt.Errorf("replaying %s failed: %s", args[0], out[1:len(out)-2])
	}
	return nil
}

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// plural is n and noun, with an s unless n is 1: "1 key", "3 keys".
func plural[N int | int64 | uint64](n N, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
