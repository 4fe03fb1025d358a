package redisfilter

import (
	"strconv"
	"sync"
)

// Key names. A filter named N lives in:
//
//	ckf:m:N                 cuckoo filter metadata (a string, see meta.go)
//	ckf:{TAG}:t:S:N         segment S's table (a string of packed buckets)
//	ckf:{TAG}:c:S:N         segment S's hash: id, n and duplicate counters
//	ckf:{TAG}:r:ID:N        the reply of write call ID on a segment of TAG,
//	                        kept for the retry window (retry.go)
//	ckb:m:N                 Bloom filter metadata
//	ckb:{TAG}:S:N           Bloom segment S's blocks
//	ckw:m:N                 window filter metadata
//	ckw:{TAG}:t:S:N         window segment S's table, then its epoch
//	ckw:{TAG}:c:S:N         window segment S's hash: id, sweep, stamp counts
//	ckw:{TAG}:r:ID:N        the reply of write call ID on a window segment
//
// TAG is a hash tag chosen for the slot the segment should live in (see
// segmentSlot), so a segment's keys share a slot and the segments spread over
// the slots evenly. Every part before N has a fixed form (ID is hex
// digits), so distinct (kind, segment or ID, name) triples give distinct
// keys whatever N holds. Frozen: the names are how an existing filter is
// found.
const (
	cuckooPrefix = "ckf:"
	bloomPrefix  = "ckb:"
)

func metaKey(prefix, name string) string { return prefix + "m:" + name }

// segmentKey returns the key of segment s of n of filter name, of the given
// kind ("t", "c", or "" for a Bloom segment).
func segmentKey(prefix, kind, name string, s, n int) string {
	b := make([]byte, 0, len(prefix)+len(name)+24)
	b = append(b, prefix...)
	b = append(b, '{')
	b = append(b, slotTag(segmentSlot(name, s, n))...)
	b = append(b, '}', ':')
	if kind != "" {
		b = append(b, kind...)
		b = append(b, ':')
	}
	b = strconv.AppendInt(b, int64(s), 10)
	b = append(b, ':')
	b = append(b, name...)
	return string(b)
}

// recordPrefix returns the start of the record keys of segment s of n of
// filter name, to which a call's request id, ':' and the name are added.
func recordPrefix(prefix, name string, s, n int) string {
	return prefix + "{" + slotTag(segmentSlot(name, s, n)) + "}:r:"
}

// numSlots is the number of hash slots of Redis Cluster.
const numSlots = 16384

// segmentSlot is the slot of segment s of a filter of n segments named name:
// the segments sit at equal distances around the 16384 slots, from an
// origin that the name chooses, so that each master of a cluster whose
// masters serve equal ranges of slots holds an equal share of the segments
// (within one), and different filters start at different masters.
func segmentSlot(name string, s, n int) int {
	origin := int(crc16([]byte(name)) % numSlots)
	return (origin + s*numSlots/n + numSlots/(2*n)) % numSlots
}

// slotTag returns the shortest decimal string (the first in 0, 1, 2, ...)
// whose CRC16 puts a key tagged with it in slot.
func slotTag(slot int) string {
	tagsOnce.Do(buildTags)
	return strconv.FormatUint(uint64(tags[slot]), 10)
}

var (
	tagsOnce sync.Once
	tags     [numSlots]uint32
)

func buildTags() {
	found := 0
	var seen [numSlots]bool
	var buf [12]byte
	for i := uint32(0); found < numSlots; i++ {
		s := crc16(strconv.AppendUint(buf[:0], uint64(i), 10)) % numSlots
		if !seen[s] {
			seen[s], tags[s] = true, i
			found++
		}
	}
}

// crc16 is CRC-16/XMODEM (polynomial 0x1021, initial 0, no reflection),
// which Redis Cluster uses to map a key to a slot: slot = crc16(key) mod
// 16384, key being the hash tag if the key has one.
func crc16(p []byte) uint16 {
	crc16Once.Do(func() {
		for i := range crc16Table {
			c := uint16(i) << 8
			for range 8 {
				if c&0x8000 != 0 {
					c = c<<1 ^ 0x1021
				} else {
					c <<= 1
				}
			}
			crc16Table[i] = c
		}
	})
	var c uint16
	for _, b := range p {
		c = c<<8 ^ crc16Table[byte(c>>8)^b]
	}
	return c
}

var (
	crc16Once  sync.Once
	crc16Table [256]uint16
)
