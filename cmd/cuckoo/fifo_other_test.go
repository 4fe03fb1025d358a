//go:build !unix

package main

import "errors"

// mkfifo fails: there are no FIFOs here.
func mkfifo(string) error { return errors.New("no FIFOs on this system") }
