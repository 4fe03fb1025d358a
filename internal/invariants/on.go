//go:build invariants || race

package invariants

// Enabled is true when the binary was built with the invariants or race
// build tag. Expensive structural checks run only then.
const Enabled = true
