package guard

// Generations returns the names of the current, fresh and retired
// generations of a Shared set, as its process last read them.
func Generations(set Filter) (cur, next string, retired []string) {
	st := set.(*sharedSet).st.Load()
	if st == nil {
		return "", "", nil
	}
	for _, r := range st.p.Retired {
		retired = append(retired, r.Name)
	}
	return st.p.Cur, st.p.Next, retired
}
