package main

import (
	"math"
	"slices"
)

// rowInfo is what the report needs to know about a row; it is saved with
// the results so that a report can be redrawn without the adapters.
type rowInfo struct {
	Name    string  `json:"name"`
	Module  string  `json:"module"`
	Kind    string  `json:"kind"`
	Ours    bool    `json:"ours"`
	Target  float64 `json:"target"`
	Deletes bool    `json:"deletes"`
	Variant bool    `json:"variant,omitempty"` // another API on the structure of another row
}

func infoOf(s spec) rowInfo {
	return rowInfo{Name: s.name, Module: s.module, Kind: s.kind.String(), Ours: s.ours, Target: s.target, Deletes: s.deletes, Variant: s.variant}
}

// cell identifies one table cell group: a row at a size and key kind.
type cell struct {
	Row  string
	N    uint64
	Keys keyKind
}

// summary condenses the repetitions of one cell: medians for times,
// pooled counts for rates, worst cases for failures.
type summary struct {
	cell
	Reps                   int
	Add, Hit, Miss, Del    float64 // median ns/op; NaN: not measured
	Spread                 float64 // largest (max-min)/median of the four timings
	HeapBits, ReportedBits float64 // per item; NaN: not known
	FPR                    float64 // pooled over repetitions
	FalsePos, Probes       uint64
	FailedAdds, FalseNeg   uint64 // worst repetition
	FailedDeletes          uint64
	AddAllocs, HitAllocs   float64 // median
	Err                    string
}

// median returns the median of xs (the mean of the middle two for an even
// count), or NaN for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// spread is (max-min)/median of xs, 0 for fewer than two.
func spread(xs []float64) float64 {
	if len(xs) < 2 {
		return 0
	}
	m := median(xs)
	if m == 0 {
		return 0
	}
	return (slices.Max(xs) - slices.Min(xs)) / m
}

// summarize groups trials by cell.
func summarize(trials []trial) map[cell]*summary {
	groups := map[cell][]trial{}
	for _, t := range trials {
		c := cell{t.Row, t.N, t.Keys}
		groups[c] = append(groups[c], t)
	}
	out := map[cell]*summary{}
	for c, ts := range groups {
		s := &summary{cell: c}
		var add, hit, miss, del, heap, rep, aa, ha []float64
		for _, t := range ts {
			if t.Err != "" {
				s.Err = t.Err
				continue
			}
			s.Reps++
			add, hit, miss = append(add, t.AddNs), append(hit, t.HitNs), append(miss, t.MissNs)
			if t.DelNs > 0 {
				del = append(del, t.DelNs)
			}
			heap = append(heap, float64(t.HeapBytes)*8/float64(t.N))
			if t.ReportedBytes >= 0 {
				rep = append(rep, float64(t.ReportedBytes)*8/float64(t.N))
			}
			aa, ha = append(aa, t.AddAllocs), append(ha, t.HitAllocs)
			s.FalsePos += t.FalsePos
			s.Probes += t.Probes
			s.FailedAdds = max(s.FailedAdds, t.FailedAdds)
			s.FalseNeg = max(s.FalseNeg, t.FalseNeg)
			s.FailedDeletes = max(s.FailedDeletes, t.FailedDeletes)
		}
		s.Add, s.Hit, s.Miss, s.Del = median(add), median(hit), median(miss), median(del)
		s.Spread = max(spread(add), spread(hit), spread(miss), spread(del))
		s.HeapBits, s.ReportedBits = median(heap), median(rep)
		s.AddAllocs, s.HitAllocs = median(aa), median(ha)
		s.FPR = math.NaN()
		if s.Probes > 0 {
			s.FPR = float64(s.FalsePos) / float64(s.Probes)
		}
		out[c] = s
	}
	return out
}

// pairedRatio returns the median over repetitions of a's time over b's for
// one operation, pairing trials of the same repetition (run minutes apart
// at most, so they saw the same machine load), and the number of pairs.
func pairedRatio(trials []trial, a, b cell, op func(trial) float64) (float64, int) {
	byRep := map[int]float64{}
	for _, t := range trials {
		if t.Err == "" && t.Row == b.Row && t.N == b.N && t.Keys == b.Keys && op(t) > 0 {
			byRep[t.Rep] = op(t)
		}
	}
	var ratios []float64
	for _, t := range trials {
		if t.Err == "" && t.Row == a.Row && t.N == a.N && t.Keys == a.Keys && op(t) > 0 {
			if d, ok := byRep[t.Rep]; ok {
				ratios = append(ratios, op(t)/d)
			}
		}
	}
	return median(ratios), len(ratios)
}
