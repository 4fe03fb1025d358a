// Package guard puts a filter in front of a database, so that lookups of
// keys that do not exist are answered without asking it.
package guard
