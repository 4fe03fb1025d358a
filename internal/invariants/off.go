//go:build !invariants

package invariants

// Enabled is true when the binary was built with the invariants build
// tag. Expensive structural checks run only then.
const Enabled = false
