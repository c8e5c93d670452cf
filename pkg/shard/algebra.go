package shard

// Union is the set of hashes in s or o.
func (s Set) Union(o Set) Set {
	all := make([]Range, 0, len(s.ranges)+len(o.ranges))
	all = append(all, s.ranges...)
	all = append(all, o.ranges...)
	return Set{ranges: normalize(all)}
}

// Intersect is the set of hashes in both s and o.
func (s Set) Intersect(o Set) Set {
	var out []Range
	for i, j := 0, 0; i < len(s.ranges) && j < len(o.ranges); {
		a, b := s.ranges[i], o.ranges[j]
		if lo, hi := max(a.First, b.First), min(a.Last, b.Last); lo <= hi {
			out = append(out, Range{First: lo, Last: hi})
		}
		// The range that ends first cannot meet anything further along the other set.
		if a.Last < b.Last {
			i++
		} else {
			j++
		}
	}
	return Set{ranges: normalize(out)}
}

// Difference is the set of hashes in s and not in o.
func (s Set) Difference(o Set) Set {
	var out []Range
	j := 0 // o.ranges before j end before the current range of s
	for _, a := range s.ranges {
		for j < len(o.ranges) && o.ranges[j].Last < a.First {
			j++
		}
		next, covered := a.First, false // next is the lowest hash of a not yet kept or cut
		for k := j; k < len(o.ranges) && o.ranges[k].First <= a.Last; k++ {
			b := o.ranges[k]
			if b.First > next {
				out = append(out, Range{First: next, Last: b.First - 1})
			}
			if b.Last >= a.Last {
				covered = true
				break
			}
			next = b.Last + 1 // b.Last < a.Last, so no overflow
		}
		if !covered {
			out = append(out, Range{First: next, Last: a.Last})
		}
	}
	return Set{ranges: normalize(out)}
}

// Complement is the set of hashes not in s.
func (s Set) Complement() Set { return Full().Difference(s) }

// Overlaps reports whether s and o share a hash.
func (s Set) Overlaps(o Set) bool { return !s.Intersect(o).Empty() }

// ContainsSet reports whether every hash of o is in s.
func (s Set) ContainsSet(o Set) bool { return o.Difference(s).Empty() }
