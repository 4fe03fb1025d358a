package main

import (
	"errors"
	"flag"
	"fmt"

	"github.com/dedupkit/cuckoo/cmd/cuckoo/internal/dedup"
	"github.com/dedupkit/cuckoo/cmd/cuckoo/internal/filterfile"
	"github.com/dedupkit/cuckoo/cmd/cuckoo/internal/units"
)

// fieldFlags are the flags that pick a key out of each line.
type fieldFlags struct {
	field     string
	delimiter string
	delimSet  bool
	csv       bool
}

func (f *fieldFlags) register(fs *flag.FlagSet) {
	fs.Var((*fieldSpecValue)(&f.field), "field", "use these fields of each line as the key: a field `spec` as cut -f (2, 1,3, 2-4, 3-)")
	fs.Func("delimiter", "field `delimiter` (default: runs of blanks; \\t for tab)", func(s string) error {
		switch d, err := dedup.ParseDelimiter(s); {
		case err != nil:
			return wantError(err.Error())
		case d == "":
			return wantError("want a delimiter; leave the flag out to split on runs of blanks")
		}
		f.delimiter, f.delimSet = s, true
		return nil
	})
	fs.BoolVar(&f.csv, "csv", false, "fields are CSV: double-quoted fields may hold the delimiter (default delimiter ,)")
}

// keyInputs checks the arguments of a command that reads a filter file
// (pos[0]) and keys, as the lines of KEYS-FILEs (pos[1:]) or as --key
// values, and returns the extractor of the key lines' --field (nil: whole
// lines).
func keyInputs(cmd string, pos []string, keys listValue, fields *fieldFlags) (*dedup.KeyExtractor, error) {
	remedy := "see 'cuckoo " + cmd + " --help'"
	if len(pos) == 0 {
		return nil, usageErr("usage: cuckoo "+cmd+" FILE [KEYS-FILE...]", "no filter file")
	}
	if len(keys) > 0 && len(pos) > 1 {
		return nil, usageErr(remedy, "--key and key files exclude each other")
	}
	keyer, err := fields.extractor(cmd, "field")
	if err != nil {
		return nil, err
	}
	if keyer != nil && len(keys) > 0 {
		return nil, usageErr(remedy, "--field applies to key lines, not to --key")
	}
	return keyer, nil
}

// extractor returns the key extractor the flags describe, or nil for
// whole lines. flagName is how the command calls the spec flag.
func (f *fieldFlags) extractor(cmd, flagName string) (*dedup.KeyExtractor, error) {
	remedy := "see 'cuckoo " + cmd + " --help'"
	if f.field == "" {
		if f.delimSet || f.csv {
			return nil, usageErr(remedy, "--delimiter and --csv need --%s", flagName)
		}
		return nil, nil
	}
	// Both were checked when the flags were set (fieldSpecValue and the
	// --delimiter function): these errors cannot happen.
	spec, err := dedup.ParseFieldSpec(f.field)
	if err != nil {
		return nil, usageErr(remedy, "bad --%s %q: %v", flagName, f.field, err)
	}
	delim, err := dedup.ParseDelimiter(f.delimiter)
	if err != nil {
		return nil, usageErr(remedy, "bad --delimiter: %v", err)
	}
	return dedup.NewKeyExtractor(spec, delim, f.csv), nil
}

// keyError is an error at one key of one input.
type keyError struct {
	input string // as displayName gives it
	line  uint64
	err   error
}

func (k *keyError) Error() string { return fmt.Sprintf("%s line %d: %v", k.input, k.line, k.err) }
func (k *keyError) Unwrap() error { return k.err }

// eachKey calls fn with the key of every line of the inputs and returns
// the number of lines read. The first error stops it, as a *keyError
// that says where.
func eachKey(e *env, ins []input, keyer *dedup.KeyExtractor, onRead func([]byte), fn func(key []byte) error) (uint64, error) {
	kr := dedup.NewKeyReader(keyer, 0)
	kr.OnRead(onRead)
	var lines uint64
	for i := range ins {
		r, closeIn, err := ins[i].open(e)
		if err != nil {
			return lines, err
		}
		kr.Reset(r)
		for {
			_, key, ok := kr.Next()
			if !ok {
				break
			}
			if err := fn(key); err != nil {
				closeIn()
				return lines + kr.Line() - 1, &keyError{input: ins[i].displayName(), line: kr.Line(), err: err}
			}
		}
		lines += kr.Line()
		err = kr.Err()
		closeIn()
		if err != nil {
			return lines, &keyError{input: ins[i].displayName(), line: kr.Line(), err: err}
		}
	}
	return lines, nil
}

// addKeys adds the key of every line of the inputs to filter (AddUnique
// when unique), and returns the number of lines read.
func addKeys(e *env, ins []input, keyer *dedup.KeyExtractor, filter *filterfile.Filter, onRead func([]byte), unique bool) (uint64, error) {
	return eachKey(e, ins, keyer, onRead, func(key []byte) error { return addOne(filter, key, unique) })
}

func addOne(filter *filterfile.Filter, key []byte, unique bool) error {
	if unique {
		_, err := filter.AddUnique(key)
		return err
	}
	return filter.Add(key)
}

// deleteKeys deletes one copy of the key of every line of the inputs, and
// returns the lines read and how many keys were not found.
func deleteKeys(e *env, ins []input, keyer *dedup.KeyExtractor, filter *filterfile.Filter, onRead func([]byte)) (lines, missing uint64, err error) {
	lines, err = eachKey(e, ins, keyer, onRead, func(key []byte) error {
		found, err := filter.Delete(key)
		if err == nil && !found {
			missing++
		}
		return err
	})
	return lines, missing, err
}

// keysError explains an error of addKeys or deleteKeys (or of keys given
// with --key) for cmd. The file was built by this run, or, when loaded is
// set, read from that file, which is left unchanged, holding held items.
// lines counts the keys to add, for the remedy of a full filter (called
// only then).
func keysError(err error, filter *filterfile.Filter, loaded string, held uint64, capacitySet bool, lines func() inputLines) error {
	var ke *keyError
	if !errors.As(err, &ke) {
		return err
	}
	if errors.Is(err, filterfile.ErrFull) {
		remedy := "nothing was written"
		switch {
		case loaded != "":
			grow := "--grow"
			if filter.Kind().IsBloom() {
				grow = "--bloom=scalable"
			}
			need := units.Count(held) + " plus the keys to add"
			if l := lines(); l.known {
				need = fmt.Sprintf("%s (the %s it holds and the %s to add)", units.Count(held+l.n),
					units.Counted(held, "item"), l.counted("key"))
			}
			remedy = fmt.Sprintf("%s is unchanged; rebuild it with room for the new keys: 'cuckoo build --capacity N' "+
				"with N at least %s, a larger --headroom (the default leaves %d %%), or %s for a file that grows",
				loaded, need, defaultHeadroom, grow)
		case capacitySet:
			n, why := lines().capacityFor(filter.Capacity(), filter.Len())
			remedy = fmt.Sprintf("give a larger --capacity (%d: %s), or leave it out to size the filter from the input; nothing was written", n, why)
		}
		return fullError(filter, ke.input, ke.line, "key", remedy)
	}
	if errors.Is(err, filterfile.ErrNoDelete) {
		return usageErr("build it with --bloom=counting, or use a cuckoo filter", "%s", ke.err)
	}
	written := "nothing was written"
	if loaded != "" {
		written = loaded + " is unchanged"
	}
	return dataErr(written, "reading %s: %v", ke.input, unwrap(ke.err))
}
