// Package docexamples holds only a test: it runs the shell examples of
// README.md and docs/*.md as written, so that they stay true (see its
// test file for how, and for the examples it leaves out and why).
package docexamples
