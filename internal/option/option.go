// Package option applies the functional options every filter package and
// the store take (cuckoo, bloom, redisfilter, store): each keeps its own
// Option type and config, and they all apply options the same way.
package option

// Apply calls each option on c in order, skipping nil ones, and returns
// the first error; the options after it are not applied.
func Apply[C any, O ~func(*C) error](c *C, opts []O) error {
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o(c); err != nil {
			return err
		}
	}
	return nil
}
